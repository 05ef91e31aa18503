"""Triggers, accumulation modes and PaneInfo (conformance/SEMANTICS.md, sections 4 and 5), driven by TestStream.

Each case feeds one key through a TestStream, one element batch per step wherever pane
contents would otherwise depend on bundling, and moves the watermark and processing time
explicitly, so every pane (values, timestamp, window, PaneInfo) is fixed by the model.

Model facts the expectations rely on (SEMANTICS 5 and the Runner API):
- PaneInfo timing follows EARLY* ON_TIME? LATE*: a pane fired before the input watermark
  passes the window's end is EARLY (nonspeculative index -1), whatever sub-trigger fired
  it; the first pane once it has passed is ON_TIME; every pane after a non-early pane is
  LATE. is_first iff index == 0. is_last iff the trigger finished with this pane or the
  window is garbage-collected (max_timestamp + allowed lateness) with it.
- When the watermark passes a window's garbage-collection time and its trigger has not
  finished, the window emits a final pane. A pane emitted as the watermark jumps past the
  GC time is itself final (apache/beam PR #3429). With allowed lateness 0 the GC time is
  the end of the window, so the on-time pane is the final pane.
- The Python SDK declares OnTimeBehavior FIRE_ALWAYS and ClosingBehavior EMIT_ALWAYS on
  every windowing strategy (transforms/core.py, Windowing.to_runner_api): the ON_TIME pane
  and the final pane are emitted even with nothing new since the previous firing (empty
  when discarding), see the discarding_early_fixed transcript and apache/beam#20108. The cases
  under "empty panes" declare the other behaviors (FIRE_IF_NONEMPTY, EMIT_IF_NONEMPTY) in the
  proto they submit, as the Go and Java SDKs do: then an empty pane is left out (SEMANTICS 5).
- A finished trigger closes its window: later elements for it are dropped.
- With the END_OF_WINDOW timestamp combiner a pane carries the window's max timestamp.
"""

import apache_beam as beam
from apache_beam.portability.api import beam_runner_api_pb2
from apache_beam.transforms import trigger, window
from apache_beam.transforms.core import Windowing

from conformance.api import (
    ACCUMULATING,
    DISCARDING,
    END_OF_GLOBAL_WINDOW,
    GLOBAL,
    TestStream,
    W,
    capability,
    check,
    early_pane,
    el,
    group_panes,
    keyed_at,
    late_pane,
    on_time_pane,
    one_of,
)


def _pipeline(runner):
    # Python refuses at construction a trigger that may finish (AfterCount, AfterEach, AfterAny
    # without Repeatedly) because data after it finishes is dropped; these cases test exactly
    # that behaviour. The flag only affects construction and is not sent to the runner.
    return runner.pipeline("--allow_unsafe_triggers")


def _one_per_step(stream, items):
    """Adds each (value, timestamp) as its own TestStream step."""
    for value, ts in items:
        stream = stream.add_elements([keyed_at(value, ts)])
    return stream


# --------------------------------------------------------------------------- event time


@capability("triggers.event_time")
def test_default_trigger_fires_one_final_on_time_pane_per_window(runner):
    # SEMANTICS 5 transcript fixed_default: watermark 25 fires [0,10){1,2,3} and [10,20){10,11};
    # with allowed lateness 0 each on-time pane is also the final one.
    stream = (
        TestStream()
        .add_elements([keyed_at(t, t) for t in (1, 2, 3, 10, 11)])
        .advance_watermark_to(25)
        .advance_watermark_to_infinity()
    )
    p = _pipeline(runner)
    out = group_panes(p | "Stream" >> stream, window.FixedWindows(10), trigger.DefaultTrigger(), DISCARDING)
    check(
        out,
        [
            el(("k", [1, 2, 3]), 9.999, W(0, 10), on_time_pane(0, last=True)),
            el(("k", [10, 11]), 19.999, W(10, 20), on_time_pane(0, last=True)),
        ],
    )
    runner.run(p)


@capability("triggers.event_time")
def test_default_trigger_fires_merged_sessions_at_watermark(runner):
    # Default trigger over Sessions(10): a@1 and b@2 merge into [1,12), c@15 stays alone in
    # [15,25); one final ON_TIME pane per session when the watermark passes its end (SEMANTICS 4 and 5).
    stream = _one_per_step(TestStream(), [("a", 1), ("b", 2), ("c", 15)]).advance_watermark_to_infinity()
    p = _pipeline(runner)
    out = group_panes(p | "Stream" >> stream, window.Sessions(10), trigger.DefaultTrigger(), DISCARDING)
    check(
        out,
        [
            el(("k", ["a", "b"]), 11.999, W(1, 12), on_time_pane(0, last=True)),
            el(("k", ["c"]), 24.999, W(15, 25), on_time_pane(0, last=True)),
        ],
    )
    runner.run(p)


@capability("triggers.event_time")
def test_on_time_pane_fires_even_when_empty_after_early_panes(runner):
    # SEMANTICS 5 transcript discarding_early_fixed: AfterWatermark(early=AfterCount(2)),
    # discarding; the ON_TIME pane of [10,20) is emitted with no values (the window saw data,
    # OnTimeBehavior FIRE_ALWAYS) and, lateness being 0, both on-time panes are final.
    stream = (
        TestStream()
        .add_elements([keyed_at(1, 1), keyed_at(2, 2)])
        .add_elements([keyed_at(4, 4)])
        .add_elements([keyed_at(14, 14)])
        .add_elements([keyed_at(5, 5)])
        .add_elements([keyed_at(18, 18)])
        .add_elements([keyed_at(6, 6)])
        .advance_watermark_to(100)
        .advance_watermark_to_infinity()
    )
    p = _pipeline(runner)
    trig = trigger.AfterWatermark(early=trigger.AfterCount(2))
    out = group_panes(p | "Stream" >> stream, window.FixedWindows(10), trig, DISCARDING)
    check(
        out,
        [
            el(("k", [1, 2]), 9.999, W(0, 10), early_pane(0)),
            el(("k", [4, 5]), 9.999, W(0, 10), early_pane(1)),
            el(("k", [14, 18]), 19.999, W(10, 20), early_pane(0)),
            el(("k", [6]), 9.999, W(0, 10), on_time_pane(2, last=True)),
            el(("k", []), 19.999, W(10, 20), on_time_pane(1, last=True)),
        ],
    )
    runner.run(p)


