"""Combine: globally, per key, lifted, with side inputs, lifecycle and timestamp combiners
(conformance/SEMANTICS.md, sections 4 and 8)."""

import math

import apache_beam as beam
from apache_beam.transforms import combiners, window
from apache_beam.transforms.window import TimestampCombiner

from conformance.api import (
    END_OF_GLOBAL_WINDOW,
    GLOBAL,
    ON_TIME_ONLY,
    W,
    capability,
    check,
    created,
    el,
    grouped,
    satisfies,
    sorted_groups,
    stamped_by_value,
)


class MinMaxCount(beam.CombineFn):
    """(min, max, count) of numbers; the accumulator is a tuple, so merging must be done right."""

    def create_accumulator(self):
        return (None, None, 0)

    def add_input(self, acc, x):
        lo, hi, n = acc
        return (x if lo is None else min(lo, x), x if hi is None else max(hi, x), n + 1)

    def merge_accumulators(self, accs):
        lo = hi = None
        n = 0
        for a_lo, a_hi, a_n in accs:
            if a_n:
                lo = a_lo if lo is None else min(lo, a_lo)
                hi = a_hi if hi is None else max(hi, a_hi)
                n += a_n
        return (lo, hi, n)

    def extract_output(self, acc):
        return acc


# --------------------------------------------------------------------------- globally


@capability("combine.globally")
def test_globally_sum_mean_count(runner):
    # CombineGlobally reduces the whole (global-window) input to one value (SEMANTICS 8).
    p = runner.pipeline()
    nums = p | beam.Create([1, 2, 3, 4, 10])
    check(nums | "Sum" >> beam.CombineGlobally(sum), created([20]), label="sum")
    check(nums | "Mean" >> beam.CombineGlobally(combiners.MeanCombineFn()), created([4.0]), label="mean")
    check(nums | "Count" >> combiners.Count.Globally(), created([5]), label="count")
    runner.run(p)


@capability("combine.globally")
def test_globally_on_empty_input_yields_default(runner):
    # In the global window an empty input yields the CombineFn's default: 0 for sum and count, NaN for mean.
    # (SEMANTICS 8)
    p = runner.pipeline()
    nums = p | beam.Create([]).with_output_types(int)
    check(nums | "Sum" >> beam.CombineGlobally(sum), created([0]), label="sum")
    check(nums | "Count" >> combiners.Count.Globally(), created([0]), label="count")
    check(nums | "ToList" >> combiners.ToList(), created([[]]), label="to_list")
    check(
        nums | "Mean" >> beam.CombineGlobally(combiners.MeanCombineFn()),
        satisfies(lambda rs: len(rs) == 1 and math.isnan(rs[0].value), "exactly one NaN"),
        label="mean",
    )
    runner.run(p)


@capability("combine.globally")
def test_globally_without_defaults_on_empty_input_yields_nothing(runner):
    # without_defaults(): an empty input produces no output at all (SEMANTICS 8).
    p = runner.pipeline()
    nums = p | beam.Create([]).with_output_types(int)
    check(nums | beam.CombineGlobally(sum).without_defaults(), [])
    runner.run(p)


@capability("combine.globally")
def test_globally_custom_combine_fn(runner):
    # A CombineFn with a tuple accumulator combines globally to (min, max, count): SEMANTICS 8.
    p = runner.pipeline()
    out = p | beam.Create([5, -3, 12, 7, 0, 12]) | beam.CombineGlobally(MinMaxCount())
    check(out, created([(-3, 12, 6)]))
    runner.run(p)


@capability("combine.globally")
def test_globally_in_fixed_windows_without_defaults(runner):
    # SEMANTICS 4: a windowed CombineGlobally(...).without_defaults() gives one value per non-empty window,
    # stamped at the window's end (END_OF_WINDOW).
    p = runner.pipeline()
    out = (
        p
        | beam.Create([(None, t) for t in (1, 2, 3, 10, 11, 25)])
        | stamped_by_value()
        | beam.Map(lambda kv: kv[1])
        | beam.WindowInto(window.FixedWindows(10))
        | beam.CombineGlobally(sum).without_defaults()
    )
    check(
        out,
        [
            el(6, 9.999, W(0, 10), ON_TIME_ONLY),
            el(21, 19.999, W(10, 20), ON_TIME_ONLY),
            el(25, 29.999, W(20, 30), ON_TIME_ONLY),
        ],
    )
    runner.run(p)


