"""Allowed lateness and late data (conformance/SEMANTICS.md, section 5), driven by TestStream.

Every case drives a single key through a TestStream, one element batch per step, and
advances the watermark explicitly, so the pane boundaries are fixed by the model.

Model facts the expectations rely on (SEMANTICS 5 and the Runner API):
- An element is droppable iff window.max_timestamp + allowed_lateness < input watermark;
  a window is garbage-collected once the input watermark passes that time.
- PaneInfo: is_first iff index == 0; nonspeculative_index is -1 for EARLY panes; once the
  ON_TIME pane (or any non-early pane) has fired, every later pane is LATE.
- When a window is garbage-collected while its trigger is still open, a final pane
  (is_last) is emitted. The Python SDK declares ClosingBehavior EMIT_ALWAYS on every
  windowing strategy it submits (transforms/core.py, Windowing.to_runner_api), so this
  final pane is emitted even when nothing arrived since the previous firing (it then
  repeats the accumulated contents, or is empty when discarding); Beam's maintainers
  confirmed the direct runner's failure to do so is a bug (apache/beam#20108).
- A pane emitted when the watermark jumps past the garbage-collection time is itself the
  final pane (EOW and GC handled together, apache/beam PR #3429).
- With the END_OF_WINDOW timestamp combiner every pane, late or final, carries the
  window's max timestamp (9.999 for [0, 10)).
"""

from apache_beam.transforms import trigger, window

from conformance.api import (
    ACCUMULATING,
    DISCARDING,
    TestStream,
    W,
    capability,
    check,
    el,
    group_panes,
    keyed_at,
    late_pane,
    on_time_pane,
)


@capability("lateness.allowed")
def test_fixed_default_late_data_refires_accumulated_window(runner):
    # SEMANTICS 5 transcript fixed_default_late_data (lateness 100, default trigger,
    # accumulating): on-time panes, then a LATE pane [0,10){1,2,3,7}; at expiry (watermark
    # to infinity) every window still open emits its final pane (EMIT_ALWAYS).
    stream = (
        TestStream()
        .add_elements([keyed_at(t, t) for t in (1, 2, 3, 10, 11, 25)])
        .advance_watermark_to(100)
        .add_elements([keyed_at(7, 7)])
        .advance_watermark_to_infinity()
    )
    p = runner.pipeline()
    out = group_panes(p | "Stream" >> stream, window.FixedWindows(10), trigger.DefaultTrigger(), ACCUMULATING, 100)
    check(
        out,
        [
            el(("k", [1, 2, 3]), 9.999, W(0, 10), on_time_pane(0, last=False)),
            el(("k", [10, 11]), 19.999, W(10, 20), on_time_pane(0, last=False)),
            el(("k", [25]), 29.999, W(20, 30), on_time_pane(0, last=False)),
            el(("k", [1, 2, 3, 7]), 9.999, W(0, 10), late_pane(1, 1)),
            # Final panes at garbage collection: nothing new arrived, EMIT_ALWAYS still fires.
            el(("k", [1, 2, 3, 7]), 9.999, W(0, 10), late_pane(2, 2, last=True)),
            el(("k", [10, 11]), 19.999, W(10, 20), late_pane(1, 1, last=True)),
            el(("k", [25]), 29.999, W(20, 30), late_pane(1, 1, last=True)),
        ],
    )
    runner.run(p)


