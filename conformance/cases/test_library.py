"""Beam's own composite transforms, in bounded pipelines, giving the results Beam documents.

Each case applies a transform of Beam's Python library as a user would and pins what its
documentation (pydoc, programming guide) promises: values and, where the model fixes them,
timestamps, windows and panes. The expansion decides some of these, and a runner must keep
them: a CombinePerKey-based transform (Top.PerKey, Latest.PerKey, Distinct, ...) emits at the
end of each window (the default timestamp combiner) in the one ON_TIME pane of a batch
GroupByKey; Python's CombineGlobally with its default emits the value injected from a
single-element Create, so at MIN_TIMESTAMP in the global window with no pane.
Where the outcome is open (which elements Sample picks, which of several duplicates
Deduplicate keeps, order within a group) only what is fixed is asserted.
"""

import logging
import threading

import apache_beam as beam
import pytest
from apache_beam.coders import coders
from apache_beam.pvalue import AsSingleton
from apache_beam.transforms import combiners, trigger, window
from apache_beam.transforms.deduplicate import Deduplicate, DeduplicatePerKey
from apache_beam.transforms.util import GroupByEncryptedKey, LogElements, Reify, WithKeys
from apache_beam.utils.secret import RawSecret, Secret
from apache_beam.utils.timestamp import Duration, Timestamp

from conformance.api import (
    ACCUMULATING,
    DISCARDING,
    END_OF_GLOBAL_WINDOW,
    GLOBAL,
    MIN_TIMESTAMP,
    NO_FIRING,
    ON_TIME_ONLY,
    W,
    capability,
    check,
    el,
    keyed_input,
    one_of,
    satisfies,
    sort_values,
    sorted_groups,
    value_at_time,
)
from conformance.authoring.checks import confirmed_in_process


def _fixed(start: float, size: float = 10):
    """The fixed window of ``size`` seconds holding ``start``."""
    begin = start // size * size
    return W(begin, begin + size)


def _stamped(p, items, label="Input"):
    """(value, t) pairs -> the values, each timestamped at its t."""
    return p | label >> beam.Create(items) | value_at_time(f"{label}/Stamp")


def _labelled(**outputs):
    """Several outputs (same windowing) as one PCollection of (name, element), each element
    keeping its timestamp, window and pane: one check instead of one per output."""
    tagged = [pcoll | f"Label/{name}" >> beam.Map(lambda v, name=name: (name, v)) for name, pcoll in outputs.items()]
    return tagged | "Labelled" >> beam.Flatten()


# --------------------------------------------------------------------------- CombineGlobally's default


def _triggered_global(pcoll, mode, label="Trigger"):
    return pcoll | label >> beam.WindowInto(
        window.GlobalWindows(), trigger=trigger.Repeatedly(trigger.AfterCount(3)), accumulation_mode=mode
    )


@capability("library.combine_globally_default")
def test_combine_globally_default_over_accumulating_trigger(runner):
    # Python's CombineGlobally with its default reads the combined output as a side input and
    # emits its one value (or the CombineFn's default if there is none). Over a repeating trigger
    # the combined output has several panes; the side input shows the latest (SEMANTICS 6), and
    # in a bounded pipeline it is read complete: accumulating, that pane holds every element.
    # A runner that hands the injection step every pane fails its assertion of a single value.
    p = runner.pipeline()
    out = _triggered_global(p | beam.Create(list(range(1, 11))), ACCUMULATING) | beam.CombineGlobally(sum)
    check(out, [el(55, MIN_TIMESTAMP, GLOBAL, NO_FIRING)])
    runner.run(p)


@capability("library.combine_globally_default")
def test_combine_globally_default_over_discarding_trigger(runner):
    # Discarding: the latest pane holds what arrived since the previous firing, so the one value is
    # the sum of some pane (which elements share a pane depends on bundling): one value, 1..55 (SEMANTICS 5, 6 and 8).
    p = runner.pipeline()
    out = _triggered_global(p | beam.Create(list(range(1, 11))), DISCARDING) | beam.CombineGlobally(sum)

    def one_pane_sum(records):
        assert len(records) == 1, f"{len(records)} values, expected exactly one"
        value = records[0].value
        assert isinstance(value, int) and 1 <= value <= 55, f"{value!r} is not the sum of a pane of 1..10"
        return True

    check(out, satisfies(one_pane_sum, "exactly one value, the sum of one pane of 1..10"))
    runner.run(p)


@capability("library.combine_globally_default")
def test_combine_globally_default_over_triggered_empty_input(runner):
    # No input, a repeating trigger: no pane ever fires, so the injection step sees an empty side
    # input and emits the CombineFn's default once (SEMANTICS 6 and 8).
    p = runner.pipeline()
    empty = p | beam.Create([]).with_output_types(int)
    check(_triggered_global(empty, ACCUMULATING) | beam.CombineGlobally(sum), [el(0, MIN_TIMESTAMP, GLOBAL)])
    runner.run(p)


