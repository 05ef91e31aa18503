"""Reshuffle: a redistribution that keeps every element with its timestamp, window and pane."""

import apache_beam as beam
from apache_beam.transforms import window
from apache_beam.transforms.util import ReshufflePerKey

from conformance.api import (
    END_OF_GLOBAL_WINDOW,
    GLOBAL,
    MIN_TIMESTAMP,
    NO_FIRING,
    ON_TIME_ONLY,
    W,
    capability,
    check,
    created,
    el,
    sorted_groups,
    stamped_by_value,
)


@capability("reshuffle")
def test_reshuffle_keeps_every_element(runner):
    # Reshuffle is the identity on the multiset of elements (duplicates included; SEMANTICS 10).
    p = runner.pipeline()
    data = ["a", "b", "a", "", "c"] + [f"x{i}" for i in range(200)]
    check(p | beam.Create(data) | beam.Reshuffle(), created(data))
    runner.run(p)


@capability("reshuffle")
def test_reshuffle_keeps_min_timestamp_and_global_window(runner):
    # Elements of Create (MIN_TIMESTAMP, global window) come out of a Reshuffle unchanged (SEMANTICS 2 and 10).
    p = runner.pipeline()
    out = p | beam.Create([1, 2]) | beam.Reshuffle()
    check(out, [el(1, MIN_TIMESTAMP, GLOBAL), el(2, MIN_TIMESTAMP, GLOBAL)])
    runner.run(p)


@capability("reshuffle")
def test_reshuffle_keeps_timestamps_in_global_window(runner):
    # Reshuffle keeps assigned timestamps, negative and large, in the global window (SEMANTICS 10).
    p = runner.pipeline()
    data = [("a", -5.5), ("b", 0), ("c", 3.25), ("d", 1e9)]
    out = p | beam.Create(data) | stamped_by_value() | beam.Reshuffle()
    check(out, [el(kv, kv[1], GLOBAL) for kv in data])
    runner.run(p)


@capability("reshuffle")
def test_reshuffle_keeps_fixed_windows(runner):
    # Reshuffle of windowed data keeps each element's timestamp and window (the windowing is restored).
    # (SEMANTICS 4 and 10)
    p = runner.pipeline()
    data = [("a", 1), ("b", 12), ("c", -3)]
    out = p | beam.Create(data) | stamped_by_value() | beam.WindowInto(window.FixedWindows(10)) | beam.Reshuffle()
    check(out, [el(("a", 1), 1, W(0, 10)), el(("b", 12), 12, W(10, 20)), el(("c", -3), -3, W(-10, 0))])
    runner.run(p)


@capability("reshuffle")
def test_reshuffle_keeps_every_sliding_window(runner):
    # SEMANTICS 4: an element in two sliding windows is still in both after a Reshuffle, and a later GBK sees that.
    p = runner.pipeline()
    windowed = (
        p
        | beam.Create([("k", 1), ("k", 4)])
        | stamped_by_value()
        | beam.WindowInto(window.SlidingWindows(5, 3))
        | beam.Reshuffle()
    )
    check(
        windowed,
        [el(("k", 1), 1, W(-3, 2)), el(("k", 1), 1, W(0, 5)), el(("k", 4), 4, W(0, 5)), el(("k", 4), 4, W(3, 8))],
        label="reshuffled",
    )
    grouped = windowed | beam.GroupByKey() | sorted_groups()
    check(
        grouped,
        [el(("k", [1]), 1.999, W(-3, 2)), el(("k", [1, 4]), 4.999, W(0, 5)), el(("k", [4]), 7.999, W(3, 8))],
        label="grouped",
    )
    runner.run(p)


@capability("reshuffle")
def test_reshuffle_before_session_merging(runner):
    # SEMANTICS 4: unmerged session windows survive a Reshuffle; the GBK after it merges them (Java vector, gap 4).
    p = runner.pipeline()
    data = [("foo", 1), ("foo", 4), ("bar", 3), ("foo", 9)]
    out = (
        p
        | beam.Create(data)
        | stamped_by_value()
        | beam.WindowInto(window.Sessions(4))
        | beam.Reshuffle()
        | beam.GroupByKey()
        | sorted_groups()
    )
    check(
        out, [el(("foo", [1, 4]), 7.999, W(1, 8)), el(("bar", [3]), 6.999, W(3, 7)), el(("foo", [9]), 12.999, W(9, 13))]
    )
    runner.run(p)


@capability("reshuffle")
def test_reshuffle_per_key_keeps_pairs_and_timestamps(runner):
    # ReshufflePerKey keeps every key-value pair with its timestamp (SEMANTICS 10).
    p = runner.pipeline()
    data = [("a", 1), ("a", 2), ("b", 3)]
    out = p | beam.Create(data) | stamped_by_value() | ReshufflePerKey()
    check(out, [el(kv, kv[1], GLOBAL) for kv in data])
    runner.run(p)


@capability("reshuffle")
def test_reshuffle_preserves_pane(runner):
    # Beam CHANGES 2.65 (#34348): Reshuffle preserves PaneInfo. The unknown pane of ungrouped data and the
    # ON_TIME pane of a global-window GBK's output both come through unchanged (SEMANTICS 5 and 10).
    p = runner.pipeline()
    raw = p | "Raw" >> beam.Create([("k", 1)]) | "ReshuffleRaw" >> beam.Reshuffle()
    check(raw, [el(("k", 1), pane=NO_FIRING)], label="unknown_pane")
    grouped = (
        p
        | "ToGroup" >> beam.Create([("k", 1), ("k", 2)])
        | beam.GroupByKey()
        | sorted_groups()
        | "ReshuffleGrouped" >> beam.Reshuffle()
    )
    check(grouped, [el(("k", [1, 2]), END_OF_GLOBAL_WINDOW, GLOBAL, ON_TIME_ONLY)], label="on_time_pane")
    runner.run(p)