@capability("triggers.event_time")
def test_early_on_time_and_late_firings_with_final_pane_at_expiry(runner):
    # AfterWatermark(early=AfterCount(3), late=AfterCount(2)), discarding, lateness 1000
    # (after Python test_fixed_watermark_with_early_late, one element per step): early abc,
    # def; on-time gh; late vw, xy; the pending z is the final pane when the window expires (SEMANTICS 5).
    stream = _one_per_step(TestStream(), zip("abcdefgh", range(8), strict=True))
    stream = _one_per_step(stream.advance_watermark_to(150), zip("vwxyz", range(5), strict=True))
    stream = stream.advance_watermark_to_infinity()
    p = _pipeline(runner)
    trig = trigger.AfterWatermark(early=trigger.AfterCount(3), late=trigger.AfterCount(2))
    out = group_panes(p | "Stream" >> stream, window.FixedWindows(100), trig, DISCARDING, lateness=1000)
    check(
        out,
        [
            el(("k", ["a", "b", "c"]), 99.999, W(0, 100), early_pane(0)),
            el(("k", ["d", "e", "f"]), 99.999, W(0, 100), early_pane(1)),
            el(("k", ["g", "h"]), 99.999, W(0, 100), on_time_pane(2, last=False)),
            el(("k", ["v", "w"]), 99.999, W(0, 100), late_pane(3, 1)),
            el(("k", ["x", "y"]), 99.999, W(0, 100), late_pane(4, 2)),
            el(("k", ["z"]), 99.999, W(0, 100), late_pane(5, 3, last=True)),
        ],
    )
    runner.run(p)


@capability("triggers.event_time")
def test_early_and_late_firings_over_merging_sessions(runner):
    # SEMANTICS 5 transcript early_late_sessions: Sessions(10), AfterWatermark(early=
    # AfterCount(2), late=AfterCount(3)), accumulating, lateness 100.
    # PaneInfo describes the firings of one window. Adding 4 merges [1,12) and [3,13) (and
    # [4,14)) into the new window [1,14), which has never fired, so its first pane is index 0
    # and is_first, as in the transcript; 5 makes yet another new window [1,15), whose
    # on-time pane is again index 0. Java's ReduceFnRunner and Python's trigger driver both
    # drop the pane state of merged-away windows ("not preserved across merges"); the late
    # elements merge into the existing [1,15), which keeps its pane state (index 1, 2).
    # The late phase is the one point where Beam's two reference implementations differ:
    # in the transcript (Python's driver) the late AfterCount(3) fires once all three late
    # elements are in; Java's AfterWatermark state machine "rewinds" when a late element's
    # fresh session window merges in (the early phase is still open in one merging window),
    # so the first late element fires at once and the other two wait for the final pane.
    # Either way [1,15) is still open at expiry and emits its final pane.
    stream = (
        TestStream()
        .add_elements([keyed_at(1, 1), keyed_at(2, 2)])
        .add_elements([keyed_at(3, 3)])
        .add_elements([keyed_at(4, 4)])
        .add_elements([keyed_at(5, 5)])
        .advance_watermark_to(100)
        .add_elements([keyed_at(1, 1)])
        .add_elements([keyed_at(3, 3), keyed_at(4, 4)])
        .advance_watermark_to_infinity()
    )
    p = _pipeline(runner)
    trig = trigger.AfterWatermark(early=trigger.AfterCount(2), late=trigger.AfterCount(3))
    out = group_panes(p | "Stream" >> stream, window.Sessions(10), trig, ACCUMULATING, lateness=100)
    before_late = [
        el(("k", [1, 2]), 11.999, W(1, 12), early_pane(0)),
        el(("k", [1, 2, 3, 4]), 13.999, W(1, 14), early_pane(0)),
        el(("k", [1, 2, 3, 4, 5]), 14.999, W(1, 15), on_time_pane(0, last=False)),
    ]
    everything = [1, 1, 2, 3, 3, 4, 4, 5]
    final = el(("k", everything), 14.999, W(1, 15), late_pane(2, 2, last=True))
    check(
        out,
        one_of(
            before_late + [el(("k", everything), 14.999, W(1, 15), late_pane(1, 1)), final],
            before_late + [el(("k", [1, 1, 2, 3, 4, 5]), 14.999, W(1, 15), late_pane(1, 1)), final],
        ),
    )
    runner.run(p)


@capability("triggers.event_time")
def test_never_trigger_fires_only_when_window_expires(runner):
    # SEMANTICS 5: Never fires only at window garbage collection, emitting the final pane;
    # with lateness 0 that is when the watermark passes the end of the window (ON_TIME).
    stream = _one_per_step(TestStream(), [(1, 1), (2, 2), (12, 12)]).advance_watermark_to_infinity()
    p = _pipeline(runner)
    out = group_panes(p | "Stream" >> stream, window.FixedWindows(10), trigger._Never(), DISCARDING)
    check(
        out,
        [
            el(("k", [1, 2]), 9.999, W(0, 10), on_time_pane(0, last=True)),
            el(("k", [12]), 19.999, W(10, 20), on_time_pane(0, last=True)),
        ],
    )
    runner.run(p)