@capability("lateness.dropping")
def test_fixed_drop_late_data_after_allowed_lateness(runner):
    # SEMANTICS 5 transcript fixed_drop_late_data_after_allowed_lateness (lateness 20):
    # 7,8 and 17,18 arrive after their windows expired (GC 29.999/39.999 < watermark 100)
    # and are dropped; 82 makes a late pane [80,90){80,81,82}. Windows [0,10) and [10,20)
    # are already past GC when they first fire, so that single pane is also the final one.
    stream = (
        TestStream()
        .add_elements([keyed_at(t, t) for t in (1, 2, 10, 11, 80, 81)])
        .advance_watermark_to(100)
        .add_elements([keyed_at(7, 7), keyed_at(8, 8)])
        .add_elements([keyed_at(17, 17), keyed_at(18, 18)])
        .add_elements([keyed_at(82, 82)])
        .advance_watermark_to_infinity()
    )
    p = runner.pipeline()
    trig = trigger.AfterWatermark(early=trigger.AfterCount(3), late=trigger.AfterCount(1))
    out = group_panes(p | "Stream" >> stream, window.FixedWindows(10), trig, ACCUMULATING, 20)
    check(
        out,
        [
            el(("k", [1, 2]), 9.999, W(0, 10), on_time_pane(0, last=True)),
            el(("k", [10, 11]), 19.999, W(10, 20), on_time_pane(0, last=True)),
            el(("k", [80, 81]), 89.999, W(80, 90), on_time_pane(0, last=False)),
            el(("k", [80, 81, 82]), 89.999, W(80, 90), late_pane(1, 1)),
            # Expiry of [80, 90) with the late trigger still open: final pane (EMIT_ALWAYS).
            el(("k", [80, 81, 82]), 89.999, W(80, 90), late_pane(2, 2, last=True)),
        ],
    )
    runner.run(p)


@capability("lateness.dropping")
def test_first_element_far_behind_watermark_is_dropped(runner):
    # Java TestStreamTest.testFirstElementLate: watermark 0, element at -1000 s with 5 s
    # lateness is droppable (-999.001 + 5 < 0) and never appears; the on-time element does (SEMANTICS 5).
    stream = (
        TestStream()
        .advance_watermark_to(0)
        .add_elements([keyed_at("late", -1000)])
        .add_elements([keyed_at("onTime", 0.1)])
        .advance_watermark_to_infinity()
    )
    p = runner.pipeline()
    out = group_panes(p | "Stream" >> stream, window.FixedWindows(1), trigger.DefaultTrigger(), DISCARDING, 5)
    check(out, [el(("k", ["onTime"]), 0.999, W(0, 1), on_time_pane(0, last=True))])
    runner.run(p)


@capability("lateness.allowed")
def test_late_data_in_discarding_mode_fires_only_new_elements(runner):
    # Default trigger, discarding, lateness 100: each late element makes a LATE pane holding
    # only itself; the final pane at expiry is empty (nothing new since the last firing; SEMANTICS 5).
    stream = (
        TestStream()
        .add_elements([keyed_at(1, 1), keyed_at(2, 2)])
        .advance_watermark_to(50)
        .add_elements([keyed_at(7, 7)])
        .add_elements([keyed_at(8, 8)])
        .advance_watermark_to_infinity()
    )
    p = runner.pipeline()
    out = group_panes(p | "Stream" >> stream, window.FixedWindows(10), trigger.DefaultTrigger(), DISCARDING, 100)
    check(
        out,
        [
            el(("k", [1, 2]), 9.999, W(0, 10), on_time_pane(0, last=False)),
            el(("k", [7]), 9.999, W(0, 10), late_pane(1, 1)),
            el(("k", [8]), 9.999, W(0, 10), late_pane(2, 2)),
            el(("k", []), 9.999, W(0, 10), late_pane(3, 3, last=True)),
        ],
    )
    runner.run(p)


@capability("lateness.allowed")
def test_element_exactly_at_lateness_horizon_is_kept(runner):
    # Droppable iff max_timestamp + lateness < watermark: with watermark 14.999 ==
    # 9.999 + 5 the element at 3 is late but kept, and fires a LATE pane (SEMANTICS 5).
    stream = (
        TestStream()
        .add_elements([keyed_at(1, 1)])
        .advance_watermark_to(12)
        .advance_watermark_to(14.999)
        .add_elements([keyed_at(3, 3)])
        .advance_watermark_to_infinity()
    )
    p = runner.pipeline()
    out = group_panes(p | "Stream" >> stream, window.FixedWindows(10), trigger.DefaultTrigger(), ACCUMULATING, 5)
    check(
        out,
        [
            el(("k", [1]), 9.999, W(0, 10), on_time_pane(0, last=False)),
            el(("k", [1, 3]), 9.999, W(0, 10), late_pane(1, 1)),
            el(("k", [1, 3]), 9.999, W(0, 10), late_pane(2, 2, last=True)),
        ],
    )
    runner.run(p)


