"""Property-based cases: random small inputs, expected output from conformance.model.

Each example builds a pipeline over random keys, values and integer-second timestamps, runs it,
and compares values, timestamps and windows with what the model computes. Examples are
derandomized (the same inputs on every run) and not shrunk: each one is a whole pipeline run.
"""
import apache_beam as beam
import pytest
from apache_beam.transforms import window
from apache_beam.transforms.window import TimestampCombiner
from apache_beam.utils.timestamp import Timestamp
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from conformance import model
from conformance.api import GLOBAL, W, capability, check, el, sorted_groups

PROPERTY = settings(max_examples=8, deadline=None, derandomize=True, database=None,
                    phases=(Phase.explicit, Phase.generate),
                    suppress_health_check=[HealthCheck.function_scoped_fixture])

KEYS = st.sampled_from(["a", "b", "c", 1, 2])
# (key, value, timestamp in whole seconds). Timestamps from the epoch on: windows that end at or
# before the epoch have their own cases below (PRE_EPOCH).
ELEMENTS = st.lists(st.tuples(KEYS, st.integers(-50, 50), st.integers(0, 40)), min_size=1, max_size=12)
# Denser in time and keys, so that sessions overlap, touch and merge often.
DENSE = st.lists(st.tuples(st.sampled_from(["a", "b"]), st.integers(-50, 50), st.integers(0, 15)),
                 min_size=1, max_size=12)
PRE_EPOCH = st.lists(st.tuples(KEYS, st.integers(-50, 50), st.integers(-30, 3)), min_size=1, max_size=12)
COMBINERS = st.sampled_from([model.END_OF_WINDOW, model.EARLIEST, model.LATEST])
BEAM_COMBINERS = {
    model.END_OF_WINDOW: TimestampCombiner.OUTPUT_AT_EOW,
    model.EARLIEST: TimestampCombiner.OUTPUT_AT_EARLIEST,
    model.LATEST: TimestampCombiner.OUTPUT_AT_LATEST,
}
MS = 1000


def timestamped(p, elements, label="Input"):
    """A PCollection of (key, value) stamped with each element's timestamp (seconds)."""
    return (p | f"{label}/Create" >> beam.Create(elements)
              | f"{label}/Stamp" >> beam.Map(lambda e: window.TimestampedValue((e[0], e[1]), e[2])))


def model_input(elements, windowfn):
    """The same input in the model: timestamps in ms, assigned to windows by ``windowfn``."""
    return model.create((((k, v), t * MS) for k, v, t in elements), windowfn)


def _instant(ms):
    return Timestamp(micros=ms * 1000)


def expected(elems):
    """Model Elems as el(value, timestamp, window) expectations."""
    def window_of(w):
        return GLOBAL if isinstance(w, model.Global) else W(_instant(w.start), _instant(w.end))
    return [el(e.value, _instant(e.timestamp), window_of(e.window)) for e in elems]


@capability("gbk.fixed")
@pytest.mark.property
@PROPERTY
@given(elements=ELEMENTS, size=st.integers(1, 10), offset=st.integers(0, 12), combiner=COMBINERS)
def test_fixed_windows_group_by_key_matches_model(runner, elements, size, offset, combiner):
    # SEMANTICS 4: Fixed windows with offset; one group per key and window; timestamp combiners.
    p = runner.pipeline()
    out = (timestamped(p, elements)
           | beam.WindowInto(window.FixedWindows(size, offset), timestamp_combiner=BEAM_COMBINERS[combiner])
           | beam.GroupByKey() | sorted_groups())
    windowfn = model.FixedWindows(size * MS, offset * MS)
    check(out, expected(model.group_by_key(model_input(elements, windowfn), windowfn, combiner)))
    runner.run(p)


@capability("gbk.sliding")
@pytest.mark.property
@PROPERTY
@given(elements=ELEMENTS, size=st.integers(1, 10), period=st.integers(1, 6), offset=st.integers(0, 5),
       combiner=COMBINERS)