# --------------------------------------------------------------------------- per key


@capability("combine.per_key")
def test_per_key_builtins(runner):
    # CombinePerKey with built-in callables and CombineFns gives one result per key (SEMANTICS 8).
    p = runner.pipeline()
    kvs = p | beam.Create([("a", 3), ("b", 10), ("a", -1), ("a", 4), ("b", 20)])
    check(kvs | "Sum" >> beam.CombinePerKey(sum), grouped([("a", 6), ("b", 30)]), label="sum")
    check(kvs | "Min" >> beam.CombinePerKey(min), grouped([("a", -1), ("b", 10)]), label="min")
    check(kvs | "Max" >> beam.CombinePerKey(max), grouped([("a", 4), ("b", 20)]), label="max")
    check(
        kvs | "Mean" >> beam.CombinePerKey(combiners.MeanCombineFn()), grouped([("a", 2.0), ("b", 15.0)]), label="mean"
    )
    check(kvs | "Count" >> combiners.Count.PerKey(), grouped([("a", 3), ("b", 2)]), label="count")
    check(kvs | "Top2" >> combiners.Top.LargestPerKey(2), grouped([("a", [4, 3]), ("b", [20, 10])]), label="top")
    runner.run(p)


@capability("combine.per_key")
def test_per_key_custom_combine_fn(runner):
    # A custom CombineFn (create/add/merge/extract) per key; results in the global window at its end, one pane.
    # (SEMANTICS 8)
    p = runner.pipeline()
    data = [("a", 5), ("b", 1), ("a", -2), ("a", 9), ("c", 0)] + [("b", i) for i in range(2, 50)]
    out = p | beam.Create(data) | beam.CombinePerKey(MinMaxCount())
    check(
        out,
        [
            el(("a", (-2, 9, 3)), END_OF_GLOBAL_WINDOW, GLOBAL, ON_TIME_ONLY),
            el(("b", (1, 49, 49)), END_OF_GLOBAL_WINDOW, GLOBAL, ON_TIME_ONLY),
            el(("c", (0, 0, 1)), END_OF_GLOBAL_WINDOW, GLOBAL, ON_TIME_ONLY),
        ],
    )
    runner.run(p)


@capability("combine.per_key")
def test_per_key_to_list_keeps_every_value(runner):
    # ToList per key keeps duplicates and every value of the key (SEMANTICS 8).
    p = runner.pipeline()
    out = (
        p
        | beam.Create([("a", 1), ("a", 1), ("b", 2), ("a", 3)])
        | beam.CombinePerKey(combiners.ToListCombineFn())
        | sorted_groups()
    )
    check(out, grouped([("a", [1, 1, 3]), ("b", [2])]))
    runner.run(p)


@capability("combine.per_key")
def test_combine_values_after_gbk(runner):
    # CombineValues over GroupByKey output combines each key's iterable (SEMANTICS 8).
    p = runner.pipeline()
    out = p | beam.Create([("a", 1), ("b", 2), ("a", 3)]) | beam.GroupByKey() | beam.CombineValues(MinMaxCount())
    check(out, grouped([("a", (1, 3, 2)), ("b", (2, 2, 1))]))
    runner.run(p)


# --------------------------------------------------------------------------- lifted


class ListAccumulatingSum(beam.CombineFn):
    """Sums through a mutable list accumulator: wrong if partial accumulators are dropped or merged twice."""

    def create_accumulator(self):
        return []

    def add_input(self, acc, x):
        acc.append(x)
        return acc

    def merge_accumulators(self, accs):
        merged = []
        for a in accs:
            merged.extend(a)
        return merged

    def compact(self, acc):
        return [sum(acc)] if acc else []

    def extract_output(self, acc):
        return (sum(acc), len(acc) > 0)