@capability("lateness.dropping")
def test_element_one_ms_past_lateness_horizon_is_dropped(runner):
    # Watermark 15 > 9.999 + 5: window [0,10) is expired (its final pane fires as the
    # watermark passes the GC time) and the element at 3 is dropped; 13 in [10,20) is kept (SEMANTICS 5).
    stream = (
        TestStream()
        .add_elements([keyed_at(1, 1)])
        .advance_watermark_to(12)
        .advance_watermark_to(15)
        .add_elements([keyed_at(3, 3)])
        .add_elements([keyed_at(13, 13)])
        .advance_watermark_to_infinity()
    )
    p = runner.pipeline()
    out = group_panes(p | "Stream" >> stream, window.FixedWindows(10), trigger.DefaultTrigger(), ACCUMULATING, 5)
    check(
        out,
        [
            el(("k", [1]), 9.999, W(0, 10), on_time_pane(0, last=False)),
            el(("k", [1]), 9.999, W(0, 10), late_pane(1, 1, last=True)),
            el(("k", [13]), 19.999, W(10, 20), on_time_pane(0, last=True)),
        ],
    )
    runner.run(p)


@capability("lateness.dropping")
def test_zero_lateness_drops_data_behind_watermark(runner):
    # Allowed lateness 0: once the watermark (10) passes [0,10)'s end its on-time pane is
    # final and a later element at 5 is dropped; 15 in the open window [10,20) is kept (SEMANTICS 5).
    stream = (
        TestStream()
        .add_elements([keyed_at(1, 1)])
        .advance_watermark_to(10)
        .add_elements([keyed_at(5, 5)])
        .add_elements([keyed_at(15, 15)])
        .advance_watermark_to_infinity()
    )
    p = runner.pipeline()
    out = group_panes(p | "Stream" >> stream, window.FixedWindows(10), trigger.DefaultTrigger(), DISCARDING, 0)
    check(
        out,
        [
            el(("k", [1]), 9.999, W(0, 10), on_time_pane(0, last=True)),
            el(("k", [15]), 19.999, W(10, 20), on_time_pane(0, last=True)),
        ],
    )
    runner.run(p)


@capability("lateness.dropping")
def test_element_behind_watermark_in_open_window_is_not_late(runner):
    # Lateness is judged by the window, not the element: with watermark 5 an element at 2
    # still belongs to the open window [0,10) and joins its single on-time pane (lateness 0; SEMANTICS 5).
    stream = (
        TestStream()
        .add_elements([keyed_at(1, 1)])
        .advance_watermark_to(5)
        .add_elements([keyed_at(2, 2)])
        .advance_watermark_to_infinity()
    )
    p = runner.pipeline()
    out = group_panes(p | "Stream" >> stream, window.FixedWindows(10), trigger.DefaultTrigger(), DISCARDING, 0)
    check(out, [el(("k", [1, 2]), 9.999, W(0, 10), on_time_pane(0, last=True))])
    runner.run(p)


