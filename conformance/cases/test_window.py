"""Windowing: global windows, re-windowing, timestamp control and custom WindowFns
(conformance/SEMANTICS.md, section 4)."""

import math

import apache_beam as beam
from apache_beam.coders import coders
from apache_beam.transforms import window

from conformance.api import (
    END_OF_GLOBAL_WINDOW,
    GLOBAL,
    MIN_TIMESTAMP,
    NO_FIRING,
    ON_TIME_ONLY,
    W,
    capability,
    check,
    el,
    sorted_groups,
    stamped_by_value,
)


def _sum_groups():
    return beam.MapTuple(lambda k, vs: (k, sum(vs)))


# --------------------------------------------------------------------------- global window


@capability("window.global")
def test_rewindow_fixed_into_global_regroups_across_windows(runner):
    # SEMANTICS 4: WindowInto(GlobalWindows) puts every element in the one global window, so a GBK
    # after it groups what Fixed windows had kept apart, stamped at the end of the global window.
    p = runner.pipeline()
    data = [("k", 1), ("k", 2), ("k", 12), ("k", 25), ("j", 3)]
    fixed = (
        p
        | beam.Create(data)
        | stamped_by_value()
        | "Fixed" >> beam.WindowInto(window.FixedWindows(10))
        | "PerWindow" >> beam.GroupByKey()
        | "SumPerWindow" >> _sum_groups()
    )
    out = (
        fixed | "Rewindow" >> beam.WindowInto(window.GlobalWindows()) | "Global" >> beam.GroupByKey() | sorted_groups()
    )
    check(
        out,
        [
            el(("k", [3, 12, 25]), END_OF_GLOBAL_WINDOW, GLOBAL, ON_TIME_ONLY),
            el(("j", [3]), END_OF_GLOBAL_WINDOW, GLOBAL, ON_TIME_ONLY),
        ],
    )
    runner.run(p)


@capability("window.global")
def test_window_into_global_keeps_element_timestamps(runner):
    # SEMANTICS 4: re-windowing changes windows only; element timestamps and the unknown pane are kept.
    p = runner.pipeline()
    out = (
        p
        | beam.Create([("a", 4), ("b", 17)])
        | stamped_by_value()
        | "Fixed" >> beam.WindowInto(window.FixedWindows(10))
        | "Global" >> beam.WindowInto(window.GlobalWindows())
    )
    check(out, [el(("a", 4), 4, GLOBAL, NO_FIRING), el(("b", 17), 17, GLOBAL, NO_FIRING)])
    runner.run(p)


# --------------------------------------------------------------------------- re-windowing


@capability("window.rewindow")
def test_fixed_then_sliding_with_gbk_after_each(runner):
    # SEMANTICS 4: Fixed(10) groups are stamped 9.999/19.999 (END_OF_WINDOW); Sliding(20, 10) then
    # places each of them in the two sliding windows containing that timestamp.
    p = runner.pipeline()
    data = [("k", 1), ("k", 2), ("k", 12)]
    fixed = (
        p
        | beam.Create(data)
        | stamped_by_value()
        | "IntoFixed" >> beam.WindowInto(window.FixedWindows(10))
        | "Fixed" >> beam.GroupByKey()
        | "SumFixed" >> _sum_groups()
    )
    check(
        fixed,
        [el(("k", 3), 9.999, W(0, 10), ON_TIME_ONLY), el(("k", 12), 19.999, W(10, 20), ON_TIME_ONLY)],
        label="fixed",
    )
    sliding = (
        fixed
        | "IntoSliding" >> beam.WindowInto(window.SlidingWindows(20, 10))
        | "Sliding" >> beam.GroupByKey()
        | sorted_groups()
    )
    check(
        sliding,
        [
            el(("k", [3]), 9.999, W(-10, 10), ON_TIME_ONLY),
            el(("k", [3, 12]), 19.999, W(0, 20), ON_TIME_ONLY),
            el(("k", [12]), 29.999, W(10, 30), ON_TIME_ONLY),
        ],
        label="sliding",
    )
    runner.run(p)