@capability("triggers.event_time")
def test_earliest_timestamp_ignores_elements_behind_watermark(runner):
    # SEMANTICS 4 transcript known_late_data_watermark: watermark 5, inputs 2,3,7,8 with
    # EARLIEST: 2 and 3 are behind the watermark and cannot hold it, so the pane is at 7.
    stream = (
        TestStream()
        .advance_watermark_to(5)
        .add_elements([keyed_at(t, t) for t in (2, 3, 7, 8)])
        .advance_watermark_to(11)
        .advance_watermark_to_infinity()
    )
    p = _pipeline(runner)
    out = group_panes(
        p | "Stream" >> stream,
        window.FixedWindows(10),
        trigger.DefaultTrigger(),
        DISCARDING,
        timestamp_combiner=window.TimestampCombiner.OUTPUT_AT_EARLIEST,
    )
    check(out, [el(("k", [2, 3, 7, 8]), 7, W(0, 10), on_time_pane(0, last=True))])
    runner.run(p)


@capability("triggers.event_time")
def test_latest_timestamp_ignores_elements_behind_watermark(runner):
    # SEMANTICS 4, the LATEST side of known_late_data_watermark: watermark 5, inputs 2, 3, 7, 8 with
    # LATEST. 2 and 3 are behind the watermark and hold nothing, so the pane is at 8, the latest of
    # the others; their end-of-window hold does not make it 9.999 (Java's WatermarkHold outputs at
    # the earlier of the element holds and that hold; Python's trigger driver adds none for them).
    stream = (
        TestStream()
        .advance_watermark_to(5)
        .add_elements([keyed_at(t, t) for t in (2, 3, 7, 8)])
        .advance_watermark_to(11)
        .advance_watermark_to_infinity()
    )
    p = _pipeline(runner)
    out = group_panes(
        p | "Stream" >> stream,
        window.FixedWindows(10),
        trigger.DefaultTrigger(),
        DISCARDING,
        timestamp_combiner=window.TimestampCombiner.OUTPUT_AT_LATEST,
    )
    check(out, [el(("k", [2, 3, 7, 8]), 8, W(0, 10), on_time_pane(0, last=True))])
    runner.run(p)


@capability("triggers.event_time")
def test_earliest_timestamp_falls_back_to_end_of_window_without_hold(runner):
    # SEMANTICS 4 transcript known_late_data_no_watermark_hold_possible: watermark 8, inputs
    # 2,3,7 all behind it: no element hold is possible and the pane is at end of window (9.999).
    stream = (
        TestStream()
        .advance_watermark_to(8)
        .add_elements([keyed_at(t, t) for t in (2, 3, 7)])
        .advance_watermark_to(11)
        .advance_watermark_to_infinity()
    )
    p = _pipeline(runner)
    out = group_panes(
        p | "Stream" >> stream,
        window.FixedWindows(10),
        trigger.DefaultTrigger(),
        DISCARDING,
        timestamp_combiner=window.TimestampCombiner.OUTPUT_AT_EARLIEST,
    )
    check(out, [el(("k", [2, 3, 7]), 9.999, W(0, 10), on_time_pane(0, last=True))])
    runner.run(p)


@capability("triggers.event_time")
def test_on_time_pane_fires_once_the_watermark_is_past_the_window_max_timestamp(runner):
    """The end of a window, mid-stream: [0,10)'s on-time pane has not fired while the input watermark
    is exactly its max timestamp 9.999, and has fired once the watermark is 10 (1 ms past it).

    The model: a window is complete, and its ON_TIME pane due, once the watermark has passed its
    max timestamp. At watermark 9.999 an element at 9.999 is not late (late iff the window's max
    timestamp is behind the watermark, SEMANTICS 5) and belongs in the on-time pane; at watermark
    10 the pane has fired, so an element at 5 then is late and makes a LATE pane. Beam's trigger
    implementations agree: Java's AfterWatermark and DefaultTrigger state machines fire when the
    event time "isAfter(window.maxTimestamp())", Python's AfterWatermark when "watermark >=
    window.end". Default trigger, accumulating, allowed lateness 100 (late data kept; the final
    pane at expiry repeats the contents, EMIT_ALWAYS)."""
    stream = (
        TestStream()
        .advance_watermark_to(0)
        .add_elements([keyed_at("a", 1)])
        .advance_watermark_to(9.999)
        .add_elements([keyed_at("b", 9.999)])
        .advance_watermark_to(10)
        .add_elements([keyed_at("c", 5)])
        .advance_watermark_to_infinity()
    )
    p = _pipeline(runner)
    out = group_panes(
        p | "Stream" >> stream, window.FixedWindows(10), trigger.DefaultTrigger(), ACCUMULATING, lateness=100
    )
    check(
        out,
        [
            el(("k", ["a", "b"]), 9.999, W(0, 10), on_time_pane(0, last=False)),
            el(("k", ["a", "b", "c"]), 9.999, W(0, 10), late_pane(1, 1)),
            el(("k", ["a", "b", "c"]), 9.999, W(0, 10), late_pane(2, 2, last=True)),
        ],
    )
    runner.run(p)


# --------------------------------------------------------------------------- count


@capability("triggers.count")
def test_after_count_fires_once_then_finishes(runner):
    # SEMANTICS 5: AfterCount(2) fires once the pane holds 2 elements and finishes: that
    # EARLY pane is the last one, and the window drops the later element 3.
    stream = _one_per_step(TestStream(), [(1, 1), (2, 2), (3, 3)]).advance_watermark_to_infinity()
    p = _pipeline(runner)
    out = group_panes(p | "Stream" >> stream, window.FixedWindows(10), trigger.AfterCount(2), ACCUMULATING)
    check(out, [el(("k", [1, 2]), 9.999, W(0, 10), early_pane(0, last=True))])
    runner.run(p)