def test_sliding_windows_group_by_key_matches_model(runner, elements, size, period, offset, combiner):
    # SEMANTICS 4: every element in every sliding window containing it; EARLIEST is not shifted.
    p = runner.pipeline()
    out = (timestamped(p, elements)
           | beam.WindowInto(window.SlidingWindows(size, period, offset),
                             timestamp_combiner=BEAM_COMBINERS[combiner])
           | beam.GroupByKey() | sorted_groups())
    windowfn = model.SlidingWindows(size * MS, period * MS, offset * MS)
    check(out, expected(model.group_by_key(model_input(elements, windowfn), windowfn, combiner)))
    runner.run(p)


@capability("gbk.sessions")
@pytest.mark.property
@PROPERTY
@given(elements=DENSE, gap=st.integers(1, 6), combiner=COMBINERS)
def test_sessions_group_by_key_matches_model(runner, elements, gap, combiner):
    # SEMANTICS 4: per key, strictly overlapping sessions merge into their span; touching ones don't.
    p = runner.pipeline()
    out = (timestamped(p, elements)
           | beam.WindowInto(window.Sessions(gap), timestamp_combiner=BEAM_COMBINERS[combiner])
           | beam.GroupByKey() | sorted_groups())
    windowfn = model.Sessions(gap * MS)
    check(out, expected(model.group_by_key(model_input(elements, windowfn), windowfn, combiner)))
    runner.run(p)


@capability("gbk.global")
@pytest.mark.property
@PROPERTY
@given(elements=ELEMENTS, combiner=COMBINERS)
def test_global_window_group_by_key_matches_model(runner, elements, combiner):
    # SEMANTICS 4: one group per key in the global window; END_OF_WINDOW is the global window's end.
    p = runner.pipeline()
    out = (timestamped(p, elements)
           | beam.WindowInto(window.GlobalWindows(), timestamp_combiner=BEAM_COMBINERS[combiner])
           | beam.GroupByKey() | sorted_groups())
    windowfn = model.GlobalWindows()
    check(out, expected(model.group_by_key(model_input(elements, windowfn), windowfn, combiner)))
    runner.run(p)


@capability("combine.per_key")
@pytest.mark.property
@PROPERTY
@given(elements=ELEMENTS, size=st.integers(1, 10), combiner=COMBINERS)
def test_combine_per_key_matches_model(runner, elements, size, combiner):
    # CombinePerKey = GroupByKey + combine: same keys, windows and output timestamps as the group.
    p = runner.pipeline()
    out = (timestamped(p, elements)
           | beam.WindowInto(window.FixedWindows(size), timestamp_combiner=BEAM_COMBINERS[combiner])
           | beam.CombinePerKey(sum))
    windowfn = model.FixedWindows(size * MS)
    check(out, expected(model.combine_per_key(model_input(elements, windowfn), windowfn, sum, combiner)))
    runner.run(p)


@capability("flatten.basic")
@pytest.mark.property
@PROPERTY
@given(inputs=st.lists(ELEMENTS, min_size=1, max_size=3), size=st.integers(1, 10))
def test_flatten_is_multiset_union_matches_model(runner, inputs, size):
    # SEMANTICS 3: Flatten is the multiset union; every element keeps its timestamp and window.
    p = runner.pipeline()
    pcolls = [timestamped(p, elements, f"Input{i}") | f"Window{i}" >> beam.WindowInto(window.FixedWindows(size))
              for i, elements in enumerate(inputs)]
    out = tuple(pcolls) | beam.Flatten()
    windowfn = model.FixedWindows(size * MS)
    check(out, expected(model.flatten(*(model_input(elements, windowfn) for elements in inputs))))
    runner.run(p)


@capability("flatten.into_gbk")
@pytest.mark.property
@PROPERTY
@given(left=DENSE, right=DENSE, gap=st.integers(1, 6))
def test_flatten_then_sessions_merge_across_inputs(runner, left, right, gap):
    # Sessions merge over the flattened whole: windows from different inputs of one key merge too.
    p = runner.pipeline()
    sessions = window.Sessions(gap)
    flat = ((timestamped(p, left, "Left") | "WindowLeft" >> beam.WindowInto(sessions),
             timestamped(p, right, "Right") | "WindowRight" >> beam.WindowInto(sessions))
            | beam.Flatten())
    out = flat | beam.GroupByKey() | sorted_groups()
    windowfn = model.Sessions(gap * MS)
    both = model.flatten(model_input(left, windowfn), model_input(right, windowfn))
    check(out, expected(model.group_by_key(both, windowfn)))
    runner.run(p)


