"""Unit tests of the side windows a main window reads (runtime/sidewindows.py): the model's WindowFns
mapped from their payloads, against windows worked out by hand from the model (the side WindowFn
applied to the main window's max timestamp, of several windows the earliest); sessions and an
unknown WindowFn refused by name; a user's WindowFn mapped by Beam's SDK harness in this process,
whose answer wins where it is not the earliest window."""

from __future__ import annotations

import apache_beam as beam
import pytest
from apache_beam.coders import coders
from apache_beam.portability.api import beam_runner_api_pb2, standard_window_fns_pb2
from apache_beam.pvalue import AsList
from apache_beam.transforms import window
from apache_beam.utils.windowed_value import WindowedValue

from reference_runner.engine.windows import END_OF_GLOBAL_WINDOW
from reference_runner.graph import plan as planning
from reference_runner.graph import urns
from reference_runner.graph.front_end import REFERENCE
from reference_runner.runtime import sidewindows
from reference_runner.worker import window_mapping
from reference_runner.worker.codecs import Coders
from reference_runner.worker.embedded import EmbeddedWorker
from reference_runner.worker.state import StateService


class _Overlapping(window.NonMergingWindowFn):
    """Two windows of 20 s per element, [10k - 10, 10k + 10) and [10k, 10k + 20), the earliest
    first: Python's default window mapping (the last window assigned) picks the later one."""

    def assign(self, context):
        start = context.timestamp - context.timestamp % 10
        return [window.IntervalWindow(start - 10, start + 10), window.IntervalWindow(start, start + 20)]

    def get_window_coder(self):
        return coders.IntervalWindowCoder()


def _stage(side_windowfn, main_windowfn=None):
    """(components, the stage reading a side input in ``side_windowfn``, main in ``main_windowfn``)."""
    p = beam.Pipeline()
    main = p | "Main" >> beam.Create([1]) | "MainWindows" >> beam.WindowInto(main_windowfn or window.FixedWindows(10))
    side = p | "Side" >> beam.Create([1]) | "SideWindows" >> beam.WindowInto(side_windowfn)
    _ = main | "Read" >> beam.Map(lambda x, s: x, AsList(side))
    plan = planning.build_plan(p.to_runner_api(), REFERENCE)
    [stage] = [s for s in plan.stages if s.side_inputs]
    return plan.components, stage


def _needs(side_windowfn, main_windows, main_windowfn=None, sdk_mapper=None) -> list:
    """The (side window, its max timestamp) each main window (start, end in seconds) maps to, in
    order; an element per main window, or per list of main windows."""
    components, stage = _stage(side_windowfn, main_windowfn)
    runner_coders = Coders(components)
    needs = sidewindows.side_window_needs(components, runner_coders, stage.inputs[0], stage.side_inputs, sdk_mapper)
    main_impl = runner_coders.windowed(stage.inputs[0]).get_impl()
    side_coder = runner_coders.window_coder(stage.side_pcolls[0])
    out = []
    for w in main_windows:
        mains = [_window(m) for m in w] if isinstance(w, list) else [_window(w)]  # a list: one element in them all
        got = needs(main_impl.encode_nested(WindowedValue(1, mains[0].start, tuple(mains))))
        assert {pcoll for pcoll, _, _ in got} == {stage.side_pcolls[0]}
        out += [(side_coder.decode(encoded), max_timestamp) for _, encoded, max_timestamp in got]
    return out


def _window(w) -> window.BoundedWindow:
    return w if isinstance(w, window.BoundedWindow) else window.IntervalWindow(*w)


def _interval(start, end):
    """The side window [start, end) (seconds) and its max timestamp (micros) as the SDK has it."""
    return window.IntervalWindow(start, end), end * 1_000_000 - 1


def test_fixed_side_windows_hold_the_main_window_s_end():
    # Fixed(10, offset 3): windows [3 + 10k, 13 + 10k). Main [0,10) ends at 9.999999 s, in [3,13);
    # main [10,20) in [13,23); main [-20,-10) ends at -10.000001 s, in [-17,-7).
    assert _needs(window.FixedWindows(10, offset=3), [(0, 10), (10, 20), (-20, -10)]) == [
        _interval(3, 13),
        _interval(13, 23),
        _interval(-17, -7),
    ]


def test_fixed_side_windows_of_other_sizes_than_the_main_windows():
    # Fixed(60) side, Fixed(10) main: every main window up to 60 s reads [0,60); [60,70) reads [60,120).
    assert _needs(window.FixedWindows(60), [(0, 10), (50, 60), (60, 70)]) == [
        _interval(0, 60),
        _interval(0, 60),
        _interval(60, 120),
    ]


def test_sliding_side_window_is_the_earliest_holding_the_main_window_s_end():
    # Sliding(30, every 10): 9.999999 s is in [-20,10), [-10,20) and [0,30): the earliest is [-20,10);
    # 29.999999 s is in [0,30), [10,40), [20,50): [0,30).
    assert _needs(window.SlidingWindows(30, 10), [(0, 10), (20, 30)]) == [_interval(-20, 10), _interval(0, 30)]


def test_sliding_side_windows_with_an_offset():
    # Sliding(30, every 10, offset 5): windows start at 5 + 10k. 29.999999 s is in [5,35), [15,45)
    # and [25,55): [5,35). 4.999999 s is in [-25,5), [-15,15) and [-5,25): [-25,5).
    assert _needs(window.SlidingWindows(30, 10, offset=5), [(20, 30), (0, 5)], window.FixedWindows(5)) == [
        _interval(5, 35),
        _interval(-25, 5),
    ]