@capability("triggers.count")
def test_after_count_never_reached_emits_final_pane_at_expiry(runner):
    # A window whose AfterCount(3) never fired still emits its contents when it is garbage
    # collected (the Python FnApiRunner drops this pane, Prism emits it: SEMANTICS 5, peers).
    stream = _one_per_step(TestStream(), [(1, 1), (2, 2)]).advance_watermark_to_infinity()
    p = _pipeline(runner)
    out = group_panes(p | "Stream" >> stream, window.FixedWindows(10), trigger.AfterCount(3), ACCUMULATING)
    check(out, [el(("k", [1, 2]), 9.999, W(0, 10), on_time_pane(0, last=True))])
    runner.run(p)


@capability("triggers.count")
def test_after_count_per_key_in_global_window(runner):
    # Python test_after_count_streaming: AfterCount(3) in the global window fires {1,2,3}
    # per key and finishes, so A's later 4,5,6 are dropped (SEMANTICS 5).
    stream = (
        TestStream()
        .add_elements([keyed_at(v, 0, key="A") for v in (1, 2, 3)])
        .add_elements([keyed_at(v, 0, key="A") for v in (4, 5, 6)])
        .add_elements([keyed_at(v, 0, key="B") for v in (1, 2, 3)])
        .advance_watermark_to_infinity()
    )
    p = _pipeline(runner)
    out = group_panes(p | "Stream" >> stream, window.GlobalWindows(), trigger.AfterCount(3), ACCUMULATING)
    check(
        out,
        [
            el(("A", [1, 2, 3]), END_OF_GLOBAL_WINDOW, GLOBAL, early_pane(0, last=True)),
            el(("B", [1, 2, 3]), END_OF_GLOBAL_WINDOW, GLOBAL, early_pane(0, last=True)),
        ],
    )
    runner.run(p)


# --------------------------------------------------------------------------- processing time


@capability("triggers.processing_time")
def test_early_processing_time_panes_of_window(runner):
    # Java TestStreamTest.testEarlyPanesOfWindow: Fixed(30 min), early AfterProcessingTime(5 min),
    # accumulating; each 6-minute processing-time advance fires an early pane (sums 1, 3, 6),
    # then the watermark fires the final on-time pane {1,2,3} (SEMANTICS 5 and 9).
    stream = (
        TestStream()
        .add_elements([keyed_at(1, 1)])
        .advance_processing_time(360)
        .add_elements([keyed_at(2, 2)])
        .advance_processing_time(360)
        .add_elements([keyed_at(3, 3)])
        .advance_processing_time(360)
        .advance_watermark_to_infinity()
    )
    p = _pipeline(runner)
    trig = trigger.AfterWatermark(early=trigger.AfterProcessingTime(300))
    out = group_panes(p | "Stream" >> stream, window.FixedWindows(1800), trig, ACCUMULATING)
    check(
        out,
        [
            el(("k", [1]), 1799.999, W(0, 1800), early_pane(0)),
            el(("k", [1, 2]), 1799.999, W(0, 1800), early_pane(1)),
            el(("k", [1, 2, 3]), 1799.999, W(0, 1800), early_pane(2)),
            el(("k", [1, 2, 3]), 1799.999, W(0, 1800), on_time_pane(3, last=True)),
        ],
    )
    runner.run(p)


@capability("triggers.processing_time")
def test_after_processing_time_fires_once_then_finishes(runner):
    # AfterProcessingTime(10) fires 10 s (processing time) after the pane's first element and
    # finishes (Python test_after_processing_time): {1,2} is final, 3 arrives to a closed window (SEMANTICS 5 and 9).
    stream = (
        TestStream()
        .add_elements([keyed_at(1, 1)])
        .advance_processing_time(2)
        .add_elements([keyed_at(2, 2)])
        .advance_processing_time(20)
        .add_elements([keyed_at(3, 3)])
        .advance_processing_time(20)
        .advance_watermark_to_infinity()
    )
    p = _pipeline(runner)
    out = group_panes(p | "Stream" >> stream, window.FixedWindows(100), trigger.AfterProcessingTime(10), DISCARDING)
    check(out, [el(("k", [1, 2]), 99.999, W(0, 100), early_pane(0, last=True))])
    runner.run(p)


@capability("triggers.processing_time")
def test_repeatedly_after_processing_time_discarding(runner):
    # Repeatedly(AfterProcessingTime(5)) re-arms from the first element of each new pane:
    # {1,2} fires 6 s after 1, {3} fires 6 s after 3; at the end of the window the final
    # ON_TIME pane is empty (discarding, nothing new; OnTimeBehavior FIRE_ALWAYS; SEMANTICS 5 and 9).
    stream = (
        TestStream()
        .add_elements([keyed_at(1, 1)])
        .advance_processing_time(2)
        .add_elements([keyed_at(2, 2)])
        .advance_processing_time(4)
        .add_elements([keyed_at(3, 3)])
        .advance_processing_time(6)
        .advance_watermark_to_infinity()
    )
    p = _pipeline(runner)
    trig = trigger.Repeatedly(trigger.AfterProcessingTime(5))
    out = group_panes(p | "Stream" >> stream, window.FixedWindows(100), trig, DISCARDING)
    check(
        out,
        [
            el(("k", [1, 2]), 99.999, W(0, 100), early_pane(0)),
            el(("k", [3]), 99.999, W(0, 100), early_pane(1)),
            el(("k", []), 99.999, W(0, 100), on_time_pane(2, last=True)),
        ],
    )
    runner.run(p)