@capability("window.rewindow")
def test_fixed_then_larger_fixed(runner):
    # SEMANTICS 4: per-10 s sums re-windowed into Fixed(30) group by the window holding each sum's timestamp.
    p = runner.pipeline()
    data = [("k", t) for t in (1, 5, 11, 28, 31, 59)]
    out = (
        p
        | beam.Create(data)
        | stamped_by_value()
        | "Fixed10" >> beam.WindowInto(window.FixedWindows(10))
        | "G10" >> beam.GroupByKey()
        | "Sum10" >> _sum_groups()
        | "Fixed30" >> beam.WindowInto(window.FixedWindows(30))
        | "G30" >> beam.GroupByKey()
        | sorted_groups()
    )
    check(
        out,
        [el(("k", [6, 11, 28]), 29.999, W(0, 30), ON_TIME_ONLY), el(("k", [31, 59]), 59.999, W(30, 60), ON_TIME_ONLY)],
    )
    runner.run(p)


@capability("window.rewindow")
def test_fixed_then_smaller_fixed(runner):
    # SEMANTICS 4: re-windowing into a smaller Fixed(3) uses the group timestamps 9.999 -> [9,12), 19.999 -> [18,21).
    p = runner.pipeline()
    data = [("k", 1), ("k", 8), ("k", 15)]
    out = (
        p
        | beam.Create(data)
        | stamped_by_value()
        | "Fixed10" >> beam.WindowInto(window.FixedWindows(10))
        | "G10" >> beam.GroupByKey()
        | "Sum10" >> _sum_groups()
        | "Fixed3" >> beam.WindowInto(window.FixedWindows(3))
        | "G3" >> beam.GroupByKey()
        | sorted_groups()
    )
    check(out, [el(("k", [9]), 11.999, W(9, 12), ON_TIME_ONLY), el(("k", [15]), 20.999, W(18, 21), ON_TIME_ONLY)])
    runner.run(p)


@capability("window.rewindow")
def test_sessions_then_fixed(runner):
    # SEMANTICS 4: merged session groups (stamped at the session end) can be re-windowed into Fixed windows.
    p = runner.pipeline()
    data = [("k", 1), ("k", 3), ("k", 14), ("j", 2)]
    out = (
        p
        | beam.Create(data)
        | stamped_by_value()
        | "IntoSessions" >> beam.WindowInto(window.Sessions(4))
        | "Sessions" >> beam.GroupByKey()
        | "Count" >> beam.MapTuple(lambda k, vs: ("all", (k, len(list(vs)))))
        | "IntoFixed" >> beam.WindowInto(window.FixedWindows(10))
        | "Fixed" >> beam.GroupByKey()
        | sorted_groups()
    )
    # k: [1,7) -> 6.999; j: [2,6) -> 5.999; k: [14,18) -> 17.999
    check(
        out,
        [
            el(("all", [("j", 1), ("k", 2)]), 9.999, W(0, 10), ON_TIME_ONLY),
            el(("all", [("k", 1)]), 19.999, W(10, 20), ON_TIME_ONLY),
        ],
    )
    runner.run(p)


# --------------------------------------------------------------------------- timestamp control


@capability("window.timestamp_control")
def test_create_emits_at_min_timestamp_in_global_window(runner):
    # SEMANTICS 2: Create is rooted in Impulse, so its elements sit at MIN_TIMESTAMP in the global window,
    # with the unknown pane.
    p = runner.pipeline()
    check(
        p | beam.Create(["a", "b"]),
        [el("a", MIN_TIMESTAMP, GLOBAL, NO_FIRING), el("b", MIN_TIMESTAMP, GLOBAL, NO_FIRING)],
    )
    runner.run(p)


@capability("window.timestamp_control")
def test_timestamped_value_from_map_sets_timestamp(runner):
    # Returning TimestampedValue from a Map sets the element's timestamp (ms precision, negative allowed).
    # (SEMANTICS 1 and 10)
    p = runner.pipeline()
    out = p | beam.Create([("a", 1.234), ("b", -5.0), ("c", 1e6)]) | stamped_by_value()
    check(
        out,
        [
            el(("a", 1.234), 1.234, GLOBAL, NO_FIRING),
            el(("b", -5.0), -5.0, GLOBAL, NO_FIRING),
            el(("c", 1e6), 1e6, GLOBAL, NO_FIRING),
        ],
    )
    runner.run(p)


