"""Pane metadata of batch output: what the model fixes about PaneInfo without any trigger.

A GroupByKey (or Combine) under the default trigger with zero allowed lateness fires each window
once, when the watermark passes its end: that pane is ON_TIME, the first, and the last (the window
expires at the same moment, so no later pane can follow), with index 0 and non-speculative index
0; an element-wise transform keeps the pane its input had. (Beam's PaneInfo encoding and the
ReduceFnRunner's final-pane rule; the Runner Authoring Guide, "GroupByKey".)

These cases are about pane metadata itself. Every other case that compares panes counts a
deviation only in them under this row too (capabilities.CROSS_CUTTING), so a runner that labels
panes wrongly but groups right fails here once, not in every windowing row.
"""

import apache_beam as beam
from apache_beam.transforms import combiners, window

from conformance.api import GLOBAL, W, capability, check, grouped, sorted_groups, stamped_by_value


@capability("panes.metadata")
def test_group_by_key_pane_in_fixed_windows_is_on_time_first_and_last(runner):
    # SEMANTICS 5: a batch GroupByKey fires one pane per key and window: first, last, ON_TIME, index 0.
    p = runner.pipeline()
    out = (
        p
        | beam.Create([("a", 1), ("a", 4), ("b", 12), ("a", 27)])
        | stamped_by_value()
        | beam.WindowInto(window.FixedWindows(10))
        | beam.GroupByKey()
        | sorted_groups()
    )
    check(
        out, grouped([("a", [1, 4])], W(0, 10)) + grouped([("b", [12])], W(10, 20)) + grouped([("a", [27])], W(20, 30))
    )
    runner.run(p)


@capability("panes.metadata")
def test_group_by_key_pane_in_the_global_window_is_on_time_first_and_last(runner):
    # SEMANTICS 5: a batch GroupByKey fires one pane per key and window: first, last, ON_TIME, index 0.
    p = runner.pipeline()
    out = p | beam.Create([("a", 1), ("a", 2), ("b", 3)]) | beam.GroupByKey() | sorted_groups()
    check(out, grouped([("a", [1, 2]), ("b", [3])], GLOBAL))
    runner.run(p)


@capability("panes.metadata")
def test_combine_per_key_pane_is_on_time_first_and_last(runner):
    # SEMANTICS 5 and 8: CombinePerKey emits in the pane its GroupByKey would: first, last, ON_TIME, index 0.
    p = runner.pipeline()
    out = (
        p
        | beam.Create([("a", 1), ("a", 4), ("b", 12)])
        | stamped_by_value()
        | beam.WindowInto(window.FixedWindows(10))
        | beam.CombinePerKey(sum)
    )
    check(out, grouped([("a", 5)], W(0, 10)) + grouped([("b", 12)], W(10, 20)))
    runner.run(p)


@capability("panes.metadata")
def test_element_wise_transforms_keep_the_grouped_pane(runner):
    # SEMANTICS 5 and 10: element-wise transforms keep the pane of their input, here a GroupByKey's.
    p = runner.pipeline()
    out = (
        p
        | beam.Create([("k", 1), ("k", 2), ("j", 5)])
        | beam.GroupByKey()
        | beam.MapTuple(lambda k, vs: (k, sum(vs)))
        | beam.Filter(lambda kv: kv[1] > 0)
        | "AfterFlatMap" >> beam.FlatMap(lambda kv: [kv])
    )
    check(out, grouped([("k", 3), ("j", 5)], GLOBAL))
    runner.run(p)


@capability("panes.metadata")
def test_count_per_element_pane_is_on_time_first_and_last(runner):
    # SEMANTICS 5 and 8: Count.PerElement is a CombinePerKey, so its pane is a batch GroupByKey's.
    p = runner.pipeline()
    out = p | beam.Create(["x", "y", "x"]) | combiners.Count.PerElement()
    check(out, grouped([("x", 2), ("y", 1)], GLOBAL))
    runner.run(p)