@capability("triggers.processing_time")
def test_processing_time_firing_after_window_expiry_is_ignored(runner):
    # Java GroupByKeyTest.testCombiningAccumulatingProcessingTime: the window expires at
    # watermark 100 (final pane {2,5}, EARLIEST -> 2); its processing-time timer coming due
    # afterwards must not produce a second output (SEMANTICS 5).
    stream = (
        TestStream()
        .advance_watermark_to(0)
        .add_elements([keyed_at(2, 2), keyed_at(5, 5)])
        .advance_watermark_to(100)
        .advance_processing_time(10)
        .advance_watermark_to_infinity()
    )
    p = _pipeline(runner)
    trig = trigger.Repeatedly(trigger.AfterProcessingTime(10))
    out = group_panes(
        p | "Stream" >> stream,
        window.FixedWindows(100),
        trig,
        ACCUMULATING,
        timestamp_combiner=window.TimestampCombiner.OUTPUT_AT_EARLIEST,
    )
    check(out, [el(("k", [2, 5]), 2, W(0, 100), on_time_pane(0, last=True))])
    runner.run(p)


# --------------------------------------------------------------------------- composite


@capability("triggers.composite")
def test_after_all_count_and_watermark_over_sessions(runner):
    # Python test_sessions_after_all: AfterAll(AfterCount(2), AfterWatermark()) on Sessions(10)
    # fires once, when both children have fired: one pane {a,b,c} for [1,13), final (SEMANTICS 5).
    stream = _one_per_step(TestStream(), [("a", 1), ("b", 2), ("c", 3)]).advance_watermark_to_infinity()
    p = _pipeline(runner)
    trig = trigger.AfterAll(trigger.AfterCount(2), trigger.AfterWatermark())
    out = group_panes(p | "Stream" >> stream, window.Sessions(10), trig, ACCUMULATING)
    check(out, [el(("k", ["a", "b", "c"]), 12.999, W(1, 13), on_time_pane(0, last=True))])
    runner.run(p)


@capability("triggers.composite")
def test_after_any_fires_with_first_child_and_finishes(runner):
    # Python test_fixed_after_first: AfterAny(AfterCount(2), AfterWatermark()) fires {a,b}
    # as soon as the count child fires, and finishes: c is dropped (SEMANTICS 5).
    stream = _one_per_step(TestStream(), [("a", 1), ("b", 2), ("c", 3)]).advance_watermark_to_infinity()
    p = _pipeline(runner)
    trig = trigger.AfterAny(trigger.AfterCount(2), trigger.AfterWatermark())
    out = group_panes(p | "Stream" >> stream, window.FixedWindows(10), trig, ACCUMULATING)
    check(out, [el(("k", ["a", "b"]), 9.999, W(0, 10), early_pane(0, last=True))])
    runner.run(p)


@capability("triggers.composite")
def test_after_any_watermark_child_finishes_before_late_data(runner):
    # Python test_fixed_after_first (late data): AfterAny(AfterCount(5), AfterWatermark())
    # fires the on-time pane {a,b,c} and finishes; x,y,z (within lateness 100) are dropped
    # because the window is closed (SEMANTICS 5).
    stream = _one_per_step(TestStream(), [("a", 1), ("b", 2), ("c", 3)]).advance_watermark_to(50)
    stream = _one_per_step(stream, [("x", 1), ("y", 2), ("z", 3)]).advance_watermark_to_infinity()
    p = _pipeline(runner)
    trig = trigger.AfterAny(trigger.AfterCount(5), trigger.AfterWatermark())
    out = group_panes(p | "Stream" >> stream, window.FixedWindows(10), trig, ACCUMULATING, lateness=100)
    check(out, [el(("k", ["a", "b", "c"]), 9.999, W(0, 10), on_time_pane(0, last=True))])
    runner.run(p)


@capability("triggers.composite")
def test_after_each_runs_children_in_sequence(runner):
    # AfterEach(AfterCount(2), AfterCount(3)): the first child fires at 2 elements, the second
    # counts the next 3 and fires at 5; AfterEach then finishes and 6 is dropped (SEMANTICS 5).
    stream = _one_per_step(TestStream(), [(t, t) for t in range(1, 7)]).advance_watermark_to_infinity()
    p = _pipeline(runner)
    trig = trigger.AfterEach(trigger.AfterCount(2), trigger.AfterCount(3))
    out = group_panes(p | "Stream" >> stream, window.FixedWindows(100), trig, ACCUMULATING)
    check(
        out,
        [
            el(("k", [1, 2]), 99.999, W(0, 100), early_pane(0)),
            el(("k", [1, 2, 3, 4, 5]), 99.999, W(0, 100), early_pane(1, last=True)),
        ],
    )
    runner.run(p)


@capability("triggers.composite")
def test_repeatedly_after_any_count_or_watermark(runner):
    # SEMANTICS 5 / Python test_repeatedly_after_first: Repeatedly(AfterAny(AfterCount(3),
    # AfterWatermark())), accumulating: abc, abcdef (count), abcdefg (watermark), then each
    # late element fires at once (+x, +y, +z); the still-open window emits a final pane.
    stream = _one_per_step(TestStream(), zip("abcdefg", range(7), strict=True)).advance_watermark_to(200)
    stream = _one_per_step(stream, zip("xyz", range(3), strict=True)).advance_watermark_to_infinity()
    p = _pipeline(runner)
    trig = trigger.Repeatedly(trigger.AfterAny(trigger.AfterCount(3), trigger.AfterWatermark()))
    out = group_panes(p | "Stream" >> stream, window.FixedWindows(100), trig, ACCUMULATING, lateness=1000)
    check(
        out,
        [
            el(("k", list("abc")), 99.999, W(0, 100), early_pane(0)),
            el(("k", list("abcdef")), 99.999, W(0, 100), early_pane(1)),
            el(("k", list("abcdefg")), 99.999, W(0, 100), on_time_pane(2, last=False)),
            el(("k", list("abcdefgx")), 99.999, W(0, 100), late_pane(3, 1)),
            el(("k", list("abcdefgxy")), 99.999, W(0, 100), late_pane(4, 2)),
            el(("k", list("abcdefgxyz")), 99.999, W(0, 100), late_pane(5, 3)),
            el(("k", list("abcdefgxyz")), 99.999, W(0, 100), late_pane(6, 4, last=True)),
        ],
    )
    runner.run(p)