@capability("combine.lifted")
def test_lifted_combine_in_fixed_windows(runner):
    # A lifted (partially pre-combined) CombinePerKey in Fixed windows is exact per key and window,
    # stamped at the window end (SEMANTICS 4 and 8).
    p = runner.pipeline()
    data = [(f"k{i % 3}", i) for i in range(300)]
    out = (
        p
        | beam.Create(data)
        | beam.Map(lambda kv: window.TimestampedValue(kv, kv[1] / 10.0))
        | beam.WindowInto(window.FixedWindows(10))
        | beam.CombinePerKey(sum)
    )
    expected = {}
    for k, i in data:
        start = (i // 100) * 10
        expected[(k, start)] = expected.get((k, start), 0) + i
    check(out, [el((k, s), start + 9.999, W(start, start + 10), ON_TIME_ONLY) for (k, start), s in expected.items()])
    runner.run(p)


@capability("combine.lifted")
def test_lifted_combine_with_mutable_accumulator(runner):
    # A CombineFn with a mutable accumulator, merge_accumulators and compact gives the exact result
    # whichever way the runner splits the work (SEMANTICS 8).
    p = runner.pipeline()
    data = [(f"k{i % 4}", i) for i in range(2000)]
    out = p | beam.Create(data) | beam.Reshuffle() | beam.CombinePerKey(ListAccumulatingSum())
    check(out, grouped([(f"k{r}", (sum(i for i in range(2000) if i % 4 == r), True)) for r in range(4)]))
    runner.run(p)


@capability("combine.lifted")
def test_lifted_combine_keys_by_encoded_bytes(runner):
    # SEMANTICS 8: CombinePerKey groups like GroupByKey, by encoded key: 1, 1.0 and True stay three keys
    # even where a runner pre-combines.
    p = runner.pipeline()
    data = [(1, 10), (1.0, 20), (True, 30), (1, 1), (1.0, 2), (True, 3)]
    out = p | beam.Create(data) | beam.CombinePerKey(sum) | beam.MapTuple(lambda k, s: (type(k).__name__, s))
    check(out, grouped([("int", 11), ("float", 22), ("bool", 33)]))
    runner.run(p)


@capability("combine.lifted")
def test_lifted_combine_in_sessions(runner):
    # SEMANTICS 4: a lifted combine in merging Sessions windows combines across merged windows exactly.
    p = runner.pipeline()
    data = [("foo", 1), ("foo", 4), ("bar", 3), ("foo", 9), ("foo", 11)]
    out = p | beam.Create(data) | stamped_by_value() | beam.WindowInto(window.Sessions(4)) | beam.CombinePerKey(sum)
    check(
        out,
        [
            el(("foo", 5), 7.999, W(1, 8), ON_TIME_ONLY),
            el(("bar", 3), 6.999, W(3, 7), ON_TIME_ONLY),
            el(("foo", 20), 14.999, W(9, 15), ON_TIME_ONLY),
        ],
    )
    runner.run(p)


# --------------------------------------------------------------------------- side inputs


class SumPlusOffset(beam.CombineFn):
    """Sum of inputs plus an offset given as a side input to every method."""

    def create_accumulator(self, offset):
        return 0

    def add_input(self, acc, x, offset):
        return acc + x

    def merge_accumulators(self, accs, offset):
        return sum(accs)

    def extract_output(self, acc, offset):
        return acc + offset


class ScaledSum(beam.CombineFn):
    """Sum of inputs each multiplied by a side-input factor inside add_input."""

    def create_accumulator(self, factor):
        return 0

    def add_input(self, acc, x, factor):
        return acc + x * factor

    def merge_accumulators(self, accs, factor):
        return sum(accs)

    def extract_output(self, acc, factor):
        return acc


@capability("combine.side_inputs")
def test_combine_per_key_with_singleton_side_input(runner):
    # A CombineFn receives a side input (AsSingleton) as an extra argument (SEMANTICS 6 and 8).
    p = runner.pipeline()
    offset = p | "Offset" >> beam.Create([100])
    out = (
        p
        | beam.Create([("a", 1), ("a", 2), ("b", 5)])
        | beam.CombinePerKey(SumPlusOffset(), beam.pvalue.AsSingleton(offset))
    )
    check(out, grouped([("a", 103), ("b", 105)]))
    runner.run(p)


@capability("combine.side_inputs")
def test_combine_globally_with_singleton_side_input(runner):
    # CombineGlobally with a side-input argument used while adding inputs (SEMANTICS 6 and 8).
    p = runner.pipeline()
    factor = p | "Factor" >> beam.Create([3])
    out = p | beam.Create([1, 2, 4]) | beam.CombineGlobally(ScaledSum(), beam.pvalue.AsSingleton(factor))
    check(out, created([21]))
    runner.run(p)


@capability("combine.side_inputs")
def test_combine_side_input_computed_from_data(runner):
    # The side input may itself be a combine over the pipeline's data (here the global count; SEMANTICS 6 and 8).
    p = runner.pipeline()
    kvs = p | beam.Create([("a", 1), ("a", 2), ("b", 5), ("c", 0)])
    total = kvs | "Count" >> combiners.Count.Globally()
    out = kvs | "PerKey" >> beam.CombinePerKey(SumPlusOffset(), beam.pvalue.AsSingleton(total))
    check(out, grouped([("a", 7), ("b", 9), ("c", 4)]))
    runner.run(p)


# --------------------------------------------------------------------------- lifecycle


class SetupCheckingSum(beam.CombineFn):
    """A sum that refuses to work unless setup() ran first and teardown() has not run yet."""

    def __init__(self):
        self._ready = False
        self._torn_down = False

    def setup(self, *args, **kwargs):
        self._ready = True
        self._torn_down = False

    def _require_setup(self, where):
        if not self._ready:
            raise RuntimeError(f"CombineFn.{where} called before setup()")
        if self._torn_down:
            raise RuntimeError(f"CombineFn.{where} called after teardown()")

    def create_accumulator(self, *args, **kwargs):
        self._require_setup("create_accumulator")
        return 0

    def add_input(self, acc, x, *args, **kwargs):
        self._require_setup("add_input")
        return acc + x

    def merge_accumulators(self, accs, *args, **kwargs):
        self._require_setup("merge_accumulators")
        return sum(accs)

    def extract_output(self, acc, *args, **kwargs):
        self._require_setup("extract_output")
        return acc

    def teardown(self, *args, **kwargs):
        self._torn_down = True


@capability("combine.lifecycle")
def test_setup_called_before_use_per_key(runner):
    # A CombineFn's setup() runs before any of its methods (here every method fails without it; SEMANTICS 8).
    p = runner.pipeline()
    out = p | beam.Create([("a", 1), ("a", 2), ("b", 3)]) | beam.CombinePerKey(SetupCheckingSum())
    check(out, grouped([("a", 3), ("b", 3)]))
    runner.run(p)


@capability("combine.lifecycle")
def test_setup_called_before_use_globally(runner):
    # setup() also precedes use in CombineGlobally, including the default for empty input (SEMANTICS 8).
    p = runner.pipeline()
    check(
        p | "Full" >> beam.Create([4, 5]) | "SumFull" >> beam.CombineGlobally(SetupCheckingSum()),
        created([9]),
        label="non_empty",
    )
    check(
        p | "Empty" >> beam.Create([]).with_output_types(int) | "SumEmpty" >> beam.CombineGlobally(SetupCheckingSum()),
        created([0]),
        label="empty",
    )
    runner.run(p)


@capability("combine.lifecycle")
def test_setup_called_before_use_in_combine_values_and_windows(runner):
    # setup() precedes use in CombineValues and in a windowed CombinePerKey (SEMANTICS 4 and 8).
    p = runner.pipeline()
    kvs = p | beam.Create([("a", 1), ("a", 12), ("b", 3)]) | stamped_by_value()
    combined = kvs | "GBK" >> beam.GroupByKey() | "Values" >> beam.CombineValues(SetupCheckingSum())
    windowed = kvs | beam.WindowInto(window.FixedWindows(10)) | "PerKey" >> beam.CombinePerKey(SetupCheckingSum())
    check(combined, grouped([("a", 13), ("b", 3)]), label="combine_values")
    check(windowed, grouped([("a", 1), ("b", 3)], W(0, 10)) + grouped([("a", 12)], W(10, 20)), label="windowed")
    runner.run(p)


# --------------------------------------------------------------------------- timestamp combiners

_TRANSCRIPT = [("k", t) for t in (1, 2, 3, 10, 11, 25)]


def _combine_with(p, combiner):
    return (
        p
        | beam.Create(_TRANSCRIPT)
        | stamped_by_value()
        | beam.WindowInto(window.FixedWindows(10), timestamp_combiner=combiner)
        | beam.CombinePerKey(sum)
    )


def _group_with(p, combiner):
    return (
        p
        | beam.Create(_TRANSCRIPT)
        | stamped_by_value()
        | beam.WindowInto(window.FixedWindows(10), timestamp_combiner=combiner)
        | beam.GroupByKey()
        | sorted_groups()
    )


@capability("combine.timestamp_combiners")
def test_combine_end_of_window_timestamps(runner):
    # SEMANTICS 4 transcript: 1,2,3,10,11,25 in Fixed(10) with END_OF_WINDOW -> 9, 19, 29 (window max timestamps).
    p = runner.pipeline()
    check(
        _combine_with(p, TimestampCombiner.OUTPUT_AT_EOW),
        [
            el(("k", 6), 9.999, W(0, 10), ON_TIME_ONLY),
            el(("k", 21), 19.999, W(10, 20), ON_TIME_ONLY),
            el(("k", 25), 29.999, W(20, 30), ON_TIME_ONLY),
        ],
    )
    runner.run(p)


@capability("combine.timestamp_combiners")
def test_combine_earliest_timestamps(runner):
    # SEMANTICS 4 transcript: EARLIEST -> 1, 10, 25 (minimum input timestamp per window).
    p = runner.pipeline()
    check(
        _combine_with(p, TimestampCombiner.OUTPUT_AT_EARLIEST),
        [
            el(("k", 6), 1, W(0, 10), ON_TIME_ONLY),
            el(("k", 21), 10, W(10, 20), ON_TIME_ONLY),
            el(("k", 25), 25, W(20, 30), ON_TIME_ONLY),
        ],
    )
    runner.run(p)


@capability("combine.timestamp_combiners")
def test_combine_latest_timestamps(runner):
    # SEMANTICS 4 transcript: LATEST -> 3, 11, 25 (maximum input timestamp per window).
    p = runner.pipeline()
    check(
        _combine_with(p, TimestampCombiner.OUTPUT_AT_LATEST),
        [
            el(("k", 6), 3, W(0, 10), ON_TIME_ONLY),
            el(("k", 21), 11, W(10, 20), ON_TIME_ONLY),
            el(("k", 25), 25, W(20, 30), ON_TIME_ONLY),
        ],
    )
    runner.run(p)


@capability("combine.timestamp_combiners")
def test_gbk_end_of_window_timestamps(runner):
    # SEMANTICS 4 transcript via GroupByKey: END_OF_WINDOW -> 9, 19, 29.
    p = runner.pipeline()
    check(
        _group_with(p, TimestampCombiner.OUTPUT_AT_EOW),
        [
            el(("k", [1, 2, 3]), 9.999, W(0, 10), ON_TIME_ONLY),
            el(("k", [10, 11]), 19.999, W(10, 20), ON_TIME_ONLY),
            el(("k", [25]), 29.999, W(20, 30), ON_TIME_ONLY),
        ],
    )
    runner.run(p)


@capability("combine.timestamp_combiners")
def test_gbk_earliest_timestamps(runner):
    # SEMANTICS 4 transcript via GroupByKey: EARLIEST -> 1, 10, 25.
    p = runner.pipeline()
    check(
        _group_with(p, TimestampCombiner.OUTPUT_AT_EARLIEST),
        [
            el(("k", [1, 2, 3]), 1, W(0, 10), ON_TIME_ONLY),
            el(("k", [10, 11]), 10, W(10, 20), ON_TIME_ONLY),
            el(("k", [25]), 25, W(20, 30), ON_TIME_ONLY),
        ],
    )
    runner.run(p)


@capability("combine.timestamp_combiners")
def test_gbk_latest_timestamps(runner):
    # SEMANTICS 4 transcript via GroupByKey: LATEST -> 3, 11, 25.
    p = runner.pipeline()
    check(
        _group_with(p, TimestampCombiner.OUTPUT_AT_LATEST),
        [
            el(("k", [1, 2, 3]), 3, W(0, 10), ON_TIME_ONLY),
            el(("k", [10, 11]), 11, W(10, 20), ON_TIME_ONLY),
            el(("k", [25]), 25, W(20, 30), ON_TIME_ONLY),
        ],
    )
    runner.run(p)


@capability("combine.timestamp_combiners")
def test_earliest_in_sliding_windows_is_not_shifted(runner):
    # SEMANTICS 4: sliding-window timestamp shifting is gone; EARLIEST is the plain minimum in every window.
    p = runner.pipeline()
    out = (
        p
        | beam.Create([("k", 1), ("k", 4), ("k", 3)])
        | stamped_by_value()
        | beam.WindowInto(window.SlidingWindows(5, 3), timestamp_combiner=TimestampCombiner.OUTPUT_AT_EARLIEST)
        | beam.GroupByKey()
        | sorted_groups()
    )
    check(
        out,
        [
            el(("k", [1]), 1, W(-3, 2), ON_TIME_ONLY),
            el(("k", [1, 3, 4]), 1, W(0, 5), ON_TIME_ONLY),
            el(("k", [3, 4]), 3, W(3, 8), ON_TIME_ONLY),
        ],
    )
    runner.run(p)


@capability("combine.timestamp_combiners")
def test_latest_in_merged_sessions(runner):
    # SEMANTICS 4: in a merged session LATEST is the maximum over all merged inputs, EARLIEST the minimum.
    p = runner.pipeline()
    data = [("k", 1), ("k", 4), ("k", 6), ("k", 20)]
    base = p | beam.Create(data) | stamped_by_value()
    latest = (
        base
        | "Latest" >> beam.WindowInto(window.Sessions(4), timestamp_combiner=TimestampCombiner.OUTPUT_AT_LATEST)
        | "SumLatest" >> beam.CombinePerKey(sum)
    )
    earliest = (
        base
        | "Earliest" >> beam.WindowInto(window.Sessions(4), timestamp_combiner=TimestampCombiner.OUTPUT_AT_EARLIEST)
        | "GroupEarliest" >> beam.GroupByKey()
        | sorted_groups()
    )
    check(
        latest, [el(("k", 11), 6, W(1, 10), ON_TIME_ONLY), el(("k", 20), 20, W(20, 24), ON_TIME_ONLY)], label="latest"
    )
    check(earliest, [el(("k", [1, 4, 6]), 1, W(1, 10)), el(("k", [20]), 20, W(20, 24))], label="earliest")
    runner.run(p)


# --------------------------------------------------------------------------- failures


class _FailingSum(beam.CombineFn):
    """Sums, but raises ``message`` in the method named ``where`` (for input ``on``, in add_input)."""

    def __init__(self, where, message, on=None):
        self._where, self._message, self._on = where, message, on

    def create_accumulator(self):
        return 0

    def add_input(self, acc, x):
        if self._where == "add_input" and x == self._on:
            raise ValueError(self._message)
        return acc + x

    def merge_accumulators(self, accs):
        return sum(accs)

    def extract_output(self, acc):
        if self._where == "extract_output":
            raise RuntimeError(self._message)
        return acc


@capability("combine.failure")
def test_exception_in_add_input_fails_job_with_message(runner):
    # SEMANTICS 8: an exception in a CombineFn (here add_input, on one element of one key) fails the job
    # with the user's message, wherever the runner runs add_input (before or after the shuffle).
    message = "conformance-boom-in-add-input-62c1"
    p = runner.pipeline()
    _ = (
        p
        | beam.Create([("a", 1), ("b", 2), ("a", 3), ("b", 4)])
        | beam.CombinePerKey(_FailingSum("add_input", message, on=3))
    )
    runner.run_expecting_failure(p, match=message)


@capability("combine.failure")
def test_exception_in_extract_output_fails_job_with_message(runner):
    # An exception in extract_output (the last step of a combine, after the shuffle) fails the job too (SEMANTICS 8).
    message = "conformance-boom-in-extract-output-0b9a"
    p = runner.pipeline()
    _ = p | beam.Create([1, 2, 3]) | beam.CombineGlobally(_FailingSum("extract_output", message))
    runner.run_expecting_failure(p, match=message)