@capability("lateness.allowed")
def test_late_data_accumulating_then_dropped_after_expiry(runner):
    # Java TestStreamTest.testLateDataAccumulating (Fixed 5 min, early +2 min processing
    # time, late count 1, accumulating, lateness 5 min; the Python SDK always declares
    # EMIT_ALWAYS, Java's FIRE_ALWAYS): on-time {1,2,3}, late panes, final pane {1..5};
    # the elements arriving after watermark 20 min are dropped (SEMANTICS 5).
    stream = (
        TestStream()
        .add_elements([keyed_at(1, 0), keyed_at(2, 0), keyed_at(3, 0)])
        .advance_watermark_to(360)
        .add_elements([keyed_at(4, 0)])
        .add_elements([keyed_at(5, 0)])
        .advance_watermark_to(1200)
        .add_elements([keyed_at(-1, 0), keyed_at(-2, 0), keyed_at(-3, 0)])
        .advance_watermark_to_infinity()
    )
    p = runner.pipeline()
    trig = trigger.AfterWatermark(early=trigger.AfterProcessingTime(120), late=trigger.AfterCount(1))
    out = group_panes(p | "Stream" >> stream, window.FixedWindows(300), trig, ACCUMULATING, 300)
    check(
        out,
        [
            el(("k", [1, 2, 3]), 299.999, W(0, 300), on_time_pane(0, last=False)),
            el(("k", [1, 2, 3, 4]), 299.999, W(0, 300), late_pane(1, 1)),
            el(("k", [1, 2, 3, 4, 5]), 299.999, W(0, 300), late_pane(2, 2)),
            el(("k", [1, 2, 3, 4, 5]), 299.999, W(0, 300), late_pane(3, 3, last=True)),
        ],
    )
    runner.run(p)


@capability("lateness.allowed")
def test_first_pane_of_window_receiving_only_late_data_is_late(runner):
    # A window whose first element arrives after the watermark passed its end (but within
    # lateness) fires a first pane that is LATE with index 0 and nonspeculative index 0 (SEMANTICS 5).
    stream = TestStream().advance_watermark_to(50).add_elements([keyed_at(3, 3)]).advance_watermark_to_infinity()
    p = runner.pipeline()
    out = group_panes(p | "Stream" >> stream, window.FixedWindows(10), trigger.DefaultTrigger(), ACCUMULATING, 100)
    check(
        out,
        [
            el(("k", [3]), 9.999, W(0, 10), late_pane(0, 0)),
            el(("k", [3]), 9.999, W(0, 10), late_pane(1, 1, last=True)),
        ],
    )
    runner.run(p)


@capability("lateness.dropping")
def test_element_in_an_expired_and_a_live_sliding_window_is_kept_only_in_the_live_one(runner):
    """At a GroupByKey, lateness is judged per window: an element whose windows are one expired and
    one live is dropped from the first and grouped in the second.

    An element in several windows is one element per window (Runner Authoring Guide, "there is no
    such thing as an element in multiple windows"); droppable iff that window's max timestamp +
    allowed lateness < input watermark (SEMANTICS 5); Beam's Java LateDataDroppingDoFnRunner
    explodes the windows and drops each expired copy alone (counted in droppedDueToLateness).
    SlidingWindows(10, 5), allowed lateness 2, default trigger, accumulating. Watermark 11.999:
    [0,10) fired on time {a} and is not yet expired (9.999 + 2 is not behind it), so b makes a
    LATE pane there, and waits in [5,15). Watermark 12: [0,10) expires and emits its final pane
    (EMIT_ALWAYS); c then counts only in [5,15); d at 4 is in [-5,5) and [0,10), both expired: no
    pane anywhere. [5,15) fires once, at the end of the input, on time and final."""
    stream = (
        TestStream()
        .advance_watermark_to(0)
        .add_elements([keyed_at("a", 7)])
        .advance_watermark_to(11.999)
        .add_elements([keyed_at("b", 8)])
        .advance_watermark_to(12)
        .add_elements([keyed_at("c", 9)])
        .add_elements([keyed_at("d", 4)])
        .advance_watermark_to_infinity()
    )
    p = runner.pipeline()
    out = group_panes(p | "Stream" >> stream, window.SlidingWindows(10, 5), trigger.DefaultTrigger(), ACCUMULATING, 2)
    check(
        out,
        [
            el(("k", ["a"]), 9.999, W(0, 10), on_time_pane(0, last=False)),
            el(("k", ["a", "b"]), 9.999, W(0, 10), late_pane(1, 1)),
            el(("k", ["a", "b"]), 9.999, W(0, 10), late_pane(2, 2, last=True)),
            el(("k", ["a", "b", "c"]), 14.999, W(5, 15), on_time_pane(0, last=True)),
        ],
    )
    runner.run(p)