@capability("triggers.composite")
def test_repeatedly_after_any_count_or_processing_time(runner):
    # Repeatedly(AfterAny(AfterCount(2), AfterProcessingTime(5))), discarding: {1,2} fires by
    # count, {3} by processing time (6 s later); the window's final ON_TIME pane is empty (SEMANTICS 5 and 9).
    stream = (
        TestStream()
        .add_elements([keyed_at(1, 1)])
        .add_elements([keyed_at(2, 2)])
        .add_elements([keyed_at(3, 3)])
        .advance_processing_time(6)
        .advance_watermark_to_infinity()
    )
    p = _pipeline(runner)
    trig = trigger.Repeatedly(trigger.AfterAny(trigger.AfterCount(2), trigger.AfterProcessingTime(5)))
    out = group_panes(p | "Stream" >> stream, window.FixedWindows(100), trig, DISCARDING)
    check(
        out,
        [
            el(("k", [1, 2]), 99.999, W(0, 100), early_pane(0)),
            el(("k", [3]), 99.999, W(0, 100), early_pane(1)),
            el(("k", []), 99.999, W(0, 100), on_time_pane(2, last=True)),
        ],
    )
    runner.run(p)


# --------------------------------------------------------------------------- accumulation


def _early_on_time_late_stream():
    # Early pane at 2 elements, on-time pane at watermark 20, late pane after 2 late
    # elements, and one pending late element for the final pane at expiry.
    stream = _one_per_step(TestStream(), [(1, 1), (2, 2), (3, 3)]).advance_watermark_to(20)
    return _one_per_step(stream, [(4, 4), (5, 5), (6, 6)]).advance_watermark_to_infinity()


_EARLY_LATE_COUNTS = trigger.AfterWatermark(early=trigger.AfterCount(2), late=trigger.AfterCount(2))


@capability("triggers.accumulating")
def test_accumulating_panes_hold_everything_so_far(runner):
    # SEMANTICS 5: ACCUMULATING panes contain every element of the window seen so far,
    # including those of earlier panes (same input and trigger as the discarding case).
    p = _pipeline(runner)
    out = group_panes(
        p | "Stream" >> _early_on_time_late_stream(),
        window.FixedWindows(10),
        _EARLY_LATE_COUNTS,
        ACCUMULATING,
        lateness=50,
    )
    check(
        out,
        [
            el(("k", [1, 2]), 9.999, W(0, 10), early_pane(0)),
            el(("k", [1, 2, 3]), 9.999, W(0, 10), on_time_pane(1, last=False)),
            el(("k", [1, 2, 3, 4, 5]), 9.999, W(0, 10), late_pane(2, 1)),
            el(("k", [1, 2, 3, 4, 5, 6]), 9.999, W(0, 10), late_pane(3, 2, last=True)),
        ],
    )
    runner.run(p)


@capability("triggers.accumulating")
def test_repeatedly_after_count_accumulating(runner):
    # Repeatedly(AfterCount(2)), accumulating: {1,2}, {1,2,3,4}, then the final pane at the
    # end of the window holds all five elements (SEMANTICS 5).
    stream = _one_per_step(TestStream(), [(t, t) for t in range(1, 6)]).advance_watermark_to_infinity()
    p = _pipeline(runner)
    out = group_panes(
        p | "Stream" >> stream, window.FixedWindows(10), trigger.Repeatedly(trigger.AfterCount(2)), ACCUMULATING
    )
    check(
        out,
        [
            el(("k", [1, 2]), 9.999, W(0, 10), early_pane(0)),
            el(("k", [1, 2, 3, 4]), 9.999, W(0, 10), early_pane(1)),
            el(("k", [1, 2, 3, 4, 5]), 9.999, W(0, 10), on_time_pane(2, last=True)),
        ],
    )
    runner.run(p)


@capability("triggers.discarding")
def test_discarding_panes_hold_only_elements_since_last_firing(runner):
    # SEMANTICS 5: DISCARDING panes contain only the elements since the previous firing
    # (same input and trigger as the accumulating case).
    p = _pipeline(runner)
    out = group_panes(
        p | "Stream" >> _early_on_time_late_stream(),
        window.FixedWindows(10),
        _EARLY_LATE_COUNTS,
        DISCARDING,
        lateness=50,
    )
    check(
        out,
        [
            el(("k", [1, 2]), 9.999, W(0, 10), early_pane(0)),
            el(("k", [3]), 9.999, W(0, 10), on_time_pane(1, last=False)),
            el(("k", [4, 5]), 9.999, W(0, 10), late_pane(2, 1)),
            el(("k", [6]), 9.999, W(0, 10), late_pane(3, 2, last=True)),
        ],
    )
    runner.run(p)


@capability("triggers.discarding")
def test_repeatedly_after_count_discarding(runner):
    # Repeatedly(AfterCount(2)), discarding: {1,2}, {3,4}, and the final pane {5} (SEMANTICS 5).
    stream = _one_per_step(TestStream(), [(t, t) for t in range(1, 6)]).advance_watermark_to_infinity()
    p = _pipeline(runner)
    out = group_panes(
        p | "Stream" >> stream, window.FixedWindows(10), trigger.Repeatedly(trigger.AfterCount(2)), DISCARDING
    )
    check(
        out,
        [
            el(("k", [1, 2]), 9.999, W(0, 10), early_pane(0)),
            el(("k", [3, 4]), 9.999, W(0, 10), early_pane(1)),
            el(("k", [5]), 9.999, W(0, 10), on_time_pane(2, last=True)),
        ],
    )
    runner.run(p)