def test_sliding_side_windows_with_gaps_map_to_the_next_window():
    # Sliding(5, every 10): windows [10k, 10k + 5). Main [5,10) ends in the gap after [0,5): no
    # window holds it; as Java's SlidingWindows maps, the first window starting after its end
    # minus the size, [10,15). Main [0,5) ends in [0,5).
    assert _needs(window.SlidingWindows(5, 10), [(5, 10), (0, 5)], window.FixedWindows(5)) == [
        _interval(10, 15),
        _interval(0, 5),
    ]


def test_global_side_input_maps_every_main_window_to_the_global_window():
    end = END_OF_GLOBAL_WINDOW  # the model's, which Python's GlobalWindow.max_timestamp() is 1 µs short of
    assert _needs(window.GlobalWindows(), [(0, 10), (-1000, -990)]) == [(window.GlobalWindow(), end)] * 2
    assert _needs(window.GlobalWindows(), [window.GlobalWindow()], window.GlobalWindows()) == [
        (window.GlobalWindow(), end)
    ]


def test_an_element_in_several_main_windows_needs_the_side_window_of_each(monkeypatch):
    # (the memo of mapped main windows is cleared when full, here at two windows, and still
    # answers for a window it held before)
    monkeypatch.setattr(sidewindows, "_MEMO_LIMIT", 2)
    assert _needs(window.FixedWindows(20), [(0, 10), [(0, 10), (10, 20), (20, 30)]]) == [
        _interval(0, 20),
        _interval(0, 20),
        _interval(0, 20),
        _interval(20, 40),
    ]


def test_sessions_cannot_window_a_side_input():
    # Beam's SDKs refuse to build such a pipeline; one that arrives anyway is refused by name.
    components, stage = _stage(window.FixedWindows(10))
    components = beam_runner_api_pb2.Components.FromString(components.SerializeToString())
    [side] = stage.side_inputs
    fn = components.windowing_strategies[components.pcollections[side.pcoll].windowing_strategy_id].window_fn
    fn.urn = urns.SESSION_WINDOWS
    fn.payload = standard_window_fns_pb2.SessionWindowsPayload().SerializeToString()
    with pytest.raises(sidewindows.UnmappableSideInput, match=f"{side.pcoll}, windowed by sessions"):
        sidewindows.side_window_needs(components, Coders(components), stage.inputs[0], stage.side_inputs)


def test_a_user_window_fn_is_not_mapped_without_an_sdk():
    # The runner would have to unpickle the user's WindowFn: it refuses, naming the URN and PCollection.
    components, stage = _stage(_Overlapping())
    [side] = stage.side_inputs
    with pytest.raises(
        sidewindows.UnmappableSideInput,
        match=f"PCollection {side.pcoll}, windowed by {urns.PICKLED_PYTHON_WINDOW_FN}, a WindowFn the runner",
    ):
        sidewindows.side_window_needs(components, Coders(components), stage.inputs[0], stage.side_inputs)


def test_a_user_window_fn_is_mapped_by_the_sdk_whose_answer_wins():
    # _Overlapping gives 15 s the windows [0,20) and [10,30); the SDK maps main [10,20) (its end
    # 19.999999 s) to the later, [10,30), where the model's rule for sliding windows would pick [0,20).
    components, stage = _stage(_Overlapping())
    worker = EmbeddedWorker(StateService())
    mappers = []

    def sdk_mapper(side):
        mapper = window_mapping.WindowMapper(
            worker,
            f"sidewindows-test/{side.tag}",
            beam_runner_api_pb2.FunctionSpec.FromString(side.window_mapping_fn),
            Coders(components),
            stage.inputs[0],
            side.pcoll,
        )
        mappers.append(mapper)
        return mapper

    try:
        assert _needs(_Overlapping(), [(10, 20), (0, 10), (10, 20)], sdk_mapper=sdk_mapper) == [
            _interval(10, 30),
            _interval(0, 20),
            _interval(10, 30),
        ]
    finally:
        worker.stop()
    assert len(mappers) == 1


class _RefusingBeforeZero(window.NonMergingWindowFn):
    def assign(self, context):
        if context.timestamp < 0:
            raise ValueError(f"unit test refuses {context.timestamp}")
        return [window.IntervalWindow(0, 10)]

    def get_window_coder(self):
        return coders.IntervalWindowCoder()


def test_the_user_s_error_mapping_a_window_is_named():
    components, stage = _stage(_RefusingBeforeZero())
    [side] = stage.side_inputs
    worker = EmbeddedWorker(StateService())
    try:
        mapper = window_mapping.WindowMapper(
            worker,
            "sidewindows-test/refusing",
            beam_runner_api_pb2.FunctionSpec.FromString(side.window_mapping_fn),
            Coders(components),
            stage.inputs[0],
            side.pcoll,
        )
        assert mapper([window.IntervalWindow(0, 10)]) == [window.IntervalWindow(0, 10)]
        with pytest.raises(window_mapping.MapFailed, match=f"side input {side.pcoll} failed: .*unit test refuses"):
            mapper([window.IntervalWindow(-10, 0)])
    finally:
        worker.stop()