class _EmitAtSeveralTimes(beam.DoFn):
    """Emits each input several times, each copy at its own timestamp."""

    def process(self, element):
        name, times = element
        for t in times:
            yield beam.window.TimestampedValue((name, t), t)


@capability("window.timestamp_control")
def test_timestamped_value_yielded_from_dofn_then_fixed_gbk(runner):
    # A DoFn yielding beam.window.TimestampedValue sets each output's timestamp; Fixed windows then follow it.
    # (SEMANTICS 4 and 10)
    p = runner.pipeline()
    out = (
        p
        | beam.Create([("a", [3, 14, 7]), ("b", [21])])
        | beam.ParDo(_EmitAtSeveralTimes())
        | beam.WindowInto(window.FixedWindows(10))
        | beam.GroupByKey()
        | sorted_groups()
    )
    check(
        out,
        [
            el(("a", [3, 7]), 9.999, W(0, 10), ON_TIME_ONLY),
            el(("a", [14]), 19.999, W(10, 20), ON_TIME_ONLY),
            el(("b", [21]), 29.999, W(20, 30), ON_TIME_ONLY),
        ],
    )
    runner.run(p)


@capability("window.timestamp_control")
def test_timestamp_param_sees_assigned_timestamp(runner):
    # A downstream DoFn's TimestampParam is the timestamp assigned upstream (here in another fused or unfused step).
    # (SEMANTICS 10)
    p = runner.pipeline()
    out = (
        p
        | beam.Create([("a", 2.5), ("b", 40)])
        | stamped_by_value()
        | beam.Reshuffle()
        | beam.Map(lambda kv, ts=beam.DoFn.TimestampParam: (kv[0], ts.micros // 1000))
    )
    check(out, [el(("a", 2500), 2.5, GLOBAL, NO_FIRING), el(("b", 40000), 40, GLOBAL, NO_FIRING)])
    runner.run(p)


@capability("window.timestamp_control")
def test_window_into_uses_timestamp_not_value(runner):
    # WindowInto assigns windows from the element's timestamp, never from its value (SEMANTICS 4).
    p = runner.pipeline()
    out = (
        p
        | beam.Create([("k", 1), ("k", 2)])
        | beam.Map(lambda kv: window.TimestampedValue(kv, 100 + kv[1] * 10))
        | beam.WindowInto(window.FixedWindows(10))
        | beam.GroupByKey()
        | sorted_groups()
    )
    check(out, [el(("k", [1]), 119.999, W(110, 120), ON_TIME_ONLY), el(("k", [2]), 129.999, W(120, 130), ON_TIME_ONLY)])
    runner.run(p)


@capability("window.timestamp_control")
def test_timestamps_keep_millisecond_precision(runner):
    # SEMANTICS 1: timestamps are millisecond-granular on the wire; distinct ms timestamps stay distinct.
    p = runner.pipeline()
    stamps = [0.001, 0.002, 1.999, 2.0, 123456.789]
    out = p | beam.Create([("k", t) for t in stamps]) | stamped_by_value() | beam.Reshuffle()
    check(out, [el(("k", t), t, GLOBAL, NO_FIRING) for t in stamps])
    runner.run(p)


# --------------------------------------------------------------------------- custom WindowFns


class ParityWindows(window.NonMergingWindowFn):
    """Non-merging: an element in an even second s goes to [s, s+2), one in an odd second to [s, s+1)."""

    def assign(self, context):
        second = int(math.floor(context.timestamp))
        length = 2 if second % 2 == 0 else 1
        return [window.IntervalWindow(second, second + length)]

    def get_window_coder(self):
        return coders.IntervalWindowCoder()


class SecondAndPairWindows(window.NonMergingWindowFn):
    """Non-merging, two windows per element: its one-second window and its aligned two-second window."""

    def assign(self, context):
        second = int(math.floor(context.timestamp))
        pair = second - second % 2
        return [window.IntervalWindow(second, second + 1), window.IntervalWindow(pair, pair + 2)]

    def get_window_coder(self):
        return coders.IntervalWindowCoder()


class BucketMergingWindows(window.WindowFn):
    """Merging: each element gets [t, t+1); all windows starting in the same 10 s bucket merge into their span."""

    def assign(self, context):
        t = context.timestamp
        return [window.IntervalWindow(t, t + 1)]

    def merge(self, merge_context):
        buckets = {}
        for w in merge_context.windows:
            buckets.setdefault(int(w.start.micros // 10_000_000), []).append(w)
        for ws in buckets.values():
            if len(ws) > 1:
                span = window.IntervalWindow(min(w.start for w in ws), max(w.end for w in ws))
                merge_context.merge(ws, span)

    def get_window_coder(self):
        return coders.IntervalWindowCoder()


@capability("window.custom")
def test_custom_parity_windowfn_with_gbk(runner):
    # A user WindowFn's assignment is honoured by GBK, including overlapping windows of different sizes (SEMANTICS 4).
    p = runner.pipeline()
    data = [("k", t) for t in (0.1, 0.9, 1.5, 2.0, 3.3, 3.9, 4.5)]
    out = (
        p
        | beam.Create(data)
        | stamped_by_value()
        | beam.WindowInto(ParityWindows())
        | beam.GroupByKey()
        | sorted_groups()
    )
    check(
        out,
        [
            el(("k", [0.1, 0.9]), 1.999, W(0, 2), ON_TIME_ONLY),
            el(("k", [1.5]), 1.999, W(1, 2), ON_TIME_ONLY),
            el(("k", [2.0]), 3.999, W(2, 4), ON_TIME_ONLY),
            el(("k", [3.3, 3.9]), 3.999, W(3, 4), ON_TIME_ONLY),
            el(("k", [4.5]), 5.999, W(4, 6), ON_TIME_ONLY),
        ],
    )
    runner.run(p)


@capability("window.custom")
def test_custom_windowfn_assigning_two_windows(runner):
    # A user WindowFn may assign several windows; the element is grouped in each of them (SEMANTICS 4).
    p = runner.pipeline()
    data = [("k", t) for t in (2.2, 3.5, 3.7, 5.0)]
    out = (
        p
        | beam.Create(data)
        | stamped_by_value()
        | beam.WindowInto(SecondAndPairWindows())
        | beam.GroupByKey()
        | sorted_groups()
    )
    check(
        out,
        [
            el(("k", [2.2]), 2.999, W(2, 3), ON_TIME_ONLY),
            el(("k", [3.5, 3.7]), 3.999, W(3, 4), ON_TIME_ONLY),
            el(("k", [2.2, 3.5, 3.7]), 3.999, W(2, 4), ON_TIME_ONLY),
            el(("k", [5.0]), 5.999, W(5, 6), ON_TIME_ONLY),
            el(("k", [5.0]), 5.999, W(4, 6), ON_TIME_ONLY),
        ],
    )
    runner.run(p)


@capability("window.custom_merging")
def test_custom_merging_windowfn_with_gbk(runner):
    # A user merging WindowFn (UsesCustomWindowMerging): GBK merges windows per key exactly as merge() says.
    # (SEMANTICS 4)
    p = runner.pipeline()
    data = [("k", 1), ("k", 3.5), ("k", 8), ("k", 12), ("k", 19.5), ("j", 4)]
    out = (
        p
        | beam.Create(data)
        | stamped_by_value()
        | beam.WindowInto(BucketMergingWindows())
        | beam.GroupByKey()
        | sorted_groups()
    )
    check(
        out,
        [
            el(("k", [1, 3.5, 8]), 8.999, W(1, 9), ON_TIME_ONLY),
            el(("k", [12, 19.5]), 20.499, W(12, 20.5), ON_TIME_ONLY),
            el(("j", [4]), 4.999, W(4, 5), ON_TIME_ONLY),
        ],
    )
    runner.run(p)
