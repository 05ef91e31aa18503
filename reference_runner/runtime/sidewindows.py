"""Side inputs kept per window and pane, the executor's half: what the engine's per-window readiness and
latest-pane bookkeeping (engine/sideinputs.py) needs to know about encoded elements, read with
the SDK's coders.

- pane_decoder: a side-input element -> (its encoded windows, its pane index, or None for the
  unknown pane of elements that did not come out of a GroupByKey, and for panes fired under
  another windowing than the side PCollection's: SideInput.own_panes).
- side_window_needs: a main-input element of a stage reading side inputs -> the side windows
  it maps to, as (side PCollection, encoded window, max timestamp in micros).
Windows are encoded with the side PCollection's window coder, the key the SDK's state
requests use, so the engine can compare them as bytes.

Mapping a main window to a side window (SEMANTICS 6): the model's WindowFns are mapped here from
their payloads, the side WindowFn applied to the main window's max timestamp (of several windows,
as sliding windows give, the earliest; a global side input maps to the global window). Any other
WindowFn is the user's, which the runner never builds: the SDK maps it (worker/window_mapping.py).
"""

from __future__ import annotations

from collections.abc import Callable

from apache_beam.coders.coder_impl import create_InputStream
from apache_beam.portability.api import beam_runner_api_pb2, standard_window_fns_pb2
from apache_beam.transforms import window as beam_window
from apache_beam.utils.timestamp import Timestamp
from apache_beam.utils.windowed_value import PaneInfoTiming

from reference_runner.graph import urns
from reference_runner.graph.plan import SideInput
from reference_runner.worker import codecs
from reference_runner.worker.codecs import Coders, proto_micros

_MEMO_LIMIT = 10_000  # main windows whose mapping is remembered (a long stream has many)
#: the window coder of each WindowFn mapped here (the windows built here are encoded with it)
_WINDOW_CODER = {
    urns.GLOBAL_WINDOWS: urns.GLOBAL_WINDOW_CODER,
    urns.FIXED_WINDOWS: urns.INTERVAL_WINDOW_CODER,
    urns.SLIDING_WINDOWS: urns.INTERVAL_WINDOW_CODER,
}

#: a side input's SDK mapping: (its SideInput) -> (main windows -> their side windows, in order)
SdkMapper = Callable[[SideInput], Callable[[list], list]]


class UnmappableSideInput(ValueError):
    """The runner cannot tell which window of a side input a main window reads."""


def pane_decoder(coders: Coders, pcoll_id: str, own_panes: bool) -> Callable[[bytes], tuple[list[bytes], int | None]]:
    wv_impl = coders.windowed(pcoll_id).get_impl()
    window_coder = coders.window_coder(pcoll_id)

    def decode(element: bytes) -> tuple[list[bytes], int | None]:
        wv = wv_impl.decode_from_stream(create_InputStream(element), True)
        pane = wv.pane_info
        index = None if not own_panes or pane.timing == PaneInfoTiming.UNKNOWN else pane.index
        return [window_coder.encode(w) for w in wv.windows], index

    return decode


def side_window_needs(
    components, coders: Coders, main_pcoll: str, side_inputs: list[SideInput], sdk_mapper: SdkMapper | None = None
) -> Callable[[bytes], list]:
    """``sdk_mapper``: how to ask an SDK worker, for a side input of a WindowFn not the model's;
    without one, such a side input is refused (UnmappableSideInput), as is one in sessions."""
    main_impl = coders.windowed(main_pcoll).get_impl()
    mappings = _mappings(components, coders, side_inputs, sdk_mapper)
    memo: dict = {}

    def needs(element: bytes) -> list:
        wv = main_impl.decode_from_stream(create_InputStream(element), True)
        new = list(dict.fromkeys(w for w in wv.windows if w not in memo))
        if new:
            if len(memo) + len(new) > _MEMO_LIMIT:
                memo.clear()
                new = list(dict.fromkeys(wv.windows))
            per_side = [(pcoll, mapping(new)) for pcoll, mapping in mappings]  # one SDK call per side for them all
            for i, w in enumerate(new):
                memo[w] = [(pcoll, *mapped[i]) for pcoll, mapped in per_side]
        out = []
        for w in wv.windows:
            out += memo[w]
        return out

    return needs