@capability("library.combine_globally_default")
def test_combine_globally_in_fixed_windows_needs_without_defaults(runner):
    # Beam documents that a default cannot be assigned to any one window: over non-global windows
    # CombineGlobally must be told without_defaults() (empty windows stay empty) or
    # as_singleton_view() (a reader of an empty window gets the default). Construction refuses
    # the plain form; the two allowed forms give exactly that per window (SEMANTICS 4, 6 and 8).
    scratch = beam.Pipeline()  # construction only: a refused transform leaves a half-built node
    refused = _stamped(scratch, [(1, 1)]) | beam.WindowInto(window.FixedWindows(10))
    with pytest.raises(ValueError, match="without_defaults"):
        _ = refused | "WithDefault" >> beam.CombineGlobally(sum)
    with pytest.raises(ValueError, match="without_defaults"):
        _ = refused | "TopWithDefault" >> combiners.Top.Of(2)
    p = runner.pipeline()
    windowed = _stamped(p, [(1, 1), (2, 5), (30, 31)]) | beam.WindowInto(window.FixedWindows(10))
    sums = windowed | "WithoutDefaults" >> beam.CombineGlobally(sum).without_defaults()
    check(
        sums, [el(3, 9.999, W(0, 10), ON_TIME_ONLY), el(30, 39.999, W(30, 40), ON_TIME_ONLY)], label="without_defaults"
    )
    view = windowed | "AsView" >> beam.CombineGlobally(sum).as_singleton_view()
    readers = (
        _stamped(p, [("a", 2), ("b", 15), ("c", 35)], "Readers")
        | "ReaderWindows" >> beam.WindowInto(window.FixedWindows(10))
        | beam.Map(lambda r, total: (r, total), view)
    )
    check(readers, [("a", 3), ("b", 0), ("c", 30)], label="as_singleton_view")
    runner.run(p)


@capability("library.combine_globally_default")
def test_combine_globally_view_over_triggered_windows(runner):
    # as_singleton_view over fixed windows with a repeating accumulating trigger: a reader in each
    # window sees the latest pane of its window, complete in a bounded pipeline; a reader whose
    # window got no data sees the default (SEMANTICS 6).
    p = runner.pipeline()
    side = _stamped(
        p, [(1, 1), (2, 2), (3, 3), (4, 4), (10, 12), (20, 13), (30, 14)], "Side"
    ) | "SideWindows" >> beam.WindowInto(
        window.FixedWindows(10), trigger=trigger.Repeatedly(trigger.AfterCount(2)), accumulation_mode=ACCUMULATING
    )
    view = side | beam.CombineGlobally(sum).as_singleton_view()
    readers = (
        _stamped(p, [("a", 5), ("b", 15), ("c", 25)], "Readers")
        | "ReaderWindows" >> beam.WindowInto(window.FixedWindows(10))
        | beam.Map(lambda r, total: (r, total), view)
    )
    check(readers, [("a", 10), ("b", 60), ("c", 0)])
    runner.run(p)


# --------------------------------------------------------------------------- Reshuffle