@capability("window.rewindow")
@pytest.mark.property
@PROPERTY
@given(elements=ELEMENTS, size=st.integers(2, 8), period=st.integers(1, 4), fixed=st.integers(1, 10))
def test_rewindow_sliding_into_fixed_matches_model(runner, elements, size, period, fixed):
    # Re-windowing reassigns each (element, window) copy by its timestamp: an element that was in
    # k sliding windows appears k times in its new fixed window.
    p = runner.pipeline()
    out = (timestamped(p, elements)
           | "Sliding" >> beam.WindowInto(window.SlidingWindows(size, period))
           | "Fixed" >> beam.WindowInto(window.FixedWindows(fixed))
           | beam.GroupByKey() | sorted_groups())
    sliding, fixed_fn = model.SlidingWindows(size * MS, period * MS), model.FixedWindows(fixed * MS)
    rewindowed = model.window_into(model_input(elements, sliding), fixed_fn)
    check(out, expected(model.group_by_key(rewindowed, fixed_fn)))
    runner.run(p)


@capability("window.rewindow")
@pytest.mark.property
@PROPERTY
@given(elements=ELEMENTS, first=st.integers(1, 10), second=st.integers(1, 10))
def test_regroup_fixed_groups_in_coarser_windows(runner, elements, first, second):
    # A first GroupByKey's outputs sit at their windows' end (END_OF_WINDOW); re-windowed, they are
    # grouped again by that timestamp.
    p = runner.pipeline()
    out = (timestamped(p, elements)
           | "First" >> beam.WindowInto(window.FixedWindows(first))
           | "Group1" >> beam.GroupByKey() | "Sum" >> beam.MapTuple(lambda k, vs: (k, sum(vs)))
           | "Second" >> beam.WindowInto(window.FixedWindows(second))
           | "Group2" >> beam.GroupByKey() | sorted_groups())
    fixed1, fixed2 = model.FixedWindows(first * MS), model.FixedWindows(second * MS)
    sums = model.combine_per_key(model_input(elements, fixed1), fixed1, sum)
    check(out, expected(model.group_by_key(model.window_into(sums, fixed2), fixed2)))
    runner.run(p)


# Windows ending at or before the epoch. Their max timestamp (end - 1 ms) is negative; it must
# stay 1 ms below the end, inside the window, exactly as for windows after the epoch.

@capability("gbk.fixed")
@pytest.mark.property
@PROPERTY
@given(elements=PRE_EPOCH, size=st.integers(1, 10), offset=st.integers(0, 12))
def test_fixed_windows_before_epoch_end_of_window_matches_model(runner, elements, size, offset):
    # SEMANTICS 1 and 4: the END_OF_WINDOW timestamp is end - 1 ms for negative ends too.
    p = runner.pipeline()
    out = (timestamped(p, elements)
           | beam.WindowInto(window.FixedWindows(size, offset))
           | beam.GroupByKey() | sorted_groups())
    windowfn = model.FixedWindows(size * MS, offset * MS)
    check(out, expected(model.group_by_key(model_input(elements, windowfn), windowfn)))
    runner.run(p)


@capability("window.rewindow")
@pytest.mark.property
@PROPERTY
@given(elements=PRE_EPOCH, first=st.integers(1, 10), second=st.integers(1, 10))
def test_regroup_before_epoch_stays_in_window(runner, elements, first, second):
    # A group's END_OF_WINDOW timestamp lies inside its window, so re-windowing by it selects the
    # window that contains end - 1 ms, never the next one, before the epoch too.
    p = runner.pipeline()
    out = (timestamped(p, elements)
           | "First" >> beam.WindowInto(window.FixedWindows(first))
           | "Group1" >> beam.GroupByKey() | "Sum" >> beam.MapTuple(lambda k, vs: (k, sum(vs)))
           | "Second" >> beam.WindowInto(window.FixedWindows(second))
           | "Group2" >> beam.GroupByKey() | sorted_groups())
    fixed1, fixed2 = model.FixedWindows(first * MS), model.FixedWindows(second * MS)
    sums = model.combine_per_key(model_input(elements, fixed1), fixed1, sum)
    check(out, expected(model.group_by_key(model.window_into(sums, fixed2), fixed2)))
    runner.run(p)