@capability("triggers.discarding")
def test_discarding_mode_java_vector(runner):
    # Java TestStreamTest.testDiscardingMode: Fixed(1 s), early AfterCount(2), late Never,
    # discarding, lateness 5 s: early {firstPane, alsoFirstPane}, on-time {onTimePane}, and
    # the two late elements only in the final pane at expiry (SEMANTICS 5).
    stream = (
        TestStream()
        .advance_watermark_to(0)
        .add_elements([keyed_at("firstPane", 0.1), keyed_at("alsoFirstPane", 0.2)])
        .add_elements([keyed_at("onTimePane", 0.5)])
        .advance_watermark_to(1)
        .add_elements([keyed_at("finalLatePane", 0.75), keyed_at("alsoFinalLatePane", 0.25)])
        .advance_watermark_to_infinity()
    )
    p = _pipeline(runner)
    trig = trigger.AfterWatermark(early=trigger.AfterCount(2), late=trigger._Never())
    out = group_panes(p | "Stream" >> stream, window.FixedWindows(1), trig, DISCARDING, lateness=5)
    check(
        out,
        [
            el(("k", ["alsoFirstPane", "firstPane"]), 0.999, W(0, 1), early_pane(0)),
            el(("k", ["onTimePane"]), 0.999, W(0, 1), on_time_pane(1, last=False)),
            el(("k", ["alsoFinalLatePane", "finalLatePane"]), 0.999, W(0, 1), late_pane(2, 1, last=True)),
        ],
    )
    runner.run(p)


# --------------------------------------------------------------------------- pane info


@capability("triggers.pane_info")
def test_pane_info_through_early_on_time_late_and_final_panes(runner):
    # PaneInfo over a window's life: EARLY panes (nonspeculative -1), the ON_TIME pane (even
    # with nothing new since the last early pane), a LATE pane, and the final pane when the
    # watermark passes max_timestamp + lateness (39.999 < 50); index counts every firing (SEMANTICS 5).
    stream = _one_per_step(TestStream(), [(1, 1), (2, 2)]).advance_watermark_to(15)
    stream = _one_per_step(stream, [(3, 3), (4, 4), (5, 5)]).advance_watermark_to(50)
    stream = stream.advance_watermark_to_infinity()
    p = _pipeline(runner)
    trig = trigger.AfterWatermark(early=trigger.AfterCount(1), late=trigger.AfterCount(2))
    out = group_panes(p | "Stream" >> stream, window.FixedWindows(10), trig, ACCUMULATING, lateness=30)
    check(
        out,
        [
            el(("k", [1]), 9.999, W(0, 10), early_pane(0)),
            el(("k", [1, 2]), 9.999, W(0, 10), early_pane(1)),
            el(("k", [1, 2]), 9.999, W(0, 10), on_time_pane(2, last=False)),
            el(("k", [1, 2, 3, 4]), 9.999, W(0, 10), late_pane(3, 1)),
            el(("k", [1, 2, 3, 4, 5]), 9.999, W(0, 10), late_pane(4, 2, last=True)),
        ],
    )
    runner.run(p)


@capability("triggers.pane_info")
def test_on_time_pane_after_early_pane_is_last_with_zero_lateness(runner):
    # With allowed lateness 0 the ON_TIME pane is the final one: first=False (an early pane
    # fired before), index 1, nonspeculative index 0, last=True (SEMANTICS 5).
    stream = TestStream().add_elements([keyed_at(1, 1)]).advance_watermark_to(20).advance_watermark_to_infinity()
    p = _pipeline(runner)
    trig = trigger.AfterWatermark(early=trigger.AfterCount(1))
    out = group_panes(p | "Stream" >> stream, window.FixedWindows(10), trig, ACCUMULATING)
    check(
        out,
        [
            el(("k", [1]), 9.999, W(0, 10), early_pane(0)),
            el(("k", [1]), 9.999, W(0, 10), on_time_pane(1, last=True)),
        ],
    )
    runner.run(p)


@capability("triggers.pane_info")
def test_pane_indices_are_per_key_and_window(runner):
    # Pane indices count the firings of one key in one window: interleaved keys a and b and
    # a second window of a each start at index 0 (first) and end with their own final
    # on-time pane, empty here because early panes already discarded everything (SEMANTICS 5).
    stream = (
        TestStream()
        .add_elements([keyed_at(1, 1, key="a")])
        .add_elements([keyed_at(2, 2, key="b")])
        .add_elements([keyed_at(3, 3, key="a")])
        .add_elements([keyed_at(12, 12, key="a")])
        .advance_watermark_to_infinity()
    )
    p = _pipeline(runner)
    trig = trigger.AfterWatermark(early=trigger.AfterCount(1))
    out = group_panes(p | "Stream" >> stream, window.FixedWindows(10), trig, DISCARDING)
    check(
        out,
        [
            el(("a", [1]), 9.999, W(0, 10), early_pane(0)),
            el(("a", [3]), 9.999, W(0, 10), early_pane(1)),
            el(("a", []), 9.999, W(0, 10), on_time_pane(2, last=True)),
            el(("b", [2]), 9.999, W(0, 10), early_pane(0)),
            el(("b", []), 9.999, W(0, 10), on_time_pane(1, last=True)),
            el(("a", [12]), 19.999, W(10, 20), early_pane(0)),
            el(("a", []), 19.999, W(10, 20), on_time_pane(1, last=True)),
        ],
    )
    runner.run(p)


# --------------------------------------------------------------------------- empty panes


