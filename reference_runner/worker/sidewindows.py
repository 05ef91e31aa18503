"""Side inputs kept per window and pane, the executor's half: what the engine's per-window readiness and
latest-pane bookkeeping (engine/sideinputs.py) needs to know about encoded elements, read with
the SDK's coders and WindowFns.

- pane_decoder: a side-input element -> (its encoded windows, its pane index, or None for the
  unknown pane of elements that did not come out of a GroupByKey).
- side_window_needs: a main-input element of a stage reading side inputs -> the side windows
  it maps to (SEMANTICS 6: the side WindowFn assigns the main window's max timestamp; of
  several windows, e.g. sliding, the earliest; a global side input maps to the global
  window), as (side PCollection, encoded window, max timestamp in micros).
Windows are encoded with the side PCollection's window coder, the key the SDK's state
requests use, so the engine can compare them as bytes.
"""

from __future__ import annotations

from collections.abc import Callable

from apache_beam.coders.coder_impl import create_InputStream
from apache_beam.runners import pipeline_context
from apache_beam.transforms import window as beam_window
from apache_beam.utils.windowed_value import PaneInfoTiming

from reference_runner.worker.codecs import Coders

_MEMO_LIMIT = 10_000  # main windows whose mapping is remembered (a long stream has many)


def pane_decoder(coders: Coders, pcoll_id: str) -> Callable[[bytes], tuple[list[bytes], int | None]]:
    wv_impl = coders.windowed(pcoll_id).get_impl()
    window_coder = coders.window_coder(pcoll_id)

    def decode(element: bytes) -> tuple[list[bytes], int | None]:
        wv = wv_impl.decode_from_stream(create_InputStream(element), True)
        pane = wv.pane_info
        index = None if pane.timing == PaneInfoTiming.UNKNOWN else pane.index
        return [window_coder.encode(w) for w in wv.windows], index

    return decode


def side_window_needs(components, coders: Coders, main_pcoll: str, side_pcolls: list[str]) -> Callable[[bytes], list]:
    main_impl = coders.windowed(main_pcoll).get_impl()
    context = pipeline_context.PipelineContext(components)
    sides = []
    for pcoll in side_pcolls:
        ws_id = components.pcollections[pcoll].windowing_strategy_id
        sides.append((pcoll, context.windowing_strategies.get_by_id(ws_id).windowfn, coders.window_coder(pcoll)))
    memo: dict = {}

    def needs(element: bytes) -> list:
        wv = main_impl.decode_from_stream(create_InputStream(element), True)
        out = []
        for w in wv.windows:
            mapped = memo.get(w)
            if mapped is None:
                if len(memo) >= _MEMO_LIMIT:
                    memo.clear()
                mapped = memo[w] = [
                    (pcoll, window_coder.encode(side), side.max_timestamp().micros)
                    for pcoll, windowfn, window_coder in sides
                    for side in [_side_window(windowfn, w)]
                ]
            out += mapped
        return out

    return needs


def _side_window(windowfn, main_window) -> beam_window.BoundedWindow:
    if isinstance(windowfn, beam_window.GlobalWindows):
        return beam_window.GlobalWindow()
    assigned = list(windowfn.assign(beam_window.WindowFn.AssignContext(main_window.max_timestamp())))
    if all(hasattr(w, "start") for w in assigned):
        return min(assigned, key=lambda w: w.start)  # the earliest window containing the main window's end
    return assigned[-1]  # a custom window without a start: the SDK's own choice
