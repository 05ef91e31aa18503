"""Property-based cases: random inputs, expected output from conformance.model.

Each example runs one pipeline holding PARTS independent sub-pipelines, each over its own random
keys, values and integer-second timestamps (up to 60 elements), and compares every output's value,
timestamp, window and pane with what the model computes (a batch GroupByKey fires one ON_TIME pane
per key and window, first and last). Several parts per pipeline buy more examples for the cost
of one run. Examples are derandomized (the same inputs on every run) and not shrunk: each one is
a whole pipeline run.
"""

import apache_beam as beam
import pytest
from apache_beam.transforms import window
from apache_beam.transforms.window import TimestampCombiner
from apache_beam.utils.timestamp import Timestamp
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from conformance.api import GLOBAL, ON_TIME_ONLY, W, capability, check_all, el, property_examples, sorted_groups
from conformance.model import batch as model

PROPERTY = settings(
    max_examples=property_examples(),  # --property-examples
    deadline=None,
    derandomize=True,
    database=None,
    phases=(Phase.explicit, Phase.generate),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
PARTS = 2

KEYS = st.sampled_from(["a", "b", "c", 1, 2])
# (key, value, timestamp in whole seconds). Timestamps from the epoch on: windows that end at or
# before the epoch have their own cases below (PRE_EPOCH).
ELEMENTS = st.lists(st.tuples(KEYS, st.integers(-50, 50), st.integers(0, 40)), min_size=1, max_size=60)
# Denser in time and keys, so that sessions overlap, touch and merge often.
DENSE = st.lists(
    st.tuples(st.sampled_from(["a", "b"]), st.integers(-50, 50), st.integers(0, 15)), min_size=1, max_size=40
)
PRE_EPOCH = st.lists(st.tuples(KEYS, st.integers(-50, 50), st.integers(-30, 3)), min_size=1, max_size=60)
COMBINERS = st.sampled_from([model.END_OF_WINDOW, model.EARLIEST, model.LATEST])
BEAM_COMBINERS = {
    model.END_OF_WINDOW: TimestampCombiner.OUTPUT_AT_EOW,
    model.EARLIEST: TimestampCombiner.OUTPUT_AT_EARLIEST,
    model.LATEST: TimestampCombiner.OUTPUT_AT_LATEST,
}
MS = 1000


def parts(**strategies):
    """PARTS independent draws of the named strategies, each a dict."""
    return st.lists(st.fixed_dictionaries(strategies), min_size=PARTS, max_size=PARTS)


def timestamped(p, elements, label="Input"):
    """A PCollection of (key, value) stamped with each element's timestamp (seconds)."""
    return (
        p
        | f"{label}/Create" >> beam.Create(elements)
        | f"{label}/Stamp" >> beam.Map(lambda e: window.TimestampedValue((e[0], e[1]), e[2]))
    )


def model_input(elements, windowfn):
    """The same input in the model: timestamps in ms, assigned to windows by ``windowfn``."""
    return model.create((((k, v), t * MS) for k, v, t in elements), windowfn)


def _instant(ms):
    return Timestamp(micros=ms * 1000)


def expected(elems, grouped=True):
    """Model Elems as el(value, timestamp, window, pane) expectations: a GroupByKey's outputs are
    its single batch pane (ON_TIME_ONLY); elements no GroupByKey produced carry no pane field."""

    def window_of(w):
        return GLOBAL if isinstance(w, model.Global) else W(_instant(w.start), _instant(w.end))

    if grouped:
        return [el(e.value, _instant(e.timestamp), window_of(e.window), ON_TIME_ONLY) for e in elems]
    return [el(e.value, _instant(e.timestamp), window_of(e.window)) for e in elems]


def run_parts(runner, examples, build):
    """One pipeline; ``build(p, example, label)`` -> (output PCollection, expectation) per example."""
    p = runner.pipeline()
    check_all([build(p, example, f"Part{i}") for i, example in enumerate(examples)])
    runner.run(p)


@capability("gbk.fixed")
@pytest.mark.property
@PROPERTY
@given(examples=parts(elements=ELEMENTS, size=st.integers(1, 10), offset=st.integers(0, 12), combiner=COMBINERS))
def test_fixed_windows_group_by_key_matches_model(runner, examples):
    # SEMANTICS 4: Fixed windows with offset; one group per key and window; timestamp combiners.
    def build(p, x, label):
        out = (
            timestamped(p, x["elements"], label)
            | f"{label}/Window"
            >> beam.WindowInto(
                window.FixedWindows(x["size"], x["offset"]), timestamp_combiner=BEAM_COMBINERS[x["combiner"]]
            )
            | f"{label}/Group" >> beam.GroupByKey()
            | f"{label}/Sort" >> sorted_groups()
        )
        windowfn = model.FixedWindows(x["size"] * MS, x["offset"] * MS)
        return out, expected(model.group_by_key(model_input(x["elements"], windowfn), windowfn, x["combiner"]))

    run_parts(runner, examples, build)


@capability("gbk.sliding")
@pytest.mark.property
@PROPERTY
@given(
    examples=parts(
        elements=ELEMENTS,
        size=st.integers(1, 10),
        period=st.integers(1, 6),
        offset=st.integers(0, 5),
        combiner=COMBINERS,
    )
)
def test_sliding_windows_group_by_key_matches_model(runner, examples):
    # SEMANTICS 4: every element in every sliding window containing it; EARLIEST is not shifted.
    def build(p, x, label):
        out = (
            timestamped(p, x["elements"], label)
            | f"{label}/Window"
            >> beam.WindowInto(
                window.SlidingWindows(x["size"], x["period"], x["offset"]),
                timestamp_combiner=BEAM_COMBINERS[x["combiner"]],
            )
            | f"{label}/Group" >> beam.GroupByKey()
            | f"{label}/Sort" >> sorted_groups()
        )
        windowfn = model.SlidingWindows(x["size"] * MS, x["period"] * MS, x["offset"] * MS)
        return out, expected(model.group_by_key(model_input(x["elements"], windowfn), windowfn, x["combiner"]))

    run_parts(runner, examples, build)


@capability("gbk.sessions")
@pytest.mark.property
@PROPERTY
@given(examples=parts(elements=DENSE, gap=st.integers(1, 6), combiner=COMBINERS))
def test_sessions_group_by_key_matches_model(runner, examples):
    # SEMANTICS 4: per key, strictly overlapping sessions merge into their span; touching ones don't.
    def build(p, x, label):
        out = (
            timestamped(p, x["elements"], label)
            | f"{label}/Window"
            >> beam.WindowInto(window.Sessions(x["gap"]), timestamp_combiner=BEAM_COMBINERS[x["combiner"]])
            | f"{label}/Group" >> beam.GroupByKey()
            | f"{label}/Sort" >> sorted_groups()
        )
        windowfn = model.Sessions(x["gap"] * MS)
        return out, expected(model.group_by_key(model_input(x["elements"], windowfn), windowfn, x["combiner"]))

    run_parts(runner, examples, build)


@capability("gbk.global")
@pytest.mark.property
@PROPERTY
@given(examples=parts(elements=ELEMENTS, combiner=COMBINERS))
def test_global_window_group_by_key_matches_model(runner, examples):
    # SEMANTICS 4: one group per key in the global window; END_OF_WINDOW is the global window's end.
    def build(p, x, label):
        out = (
            timestamped(p, x["elements"], label)
            | f"{label}/Window"
            >> beam.WindowInto(window.GlobalWindows(), timestamp_combiner=BEAM_COMBINERS[x["combiner"]])
            | f"{label}/Group" >> beam.GroupByKey()
            | f"{label}/Sort" >> sorted_groups()
        )
        windowfn = model.GlobalWindows()
        return out, expected(model.group_by_key(model_input(x["elements"], windowfn), windowfn, x["combiner"]))

    run_parts(runner, examples, build)


@capability("combine.per_key")
@pytest.mark.property
@PROPERTY
@given(examples=parts(elements=ELEMENTS, size=st.integers(1, 10), combiner=COMBINERS))
def test_combine_per_key_matches_model(runner, examples):
    # CombinePerKey = GroupByKey + combine: same keys, windows, output timestamps and pane as the group.
    # (SEMANTICS 4 and 8)
    def build(p, x, label):
        out = (
            timestamped(p, x["elements"], label)
            | f"{label}/Window"
            >> beam.WindowInto(window.FixedWindows(x["size"]), timestamp_combiner=BEAM_COMBINERS[x["combiner"]])
            | f"{label}/Sum" >> beam.CombinePerKey(sum)
        )
        windowfn = model.FixedWindows(x["size"] * MS)
        return out, expected(model.combine_per_key(model_input(x["elements"], windowfn), windowfn, sum, x["combiner"]))

    run_parts(runner, examples, build)


@capability("flatten.basic")
@pytest.mark.property
@PROPERTY
@given(examples=parts(inputs=st.lists(ELEMENTS, min_size=1, max_size=3), size=st.integers(1, 10)))
def test_flatten_is_multiset_union_matches_model(runner, examples):
    # SEMANTICS 3: Flatten is the multiset union; every element keeps its timestamp and window.
    def build(p, x, label):
        pcolls = [
            timestamped(p, elements, f"{label}/Input{i}")
            | f"{label}/Window{i}" >> beam.WindowInto(window.FixedWindows(x["size"]))
            for i, elements in enumerate(x["inputs"])
        ]
        out = tuple(pcolls) | f"{label}/Flatten" >> beam.Flatten()
        windowfn = model.FixedWindows(x["size"] * MS)
        union = model.flatten(*(model_input(elements, windowfn) for elements in x["inputs"]))
        return out, expected(union, grouped=False)

    run_parts(runner, examples, build)


@capability("flatten.into_gbk")
@pytest.mark.property
@PROPERTY
@given(examples=parts(left=DENSE, right=DENSE, gap=st.integers(1, 6)))
def test_flatten_then_sessions_merge_across_inputs(runner, examples):
    # Sessions merge over the flattened whole: windows from different inputs of one key merge too (SEMANTICS 3 and 4).
    def build(p, x, label):
        sessions = window.Sessions(x["gap"])
        flat = (
            timestamped(p, x["left"], f"{label}/Left") | f"{label}/WindowLeft" >> beam.WindowInto(sessions),
            timestamped(p, x["right"], f"{label}/Right") | f"{label}/WindowRight" >> beam.WindowInto(sessions),
        ) | f"{label}/Flatten" >> beam.Flatten()
        out = flat | f"{label}/Group" >> beam.GroupByKey() | f"{label}/Sort" >> sorted_groups()
        windowfn = model.Sessions(x["gap"] * MS)
        both = model.flatten(model_input(x["left"], windowfn), model_input(x["right"], windowfn))
        return out, expected(model.group_by_key(both, windowfn))

    run_parts(runner, examples, build)


@capability("window.rewindow")
@pytest.mark.property
@PROPERTY
@given(examples=parts(elements=ELEMENTS, size=st.integers(2, 8), period=st.integers(1, 4), fixed=st.integers(1, 10)))
def test_rewindow_sliding_into_fixed_matches_model(runner, examples):
    # Re-windowing reassigns each (element, window) copy by its timestamp: an element that was in
    # k sliding windows appears k times in its new fixed window (SEMANTICS 4).
    def build(p, x, label):
        out = (
            timestamped(p, x["elements"], label)
            | f"{label}/Sliding" >> beam.WindowInto(window.SlidingWindows(x["size"], x["period"]))
            | f"{label}/Fixed" >> beam.WindowInto(window.FixedWindows(x["fixed"]))
            | f"{label}/Group" >> beam.GroupByKey()
            | f"{label}/Sort" >> sorted_groups()
        )
        sliding = model.SlidingWindows(x["size"] * MS, x["period"] * MS)
        fixed_fn = model.FixedWindows(x["fixed"] * MS)
        rewindowed = model.window_into(model_input(x["elements"], sliding), fixed_fn)
        return out, expected(model.group_by_key(rewindowed, fixed_fn))

    run_parts(runner, examples, build)


def _regroup(p, x, label):
    """Group in Fixed(first), sum, re-window into Fixed(second), group again: output and model."""
    out = (
        timestamped(p, x["elements"], label)
        | f"{label}/First" >> beam.WindowInto(window.FixedWindows(x["first"]))
        | f"{label}/Group1" >> beam.GroupByKey()
        | f"{label}/Sum" >> beam.MapTuple(lambda k, vs: (k, sum(vs)))
        | f"{label}/Second" >> beam.WindowInto(window.FixedWindows(x["second"]))
        | f"{label}/Group2" >> beam.GroupByKey()
        | f"{label}/Sort" >> sorted_groups()
    )
    fixed1, fixed2 = model.FixedWindows(x["first"] * MS), model.FixedWindows(x["second"] * MS)
    sums = model.combine_per_key(model_input(x["elements"], fixed1), fixed1, sum)
    return out, expected(model.group_by_key(model.window_into(sums, fixed2), fixed2))


@capability("window.rewindow")
@pytest.mark.property
@PROPERTY
@given(examples=parts(elements=ELEMENTS, first=st.integers(1, 10), second=st.integers(1, 10)))
def test_regroup_fixed_groups_in_coarser_windows(runner, examples):
    # A first GroupByKey's outputs sit at their windows' end (END_OF_WINDOW); re-windowed, they are
    # grouped again by that timestamp (SEMANTICS 4).
    run_parts(runner, examples, _regroup)


# Windows ending at or before the epoch. Their max timestamp (end - 1 ms) is negative; it must
# stay 1 ms below the end, inside the window, exactly as for windows after the epoch.


@capability("gbk.fixed")
@pytest.mark.property
@PROPERTY
@given(examples=parts(elements=PRE_EPOCH, size=st.integers(1, 10), offset=st.integers(0, 12)))
def test_fixed_windows_before_epoch_end_of_window_matches_model(runner, examples):
    # SEMANTICS 1 and 4: the END_OF_WINDOW timestamp is end - 1 ms for negative ends too.
    def build(p, x, label):
        out = (
            timestamped(p, x["elements"], label)
            | f"{label}/Window" >> beam.WindowInto(window.FixedWindows(x["size"], x["offset"]))
            | f"{label}/Group" >> beam.GroupByKey()
            | f"{label}/Sort" >> sorted_groups()
        )
        windowfn = model.FixedWindows(x["size"] * MS, x["offset"] * MS)
        return out, expected(model.group_by_key(model_input(x["elements"], windowfn), windowfn))

    run_parts(runner, examples, build)


@capability("window.rewindow")
@pytest.mark.property
@PROPERTY
@given(examples=parts(elements=PRE_EPOCH, first=st.integers(1, 10), second=st.integers(1, 10)))
def test_regroup_before_epoch_stays_in_window(runner, examples):
    # A group's END_OF_WINDOW timestamp lies inside its window, so re-windowing by it selects the
    # window that contains end - 1 ms, never the next one, before the epoch too (SEMANTICS 1 and 4).
    run_parts(runner, examples, _regroup)