class _WindowIntoWithBehaviors(beam.WindowInto):
    """WindowInto whose windowing strategy declares the given OnTimeBehavior and ClosingBehavior.
    The Python SDK always declares FIRE_ALWAYS and EMIT_ALWAYS (Windowing.to_runner_api); the Go
    SDK declares FIRE_IF_NONEMPTY and EMIT_IF_NONEMPTY on every strategy, Java FIRE_ALWAYS and,
    by default, EMIT_IF_NONEMPTY (FIRE_IF_NON_EMPTY). Only the proto the runner gets differs: the
    Python SDK's own use of the strategy is unchanged."""

    def __init__(self, windowfn, trigger_fn, mode, lateness, *, on_time, closing):
        super().__init__(windowfn, trigger=trigger_fn, accumulation_mode=mode, allowed_lateness=lateness)
        self.windowing = _Behaviors(self.windowing, on_time, closing)


class _Behaviors(Windowing):
    def __init__(self, windowing: Windowing, on_time, closing):
        super().__init__(
            windowing.windowfn,
            windowing.triggerfn,
            windowing.accumulation_mode,
            windowing.timestamp_combiner,
            windowing.allowed_lateness,
            windowing.environment_id,
        )
        self.on_time, self.closing = on_time, closing

    def to_runner_api(self, context):
        proto = super().to_runner_api(context)
        proto.on_time_behavior, proto.closing_behavior = self.on_time, self.closing
        return proto


def _early_then_late_stream():
    """1 and 2 fire an EARLY pane; the watermark passes [0,10) with nothing new since; 3 arrives
    late; the window is collected (lateness 100) with nothing new since 3's pane."""
    stream = _one_per_step(TestStream(), [(1, 1), (2, 2)]).advance_watermark_to(50)
    return stream.add_elements([keyed_at(3, 3)]).advance_watermark_to_infinity()


def _empty_pane_panes(runner, on_time, closing):
    p = _pipeline(runner)
    trig = trigger.AfterWatermark(early=trigger.AfterCount(2), late=trigger.AfterCount(1))
    windowed = (
        p
        | "Stream" >> _early_then_late_stream()
        | "Window"
        >> _WindowIntoWithBehaviors(window.FixedWindows(10), trig, DISCARDING, 100, on_time=on_time, closing=closing)
    )
    return p, group_panes(windowed)


@capability("triggers.pane_info")
def test_empty_on_time_and_final_panes_are_left_out_if_nonempty_is_asked(runner):
    # OnTimeBehavior FIRE_IF_NONEMPTY and ClosingBehavior EMIT_IF_NONEMPTY (the Go SDK's strategy):
    # "only fire the on-time pane if there is new data since the previous firing", "only emit
    # output when new data has arrived since the last output" (beam_runner_api.proto; Java's
    # ReduceFnRunner.needToEmit). So neither the empty on-time pane at watermark 50 nor the empty
    # final pane at collection is emitted, and no emitted pane is last. The on-time firing still
    # happened: 3's pane is LATE (Java's PaneInfoTracker: the output watermark is past the window),
    # index 1, nonspeculative index 0 (the first non-early pane emitted; SEMANTICS 5).
    p, out = _empty_pane_panes(
        runner,
        beam_runner_api_pb2.OnTimeBehavior.FIRE_IF_NONEMPTY,
        beam_runner_api_pb2.ClosingBehavior.EMIT_IF_NONEMPTY,
    )
    check(
        out,
        [
            el(("k", [1, 2]), 9.999, W(0, 10), early_pane(0)),
            el(("k", [3]), 9.999, W(0, 10), late_pane(1, 0)),
        ],
    )
    runner.run(p)


@capability("triggers.pane_info")
def test_empty_on_time_pane_fires_but_empty_final_pane_is_left_out_by_java_defaults(runner):
    # Java's default strategy: OnTimeBehavior FIRE_ALWAYS, ClosingBehavior EMIT_IF_NONEMPTY. The
    # empty on-time pane is emitted; the empty final pane at collection is not, so 3's LATE pane
    # is the window's last emitted pane without being marked last (SEMANTICS 5).
    p, out = _empty_pane_panes(
        runner, beam_runner_api_pb2.OnTimeBehavior.FIRE_ALWAYS, beam_runner_api_pb2.ClosingBehavior.EMIT_IF_NONEMPTY
    )
    check(
        out,
        [
            el(("k", [1, 2]), 9.999, W(0, 10), early_pane(0)),
            el(("k", []), 9.999, W(0, 10), on_time_pane(1, last=False)),
            el(("k", [3]), 9.999, W(0, 10), late_pane(2, 1)),
        ],
    )
    runner.run(p)


@capability("triggers.composite")
def test_repeatedly_after_count_leaves_out_the_empty_final_pane_if_nonempty_is_asked(runner):
    # The Go SDK's TestTriggerRepeat, one element per step: Repeatedly(AfterCount(2)) in the global
    # window under the Go SDK's EMIT_IF_NONEMPTY fires [1,2], [3,4], [5,6]; when the window is
    # collected nothing is new, so there is no fourth, empty, pane (SEMANTICS 5).
    stream = _one_per_step(TestStream(), [(v, v) for v in range(1, 7)]).advance_watermark_to_infinity()
    p = _pipeline(runner)
    windowed = (
        p
        | "Stream" >> stream
        | "Window"
        >> _WindowIntoWithBehaviors(
            window.GlobalWindows(),
            trigger.Repeatedly(trigger.AfterCount(2)),
            DISCARDING,
            0,
            on_time=beam_runner_api_pb2.OnTimeBehavior.FIRE_IF_NONEMPTY,
            closing=beam_runner_api_pb2.ClosingBehavior.EMIT_IF_NONEMPTY,
        )
    )
    check(
        group_panes(windowed),
        [
            el(("k", [1, 2]), END_OF_GLOBAL_WINDOW, GLOBAL, early_pane(0)),
            el(("k", [3, 4]), END_OF_GLOBAL_WINDOW, GLOBAL, early_pane(1)),
            el(("k", [5, 6]), END_OF_GLOBAL_WINDOW, GLOBAL, early_pane(2)),
        ],
    )
    runner.run(p)