class _ThirdsWindows(window.NonMergingWindowFn):
    """A user WindowFn: an element at t goes to [3k, 3k+3) for k = floor(t / 3), and elements in
    the first second of such a window also to the one-second window [3k, 3k+1)."""

    def assign(self, context):
        t = float(context.timestamp)
        start = int(t // 3 * 3)
        windows = [window.IntervalWindow(start, start + 3)]
        if t < start + 1:
            windows.append(window.IntervalWindow(start, start + 1))
        return windows

    def get_window_coder(self):
        return coders.IntervalWindowCoder()


@capability("library.reshuffle")
def test_reshuffle_keeps_custom_windowfn_for_a_later_group_by_key(runner):
    # Reshuffle returns a PCollection equivalent to its input, windowing strategy included: a
    # GroupByKey after it, with no WindowInto in between, groups in the user WindowFn's windows (SEMANTICS 4 and 10).
    p = runner.pipeline()
    data = [("k", 0.5), ("k", 1.5), ("k", 3.2), ("k", 4.0), ("j", 7.5)]
    windowed = (
        p
        | beam.Create(data)
        | beam.Map(lambda kv: window.TimestampedValue(kv, kv[1]))
        | beam.WindowInto(_ThirdsWindows())
        | beam.Reshuffle()
    )
    check(
        windowed,
        [
            el(("k", 0.5), 0.5, W(0, 3)),
            el(("k", 0.5), 0.5, W(0, 1)),
            el(("k", 1.5), 1.5, W(0, 3)),
            el(("k", 3.2), 3.2, W(3, 6)),
            el(("k", 3.2), 3.2, W(3, 4)),
            el(("k", 4.0), 4.0, W(3, 6)),
            el(("j", 7.5), 7.5, W(6, 9)),
        ],
        label="reshuffled",
    )
    grouped = windowed | beam.GroupByKey() | sorted_groups()
    check(
        grouped,
        [
            el(("k", [0.5, 1.5]), 2.999, W(0, 3), ON_TIME_ONLY),
            el(("k", [0.5]), 0.999, W(0, 1), ON_TIME_ONLY),
            el(("k", [3.2, 4.0]), 5.999, W(3, 6), ON_TIME_ONLY),
            el(("k", [3.2]), 3.999, W(3, 4), ON_TIME_ONLY),
            el(("j", [7.5]), 8.999, W(6, 9), ON_TIME_ONLY),
        ],
        label="grouped",
    )
    runner.run(p)


@capability("library.reshuffle")
def test_reshuffle_keeps_timestamp_combiner_and_trigger_of_input(runner):
    # The windowing strategy after a Reshuffle is the input's, not that of Reshuffle's internal
    # GroupByKey (global window, fire always, earliest timestamp): a GroupByKey after it uses the
    # input's LATEST timestamp combiner in the input's fixed windows, one ON_TIME pane each (SEMANTICS 4, 5 and 10).
    p = runner.pipeline()
    data = [("k", 1), ("k", 4), ("k", 12), ("j", 3)]
    out = (
        p
        | beam.Create(data)
        | beam.Map(lambda kv: window.TimestampedValue(kv, kv[1]))
        | beam.WindowInto(window.FixedWindows(10), timestamp_combiner=window.TimestampCombiner.OUTPUT_AT_LATEST)
        | beam.Reshuffle()
        | beam.GroupByKey()
        | sorted_groups()
    )
    check(
        out,
        [
            el(("k", [1, 4]), 4, W(0, 10), ON_TIME_ONLY),
            el(("k", [12]), 12, W(10, 20), ON_TIME_ONLY),
            el(("j", [3]), 3, W(0, 10), ON_TIME_ONLY),
        ],
    )
    runner.run(p)


# --------------------------------------------------------------------------- GroupByEncryptedKey


@capability("library.group_by_encrypted_key")
def test_group_by_encrypted_key_groups_like_group_by_key(runner):
    # GroupByEncryptedKey groups by key as GroupByKey does (the runner sees only HMACs of the keys
    # and encrypted keys and values). A RawSecret holds a locally generated Fernet key, so no
    # secret manager is needed. Keys of several types; per window, end-of-window timestamps (SEMANTICS 8).
    p = runner.pipeline()
    secret = RawSecret(Secret.generate_secret_bytes())
    data = [("a", 1, 1), (7, 2, 2), ("a", 3, 3), (("t", 1), 4, 4), ("a", 5, 12), (7, 6, 8)]
    out = (
        keyed_input(p, data) | beam.WindowInto(window.FixedWindows(10)) | GroupByEncryptedKey(secret) | sorted_groups()
    )
    check(
        out,
        [
            el(("a", [1, 3]), 9.999, W(0, 10), ON_TIME_ONLY),
            el((7, [2, 6]), 9.999, W(0, 10), ON_TIME_ONLY),
            el((("t", 1), [4]), 9.999, W(0, 10), ON_TIME_ONLY),
            el(("a", [5]), 19.999, W(10, 20), ON_TIME_ONLY),
        ],
    )
    runner.run(p)


# --------------------------------------------------------------------------- Deduplicate


def _each_once_from(inputs):
    """Deduplicated output: every distinct value of ``inputs`` ((value, t) pairs) exactly once,
    at the timestamp of one of its copies (which copy is kept is open)."""
    stamps = {}
    for value, t in inputs:
        stamps.setdefault(value, set()).add(round(t * 1000))

    def ok(records):
        values = sorted(repr(r.value) for r in records)
        assert values == sorted(repr(v) for v in stamps), f"values {values}, expected each of {sorted(stamps)} once"
        for r in records:
            assert r.timestamp_ms in stamps[r.value], f"{r!r}: not the timestamp of any copy of {r.value!r}"
        return True

    return satisfies(ok, f"each of {sorted(stamps)} once, at the timestamp of one of its copies")


_COPIES = [("a", 1), ("b", 2), ("a", 3), ("c", 4), ("b", 5), ("a", 6)]
# A processing-time duration (seconds) far longer than a pipeline needs to read six elements, and
# short enough that a runner waiting for it on the wall clock ends well within a case's timeout.
_WALL_CLOCK_DURATION = 20


@capability("library.deduplicate")
def test_deduplicate_event_time_removes_copies_within_duration(runner):
    # Deduplicate(event_time_duration=1 h): copies within the duration of the first are dropped (SEMANTICS 7).
    p = runner.pipeline()
    out = _stamped(p, _COPIES) | Deduplicate(event_time_duration=Duration(seconds=3600))
    check(out, _each_once_from(_COPIES))
    runner.run(p)


@capability("library.deduplicate")
def test_deduplicate_processing_time_removes_copies_within_duration(runner):
    # Deduplicate(processing_time_duration=20 s): every copy arrives in the first seconds of processing
    # time, so every later copy is dropped. (The model leaves a bounded pipeline's processing-time
    # clock to the runner: a runner on the wall clock, as Prism is, waits for the duration's timer
    # before the pipeline ends, so the duration is short enough for that too; SEMANTICS 7)
    p = runner.pipeline()
    out = _stamped(p, _COPIES) | Deduplicate(processing_time_duration=Duration(seconds=_WALL_CLOCK_DURATION))
    check(out, _each_once_from(_COPIES))
    runner.run(p)


@capability("library.deduplicate")
def test_deduplicate_per_key_per_window(runner):
    # DeduplicatePerKey keeps one (key, value) per key (the first it sees) within the duration;
    # values in different windows are never duplicates of each other. (Processing time: an
    # event-time duration must end within the window, its timer may not outlive the window. The
    # duration is short enough for a runner whose processing time is the wall clock, see above; SEMANTICS 4 and 7)
    p = runner.pipeline()
    data = [("k", 1, 1), ("k", 2, 3), ("j", 1, 4), ("k", 1, 12)]
    out = (
        keyed_input(p, data)
        | beam.WindowInto(window.FixedWindows(10))
        | DeduplicatePerKey(processing_time_duration=Duration(seconds=_WALL_CLOCK_DURATION))
    )
    check(
        out,
        one_of(
            [el(("k", 1), 1, W(0, 10)), el(("j", 1), 4, W(0, 10)), el(("k", 1), 12, W(10, 20))],
            [el(("k", 2), 3, W(0, 10)), el(("j", 1), 4, W(0, 10)), el(("k", 1), 12, W(10, 20))],
        ),
    )
    runner.run(p)


# --------------------------------------------------------------------------- Distinct


@capability("library.distinct")
def test_distinct_per_window(runner):
    # Distinct: each distinct element once per window (it is a CombinePerKey on the element, so
    # the output is at the end of its window, in the ON_TIME pane). Equal values of different
    # types stay apart only if they encode differently; here they are all strings and ints (SEMANTICS 4 and 8).
    p = runner.pipeline()
    data = [("x", 1), ("y", 2), ("x", 3), (1, 4), (1, 5), ("x", 12), ("", 13), ("", 14)]
    out = _stamped(p, data) | beam.WindowInto(window.FixedWindows(10)) | beam.Distinct()
    check(
        out,
        [
            el("x", 9.999, W(0, 10), ON_TIME_ONLY),
            el("y", 9.999, W(0, 10), ON_TIME_ONLY),
            el(1, 9.999, W(0, 10), ON_TIME_ONLY),
            el("x", 19.999, W(10, 20), ON_TIME_ONLY),
            el("", 19.999, W(10, 20), ON_TIME_ONLY),
        ],
    )
    runner.run(p)


@capability("library.distinct")
def test_distinct_in_global_window(runner):
    # SEMANTICS 8: Distinct groups by encoded value, so each value once, at the end of the global window.
    p = runner.pipeline()
    out = p | beam.Create([3, 1, 3, 2, 1, 3]) | beam.Distinct()
    check(
        out,
        [el(1, END_OF_GLOBAL_WINDOW, GLOBAL), el(2, END_OF_GLOBAL_WINDOW, GLOBAL), el(3, END_OF_GLOBAL_WINDOW, GLOBAL)],
    )
    runner.run(p)


# --------------------------------------------------------------------------- Top


@capability("library.top")
def test_top_of_largest_and_smallest_globally(runner):
    # Top.Of(n) / Largest: the n greatest, greatest first; Smallest: the n least, least first;
    # key= orders by a function. In the global window Top.Of merges per-bundle heaps through a
    # GroupByKey, so its list comes at the end of the global window, ON_TIME (SEMANTICS 8).
    p = runner.pipeline()
    nums = p | "Nums" >> beam.Create([5, 1, 9, 3, 7, 9, 2])
    words = p | "Words" >> beam.Create(["bb", "a", "dddd", "ccc"])
    out = _labelled(
        of=nums | "Of" >> combiners.Top.Of(3),
        largest=nums | "Largest" >> combiners.Top.Largest(2),
        smallest=nums | "Smallest" >> combiners.Top.Smallest(3),
        reverse=nums | "Reverse" >> combiners.Top.Of(2, reverse=True),
        key=words | "ByLength" >> combiners.Top.Of(2, key=len),
        fewer_than_n=p | "Few" >> beam.Create([4]) | "OfFew" >> combiners.Top.Of(3),
    )
    check(
        out,
        [
            el((name, top), END_OF_GLOBAL_WINDOW, GLOBAL, ON_TIME_ONLY)
            for name, top in [
                ("of", [9, 9, 7]),
                ("largest", [9, 9]),
                ("smallest", [1, 2, 3]),
                ("reverse", [1, 2]),
                ("key", ["dddd", "ccc"]),
                ("fewer_than_n", [4]),
            ]
        ],
    )
    runner.run(p)


@capability("library.top")
def test_top_of_empty_input_is_empty_list(runner):
    # An empty input still gives one (empty) list in the global window (SEMANTICS 8).
    p = runner.pipeline()
    empty = p | beam.Create([]).with_output_types(int)
    out = _labelled(of=empty | "Of" >> combiners.Top.Of(3), smallest=empty | "Smallest" >> combiners.Top.Smallest(2))
    check(out, [el(("of", []), END_OF_GLOBAL_WINDOW, GLOBAL), el(("smallest", []), END_OF_GLOBAL_WINDOW, GLOBAL)])
    runner.run(p)


@capability("library.top")
def test_top_per_key_and_per_window(runner):
    # Top.PerKey / LargestPerKey / SmallestPerKey per key; Top.Of(...).without_defaults() per window.
    # (SEMANTICS 4 and 8)
    p = runner.pipeline()
    kvs = p | "Pairs" >> beam.Create([("a", 3), ("b", 10), ("a", 1), ("a", 4), ("b", 20), ("c", 0)])
    per_key = _labelled(
        largest=kvs | "PerKey" >> combiners.Top.PerKey(2), smallest=kvs | "Smallest" >> combiners.Top.SmallestPerKey(2)
    )
    check(
        per_key,
        [
            el((name, kv), END_OF_GLOBAL_WINDOW, GLOBAL, ON_TIME_ONLY)
            for name, kv in [
                ("largest", ("a", [4, 3])),
                ("largest", ("b", [20, 10])),
                ("largest", ("c", [0])),
                ("smallest", ("a", [1, 3])),
                ("smallest", ("b", [10, 20])),
                ("smallest", ("c", [0])),
            ]
        ],
        label="per_key",
    )
    windowed = _stamped(p, [(5, 1), (8, 2), (2, 3), (6, 11)], "Timed") | beam.WindowInto(window.FixedWindows(10))
    check(
        windowed | "InWindows" >> combiners.Top.Of(2).without_defaults(),
        [el([8, 5], 9.999, W(0, 10), ON_TIME_ONLY), el([6], 19.999, W(10, 20), ON_TIME_ONLY)],
        label="per_window",
    )
    runner.run(p)


# --------------------------------------------------------------------------- Sample


def _assert_drawn(sample, population, n):
    assert isinstance(sample, list), f"{sample!r} is not a list"
    assert len(sample) == min(n, len(population)), f"{sample!r} holds {len(sample)}, expected {min(n, len(population))}"
    left = list(population)
    for v in sample:
        assert v in left, f"{sample!r}: {v!r} drawn more often than it occurs in {population}"
        left.remove(v)


@capability("library.sample")
def test_sample_fixed_size_globally(runner):
    # Sample.FixedSizeGlobally(n): one list of n elements drawn without replacement (all of them if
    # fewer); which ones is random. Empty input: the default, an empty list (SEMANTICS 8).
    p = runner.pipeline()
    drawn = {"three_of_eight": ([1, 2, 3, 4, 5, 6, 7, 7], 3), "all_of_two": (["x", "y"], 5), "empty": ([], 2)}
    out = _labelled(
        **{
            name: p
            | f"Create/{name}" >> beam.Create(population)
            | f"Sample/{name}" >> (combiners.Sample.FixedSizeGlobally(n))
            for name, (population, n) in drawn.items()
        }
    )

    def samples(records):
        assert sorted(r.value[0] for r in records) == sorted(drawn), f"one sample per input expected: {records}"
        for r in records:
            name, sample = r.value
            assert r.timestamp_ms == MIN_TIMESTAMP.micros // 1000 and r.window == GLOBAL, f"{r!r}"
            _assert_drawn(sample, *drawn[name])
        return True

    check(
        out,
        satisfies(
            samples,
            "per input one list of min(n, size) elements drawn without replacement, "
            "at MIN_TIMESTAMP in the global window (the empty input: the default [])",
        ),
    )
    runner.run(p)


@capability("library.sample")
def test_sample_fixed_size_per_key_and_any(runner):
    # Sample.FixedSizePerKey(n): per key, n of its values without replacement. Sample.Any(n): at
    # most n input elements, as elements (SEMANTICS 8).
    p = runner.pipeline()
    groups = {"a": [1, 2, 3, 4], "b": [9], "c": [5, 5, 6]}
    kvs = p | "Pairs" >> beam.Create([(k, v) for k, vs in groups.items() for v in vs])

    def per_key(records):
        assert sorted(r.value[0] for r in records) == sorted(groups), f"keys {[r.value[0] for r in records]}"
        for r in records:
            _assert_drawn(r.value[1], groups[r.value[0]], 2)
        return True

    check(kvs | combiners.Sample.FixedSizePerKey(2), satisfies(per_key, "per key, 2 of its values"), label="per_key")

    population = list(range(10))

    def any_three(records):
        values = [r.value for r in records]
        assert len(values) == 3 and len(set(values)) == 3 and set(values) <= set(population), f"{values}"
        return True

    check(
        p | "Ten" >> beam.Create(population) | combiners.Sample.Any(3),
        satisfies(any_three, "three distinct input elements"),
        label="any",
    )
    runner.run(p)


# --------------------------------------------------------------------------- Latest


@capability("library.latest")
def test_latest_globally_and_per_key(runner):
    # Latest: the element with the greatest timestamp, globally (with its default, None for no
    # input) and per key; among equal greatest timestamps either may win (SEMANTICS 8).
    p = runner.pipeline()
    timed = _stamped(p, [("first", 1), ("last", 30), ("middle", 7)], "Timed")
    kvs = keyed_input(p, [("a", 1, 5), ("a", 2, 9), ("a", 3, 2), ("b", 4, 1), ("c", 5, 3), ("c", 6, 3)], "Keyed")
    out = _labelled(
        globally=timed | "Globally" >> combiners.Latest.Globally(),
        empty=p | "Empty" >> beam.Create([]) | "GloballyEmpty" >> combiners.Latest.Globally(),
        per_key=kvs | "PerKey" >> combiners.Latest.PerKey(),
    )
    injected = [
        el(("globally", "last"), MIN_TIMESTAMP, GLOBAL, NO_FIRING),
        el(("empty", None), MIN_TIMESTAMP, GLOBAL, NO_FIRING),
    ]
    grouped = [el(("per_key", kv), END_OF_GLOBAL_WINDOW, GLOBAL, ON_TIME_ONLY) for kv in [("a", 2), ("b", 4)]]
    check(
        out,
        one_of(
            injected + grouped + [el(("per_key", ("c", 5)), END_OF_GLOBAL_WINDOW, GLOBAL, ON_TIME_ONLY)],
            injected + grouped + [el(("per_key", ("c", 6)), END_OF_GLOBAL_WINDOW, GLOBAL, ON_TIME_ONLY)],
        ),
    )
    runner.run(p)


@capability("library.latest")
def test_latest_per_window(runner):
    # Latest.Globally().without_defaults() in fixed windows: the latest element of each window (SEMANTICS 4 and 8).
    p = runner.pipeline()
    timed = _stamped(p, [("a", 1), ("b", 8), ("c", 4), ("d", 15), ("e", 11)])
    out = timed | beam.WindowInto(window.FixedWindows(10)) | combiners.Latest.Globally().without_defaults()
    check(out, [el("b", 9.999, W(0, 10), ON_TIME_ONLY), el("d", 19.999, W(10, 20), ON_TIME_ONLY)])
    runner.run(p)


# --------------------------------------------------------------------------- CoGroupByKey


def _plain_groups():
    """(key, {tag: iterable}) or (key, (iterable, ...)) -> the same with sorted lists."""

    def plain(kv):
        key, grouped = kv
        if isinstance(grouped, dict):
            return key, {tag: sort_values(vs) for tag, vs in grouped.items()}
        return key, tuple(sort_values(vs) for vs in grouped)

    return beam.Map(plain)


@capability("library.co_group_by_key")
def test_co_group_by_key_dict_of_inputs_with_empty_side(runner):
    # CoGroupByKey over {tag: PCollection}: one output per key of any input, holding every tag, an
    # empty list where that input had nothing for the key (an input with no elements at all, too; SEMANTICS 3 and 8).
    p = runner.pipeline()
    emails = p | "Emails" >> beam.Create([("amy", "a@x"), ("bob", "b@x"), ("amy", "a2@x")])
    phones = p | "Phones" >> beam.Create([("amy", 111), ("carl", 333)])
    nothing = p | "Nothing" >> beam.Create([]).with_output_types(tuple[str, int])
    out = {"emails": emails, "phones": phones, "none": nothing} | beam.CoGroupByKey() | _plain_groups()
    check(
        out,
        [
            el(
                ("amy", {"emails": ["a2@x", "a@x"], "phones": [111], "none": []}),
                END_OF_GLOBAL_WINDOW,
                GLOBAL,
                ON_TIME_ONLY,
            ),
            el(("bob", {"emails": ["b@x"], "phones": [], "none": []}), END_OF_GLOBAL_WINDOW, GLOBAL, ON_TIME_ONLY),
            el(("carl", {"emails": [], "phones": [333], "none": []}), END_OF_GLOBAL_WINDOW, GLOBAL, ON_TIME_ONLY),
        ],
    )
    runner.run(p)


@capability("library.co_group_by_key")
def test_co_group_by_key_tuple_of_inputs_per_window(runner):
    # A tuple of inputs gives a tuple of lists; grouping is per key and window (SEMANTICS 3, 4 and 8).
    p = runner.pipeline()
    left = keyed_input(p, [("k", "l1", 1), ("k", "l2", 12), ("j", "l3", 3)], "Left")
    right = keyed_input(p, [("k", "r1", 5), ("j", "r2", 15)], "Right")
    out = (
        (
            left | "LeftWindows" >> beam.WindowInto(window.FixedWindows(10)),
            right | "RightWindows" >> beam.WindowInto(window.FixedWindows(10)),
        )
        | beam.CoGroupByKey()
        | _plain_groups()
    )
    check(
        out,
        [
            el(("k", (["l1"], ["r1"])), 9.999, W(0, 10), ON_TIME_ONLY),
            el(("j", (["l3"], [])), 9.999, W(0, 10), ON_TIME_ONLY),
            el(("k", (["l2"], [])), 19.999, W(10, 20), ON_TIME_ONLY),
            el(("j", ([], ["r2"])), 19.999, W(10, 20), ON_TIME_ONLY),
        ],
    )
    runner.run(p)


@capability("library.co_group_by_key")
def test_co_group_by_key_of_no_inputs_is_empty(runner):
    # With no inputs at all (the pipeline given explicitly), the result is an empty PCollection (SEMANTICS 3).
    p = runner.pipeline()
    check({} | beam.CoGroupByKey(pipeline=p), [])
    runner.run(p)


# --------------------------------------------------------------------------- Partition


@capability("library.partition")
def test_partition_splits_keeping_timestamps_and_windows(runner):
    # Partition(fn, n): every element goes to exactly the partition fn names, with its timestamp
    # and window; a partition may stay empty; extra arguments reach fn (SEMANTICS 10).
    p = runner.pipeline()
    timed = _stamped(p, [(1, 1), (2, 2), (3, 13), (4, 14), (6, 16)]) | beam.WindowInto(window.FixedWindows(10))
    parts = timed | beam.Partition(lambda v, n, modulus: v % modulus, 4, 3)
    out = _labelled(**{f"part{i}": parts[i] for i in range(4)})
    check(
        out,
        [
            el(("part0", 3), 13, W(10, 20)),
            el(("part0", 6), 16, W(10, 20)),
            el(("part1", 1), 1, W(0, 10)),
            el(("part1", 4), 14, W(10, 20)),
            el(("part2", 2), 2, W(0, 10)),
        ],
    )
    runner.run(p)


@capability("library.partition")
def test_partition_out_of_bounds_index_fails_the_job(runner):
    # A partition function returning an index outside [0, n) fails the job, naming the problem (SEMANTICS 10).
    p = runner.pipeline()
    _ = p | beam.Create([0, 1, 5]) | beam.Partition(lambda v, n: v, 2)
    runner.run_expecting_failure(p, match="out-of-bounds")


# --------------------------------------------------------------------------- Reify


@capability("library.reify")
def test_reify_timestamp_window_and_in_value(runner):
    # Reify.Window puts (value, timestamp, window) in the element; Reify.WindowInValue does it for
    # a KV's value; Reify.TimestampInValue wraps a KV's value in a TimestampedValue; Reify.Timestamp
    # keeps the element at its timestamp. Every output keeps its timestamp and window (SEMANTICS 4 and 10).
    p = runner.pipeline()
    timed = keyed_input(p, [("a", 1, 1.5), ("b", 2, 12)]) | beam.WindowInto(window.FixedWindows(10))
    w0, w1 = window.IntervalWindow(0, 10), window.IntervalWindow(10, 20)
    in_value = (
        timed
        | "TimestampInValue" >> Reify.TimestampInValue()
        | "Unwrap" >> beam.MapTuple(lambda k, tv: (k, tv.value, tv.timestamp))
    )
    out = _labelled(
        window=timed | "Window" >> Reify.Window(),
        window_in_value=timed | "WindowInValue" >> Reify.WindowInValue(),
        timestamp_in_value=in_value,
        timestamp=timed | "Timestamp" >> Reify.Timestamp(),
    )
    check(
        out,
        [
            el(("window", (("a", 1), Timestamp(1.5), w0)), 1.5, W(0, 10)),
            el(("window", (("b", 2), Timestamp(12), w1)), 12, W(10, 20)),
            el(("window_in_value", ("a", (1, Timestamp(1.5), w0))), 1.5, W(0, 10)),
            el(("window_in_value", ("b", (2, Timestamp(12), w1))), 12, W(10, 20)),
            el(("timestamp_in_value", ("a", 1, Timestamp(1.5))), 1.5, W(0, 10)),
            el(("timestamp_in_value", ("b", 2, Timestamp(12))), 12, W(10, 20)),
            el(("timestamp", ("a", 1)), 1.5, W(0, 10)),
            el(("timestamp", ("b", 2)), 12, W(10, 20)),
        ],
    )
    runner.run(p)


# --------------------------------------------------------------------------- WithKeys


@capability("library.with_keys")
def test_with_keys_constant_callable_and_side_input(runner):
    # WithKeys(k) pairs every element with k; WithKeys(fn) with fn(element), fn may take side
    # inputs. Timestamps and windows are kept (SEMANTICS 6 and 10).
    p = runner.pipeline()
    timed = _stamped(p, [("x", 1), ("yy", 12)]) | beam.WindowInto(window.FixedWindows(10))
    keyed = _labelled(constant=timed | "Constant" >> WithKeys("k"), callable=timed | "Callable" >> WithKeys(len))
    check(
        keyed,
        [
            el(("constant", ("k", "x")), 1, W(0, 10)),
            el(("constant", ("k", "yy")), 12, W(10, 20)),
            el(("callable", (1, "x")), 1, W(0, 10)),
            el(("callable", (2, "yy")), 12, W(10, 20)),
        ],
        label="keyed",
    )
    prefix = p | "Prefix" >> beam.Create(["p-"])
    words = p | "Words" >> beam.Create(["a", "b"])
    check(
        words | "WithSide" >> WithKeys(lambda v, pre: pre + v, AsSingleton(prefix)),
        [("p-a", "a"), ("p-b", "b")],
        label="side_input",
    )
    runner.run(p)


# --------------------------------------------------------------------------- LogElements


class _Capture(logging.Handler):
    """Log records of LogElements' logger, for a worker in this process."""

    lines: list = []
    lock = threading.Lock()

    def emit(self, record):
        with self.lock:
            self.lines.append(record.getMessage())


@capability("library.log_elements")
def test_log_elements_passes_elements_through_and_logs_them(runner):
    # LogElements' output is its input, element for element, with timestamp, window and pane (here
    # the ON_TIME pane of a GroupByKey). It logs one line per element, checked when the pipeline's
    # SDK worker ran in this process (its check confirmed itself here); a runner may run user code
    # elsewhere even with LOOPBACK (the Spark backend's executors do), and its log goes there (SEMANTICS 10).
    p = runner.pipeline()
    prefix = "library-case-log-elements: "
    grouped = (
        keyed_input(p, [("a", 1, 1), ("a", 2, 2), ("b", 3, 12)])
        | beam.WindowInto(window.FixedWindows(10))
        | beam.GroupByKey()
        | sorted_groups()
    )
    logged = grouped | LogElements(prefix=prefix, with_timestamp=True, with_window=True, level=logging.WARNING)
    check_id = check(
        logged, [el(("a", [1, 2]), 9.999, W(0, 10), ON_TIME_ONLY), el(("b", [3]), 19.999, W(10, 20), ON_TIME_ONLY)]
    )
    handler = _Capture()
    logger = logging.getLogger("apache_beam.transforms.util")
    logger.addHandler(handler)
    try:
        runner.run(p)
    finally:
        logger.removeHandler(handler)
    if confirmed_in_process(check_id):
        with _Capture.lock:
            ours = sorted(line for line in _Capture.lines if line.startswith(prefix))
            _Capture.lines.clear()
        assert len(ours) == 2, f"expected one log line per element, got {ours}"
        assert ours[0].startswith(f"{prefix}('a', [1, 2]), timestamp=") and "window(start=" in ours[0], ours
        assert ours[1].startswith(f"{prefix}('b', [3]), timestamp=") and "window(start=" in ours[1], ours