def _mappings(components, coders: Coders, side_inputs: list[SideInput], sdk_mapper: SdkMapper | None) -> list:
    """[(side PCollection, main windows -> [(encoded side window, its max timestamp)])], one per
    side PCollection of a model's WindowFn and one per distinct mapping fn of any other."""
    out, seen = [], set()
    for side in sorted(side_inputs, key=lambda s: (s.pcoll, s.transform_id, s.tag)):
        ws = components.windowing_strategies[components.pcollections[side.pcoll].windowing_strategy_id]
        window_coder = coders.window_coder(side.pcoll)
        native = _native(ws, side, components)
        key = (side.pcoll, b"" if native is not None else side.window_mapping_fn)
        if key in seen:
            continue
        seen.add(key)
        mapping = _sdk_mapping(ws, side, sdk_mapper) if native is None else _each(native)
        out.append((side.pcoll, _encoded(mapping, window_coder)))
    return out


def _each(native) -> Callable[[list], list]:
    return lambda windows: [native(w) for w in windows]


def _encoded(mapping: Callable[[list], list], window_coder) -> Callable[[list], list]:
    return lambda windows: [(window_coder.encode(s), codecs.max_timestamp(s)) for s in mapping(windows)]


def _native(ws: beam_runner_api_pb2.WindowingStrategy, side: SideInput, components):
    """main window -> side window, for a WindowFn of the model; None for any other."""
    fn = ws.window_fn
    if fn.urn in _WINDOW_CODER and components.coders[ws.window_coder_id].spec.urn != _WINDOW_CODER[fn.urn]:
        raise UnmappableSideInput(
            f"side input {side.tag} of {side.transform_id} reads PCollection {side.pcoll}, windowed by "
            f"{fn.urn} but with window coder {components.coders[ws.window_coder_id].spec.urn}, not the "
            f"model's {_WINDOW_CODER[fn.urn]}: the runner cannot encode the side windows as its SDK does"
        )
    if fn.urn == urns.GLOBAL_WINDOWS:
        global_window = beam_window.GlobalWindow()
        return lambda main: global_window
    if fn.urn == urns.FIXED_WINDOWS:
        fixed = standard_window_fns_pb2.FixedWindowsPayload.FromString(fn.payload)
        size, offset = proto_micros(fixed.size), proto_micros(fixed.offset)
        return lambda main: _interval(_fixed_start(codecs.max_timestamp(main), size, offset), size)
    if fn.urn == urns.SLIDING_WINDOWS:
        sliding = standard_window_fns_pb2.SlidingWindowsPayload.FromString(fn.payload)
        size, offset, period = proto_micros(sliding.size), proto_micros(sliding.offset), proto_micros(sliding.period)
        return lambda main: _interval(_earliest_sliding_start(codecs.max_timestamp(main), size, period, offset), size)
    if fn.urn == urns.SESSION_WINDOWS:
        # Sessions have no window mapping in the model: Beam's SDKs refuse them as side inputs
        # ("Sessions is not allowed in side inputs"), since a session is only known once merged.
        raise UnmappableSideInput(
            f"side input {side.tag} of {side.transform_id} reads PCollection {side.pcoll}, windowed "
            f"by sessions ({fn.urn}): the Beam model maps no main window to a session, so sessions "
            "cannot window a side input; window it otherwise before reading it"
        )
    return None


def _sdk_mapping(ws, side: SideInput, sdk_mapper: SdkMapper | None) -> Callable[[list], list]:
    urn = ws.window_fn.urn or "(no URN)"
    where = f"side input {side.tag} of {side.transform_id} reads PCollection {side.pcoll}, windowed by {urn}"
    if not beam_runner_api_pb2.FunctionSpec.FromString(side.window_mapping_fn).urn:
        raise UnmappableSideInput(
            f"{where}, a WindowFn the runner does not know, and the ParDo gives no window mapping fn "
            "for its SDK to map main windows with"
        )
    if sdk_mapper is None:
        raise UnmappableSideInput(
            f"{where}, a WindowFn the runner does not know: mapping main windows to its windows needs "
            "its SDK (beam:transform:map_windows:v1), which this backend does not call here"
        )
    return sdk_mapper(side)


def _fixed_start(timestamp: int, size: int, offset: int) -> int:
    """The start of the fixed window (micros) holding ``timestamp``."""
    return timestamp - (timestamp - offset) % size


def _earliest_sliding_start(timestamp: int, size: int, period: int, offset: int) -> int:
    """The start of the earliest sliding window (micros) holding ``timestamp``: the first start
    after ``timestamp - size`` (Java's SlidingWindows maps so too). Where periods leave gaps
    between windows, and no window holds the timestamp, that is the next window after it."""
    after = timestamp - size + 1
    return after + (offset - after) % period


def _interval(start: int, size: int) -> beam_window.IntervalWindow:
    return beam_window.IntervalWindow(Timestamp(micros=start), Timestamp(micros=start + size))
