"""Beam's own composite transforms over unbounded input: TestStreams, and PeriodicImpulse /
PeriodicSequence (unbounded splittable DoFns on the wall clock, no TestStream).

TestStream semantics the expectations rely on (as in test_side_inputs_streaming.py): each event
is applied once the pipeline has processed everything earlier events made processable, so a
main-input element waiting for its side window is processed right after the event that made
the window ready, before the next event; a trigger sees elements one event at a time. The cases
with a main and a side input feed both from one single-output TestStream of tagged elements split
downstream (conformance.api.TaggedTestStream): one ordered sequence of events, one watermark for
both inputs (test_side_inputs_streaming.py says why that keeps the semantics of a TestStream with
two outputs whose watermarks move together).
"""

import time

import apache_beam as beam
from apache_beam.coders import coders
from apache_beam.pvalue import AsDict
from apache_beam.transforms import trigger, window
from apache_beam.transforms.deduplicate import Deduplicate
from apache_beam.transforms.periodicsequence import PeriodicImpulse, PeriodicSequence
from apache_beam.utils.timestamp import Duration, Timestamp

from conformance.api import (
    ACCUMULATING,
    DISCARDING,
    GLOBAL,
    MIN_TIMESTAMP,
    TaggedTestStream,
    TestStream,
    W,
    capability,
    check,
    el,
    pane,
)


def _elements(stream, *batches):
    """One add_elements event per batch of (value, t)."""
    for batch in batches:
        stream = stream.add_elements([window.TimestampedValue(v, t) for v, t in batch])
    return stream


# --------------------------------------------------------------------------- CombineGlobally's default


@capability("library.combine_globally_default_streaming")
def test_combine_globally_default_over_triggered_stream(runner):
    # Python's CombineGlobally with its default emits one value: the single injection element
    # reads the combined output as a side input. Over a stream fired by Repeatedly(AfterCount(2))
    # it waits for the first pane (a triggered side window is ready once a pane fired) and sees
    # that pane alone: 1 + 2. Later panes (10 accumulated) come after it was processed. (Python
    # logs that a default over unbounded, non-default windowing is ill-defined and suggests
    # without_defaults(); it still builds this expansion, which must not fail; SEMANTICS 6 and 9)
    p = runner.pipeline()
    stream = _elements(TestStream(coder=coders.VarIntCoder()), [(1, 1)], [(2, 2)], [(3, 3)], [(4, 4)])
    out = (
        p
        | stream.advance_watermark_to_infinity()
        | beam.WindowInto(
            window.GlobalWindows(), trigger=trigger.Repeatedly(trigger.AfterCount(2)), accumulation_mode=ACCUMULATING
        )
        | beam.CombineGlobally(sum)
    )
    check(out, [el(3, MIN_TIMESTAMP, GLOBAL)])
    runner.run(p)


@capability("library.combine_globally_default_streaming")
def test_combine_globally_default_over_empty_stream(runner):
    # An unbounded input that never has an element: no pane fires, the side window becomes ready
    # when the watermark passes the end of the global window, and the default is emitted once (SEMANTICS 6 and 9).
    p = runner.pipeline()
    stream = TestStream(coder=coders.VarIntCoder()).advance_watermark_to(10).advance_watermark_to_infinity()
    out = (
        p
        | stream
        | beam.WindowInto(
            window.GlobalWindows(), trigger=trigger.Repeatedly(trigger.AfterCount(1)), accumulation_mode=DISCARDING
        )
        | beam.CombineGlobally(sum)
    )
    check(out, [el(0, MIN_TIMESTAMP, GLOBAL)])
    runner.run(p)


# --------------------------------------------------------------------------- triggered GroupByKey as side input

TAGS = ("main", "side")


def _two_streams(*steps):
    """The tagged stream of "main" and "side": (tag, [(value, t), ...]) adds a batch to one."""
    stream = TaggedTestStream(*TAGS)
    for tag, batch in steps:
        stream = stream.add_elements(tag, [window.TimestampedValue(v, t) for v, t in batch])
    return stream.advance_watermark_to_infinity()


_SIDE_AND_MAIN = (
    ("side", [(("a", 1), 1)]),
    ("main", [("x", 2)]),
    ("side", [(("a", 2), 3)]),
    ("side", [(("b", 5), 12)]),
    ("main", [("y", 4), ("z", 15), ("v", 25)]),
    ("side", [(("a", 3), 5)]),
    ("main", [("w", 6)]),
    ("side", [(("c", 7), 27)]),
)


def _read_grouped_side(runner, mode):
    """Side (key, value) pairs in fixed 10 s windows, grouped by a GroupByKey firing after every
    element; main elements read the grouped side input as a dict in their own window."""
    p = runner.pipeline()
    streams = p | _two_streams(*_SIDE_AND_MAIN)
    grouped = (
        streams["side"]
        | "SideWindows"
        >> beam.WindowInto(
            window.FixedWindows(10), trigger=trigger.Repeatedly(trigger.AfterCount(1)), accumulation_mode=mode
        )
        | beam.GroupByKey()
        | beam.MapTuple(lambda k, vs: (k, sorted(vs)))
    )
    out = (
        streams["main"]
        | "MainWindows" >> beam.WindowInto(window.FixedWindows(10))
        | beam.Map(lambda m, side: (m, sorted(side.items())), AsDict(grouped))
    )
    return p, out


@capability("library.triggered_gbk_side_input")
def test_triggered_group_by_key_as_side_input_accumulating(runner):
    # SEMANTICS 6: per window, a reader sees the latest fired pane of its own window. Accumulating:
    # x sees [1]; y, after a's second pane, [1, 2]; z in [10, 20) only b's pane; v in [20, 30)
    # waits for the first pane of its window; w sees a's third pane.
    p, out = _read_grouped_side(runner, ACCUMULATING)
    check(
        out,
        [
            el(("x", [("a", [1])]), 2, W(0, 10)),
            el(("y", [("a", [1, 2])]), 4, W(0, 10)),
            el(("z", [("b", [5])]), 15, W(10, 20)),
            el(("w", [("a", [1, 2, 3])]), 6, W(0, 10)),
            el(("v", [("c", [7])]), 25, W(20, 30)),
        ],
    )
    runner.run(p)


@capability("library.triggered_gbk_side_input")
def test_triggered_group_by_key_as_side_input_discarding(runner):
    # Discarding: the latest pane holds only what arrived since the previous firing (SEMANTICS 5 and 6).
    p, out = _read_grouped_side(runner, DISCARDING)
    check(
        out,
        [
            el(("x", [("a", [1])]), 2, W(0, 10)),
            el(("y", [("a", [2])]), 4, W(0, 10)),
            el(("z", [("b", [5])]), 15, W(10, 20)),
            el(("w", [("a", [3])]), 6, W(0, 10)),
            el(("v", [("c", [7])]), 25, W(20, 30)),
        ],
    )
    runner.run(p)


# --------------------------------------------------------------------------- Reshuffle


@capability("library.reshuffle_streaming")
def test_reshuffle_keeps_panes_of_triggered_input(runner):
    # Early, on-time and late panes of a triggered GroupByKey keep their PaneInfo, timestamp and
    # window through a Reshuffle (Beam 2.65+: Reshuffle preserves PaneInfo; SEMANTICS 5 and 10).
    p = runner.pipeline("--allow_unsafe_triggers")
    stream = (
        TestStream()
        .add_elements([window.TimestampedValue(("k", 1), 1)])
        .add_elements([window.TimestampedValue(("k", 2), 2)])
        .advance_watermark_to(10)
        .add_elements([window.TimestampedValue(("k", 3), 3)])
        .advance_watermark_to_infinity()
    )
    out = (
        p
        | stream
        | beam.WindowInto(
            window.FixedWindows(10),
            trigger=trigger.AfterWatermark(early=trigger.AfterCount(1), late=trigger.AfterCount(1)),
            allowed_lateness=100,
            accumulation_mode=ACCUMULATING,
        )
        | beam.GroupByKey()
        | beam.MapTuple(lambda k, vs: (k, sorted(vs)))
        | beam.Reshuffle()
    )
    check(
        out,
        [
            el(("k", [1]), 9.999, W(0, 10), pane(True, False, "EARLY", 0, -1)),
            el(("k", [1, 2]), 9.999, W(0, 10), pane(False, False, "EARLY", 1, -1)),
            el(("k", [1, 2]), 9.999, W(0, 10), pane(False, False, "ON_TIME", 2, 0)),
            el(("k", [1, 2, 3]), 9.999, W(0, 10), pane(False, False, "LATE", 3, 1)),
            el(("k", [1, 2, 3]), 9.999, W(0, 10), pane(False, True, "LATE", 4, 2)),
        ],
    )
    runner.run(p)


# --------------------------------------------------------------------------- Deduplicate


@capability("library.deduplicate_streaming")
def test_deduplicate_event_time_over_a_stream(runner):
    # Deduplicate(event_time_duration=10 s): a copy within 10 s of event time after the first is
    # dropped; once the watermark passes the first copy's time + 10 s its record is gone, so a
    # later copy is emitted again (and its own copies dropped; SEMANTICS 7 and 9).
    p = runner.pipeline()
    stream = TestStream(coder=coders.StrUtf8Coder())
    stream = _elements(stream, [("a", 1), ("b", 2)], [("a", 5)])
    stream = _elements(stream.advance_watermark_to(20), [("a", 21)], [("a", 22), ("b", 23)])
    out = p | stream.advance_watermark_to_infinity() | Deduplicate(event_time_duration=Duration(seconds=10))
    check(out, [el("a", 1, GLOBAL), el("b", 2, GLOBAL), el("a", 21, GLOBAL), el("b", 23, GLOBAL)])
    runner.run(p)


@capability("library.deduplicate_streaming")
def test_deduplicate_processing_time_over_a_stream(runner):
    # Deduplicate(processing_time_duration=10 min): copies arriving 5 s of processing time after
    # the first are dropped. (Whether a copy after the duration is emitted depends on the
    # runner's processing time meeting the DoFn's wall-clock timer, which the model leaves open; SEMANTICS 7 and 9)
    p = runner.pipeline()
    stream = TestStream(coder=coders.StrUtf8Coder())
    stream = _elements(stream, [("a", 1)]).advance_processing_time(5)
    stream = _elements(stream, [("a", 2), ("b", 3)]).advance_processing_time(5)
    stream = _elements(stream, [("b", 4), ("a", 5)])
    out = p | stream.advance_watermark_to_infinity() | Deduplicate(processing_time_duration=Duration(seconds=600))
    check(out, [el("a", 1, GLOBAL), el("b", 3, GLOBAL)])
    runner.run(p)


# --------------------------------------------------------------------------- PeriodicImpulse / PeriodicSequence

_PAST = 1_600_000_000  # 2020-09-13: a range long past, so every element is due at once


@capability("library.periodic_impulse")
def test_periodic_impulse_over_a_past_range(runner):
    # PeriodicImpulse(start, stop, interval): one element per interval in [start, stop), its value
    # and event timestamp the fire time; with apply_windowing each in its own fixed window of one
    # interval, so a per-window count after it fires once per window (SEMANTICS 4 and 10).
    p = runner.pipeline()
    ticks = p | PeriodicImpulse(
        start_timestamp=Timestamp(_PAST), stop_timestamp=Timestamp(_PAST + 5), fire_interval=1, apply_windowing=True
    )
    check(
        ticks | "Seconds" >> beam.Map(lambda t: float(t)),
        [el(float(_PAST + i), _PAST + i, W(_PAST + i, _PAST + i + 1)) for i in range(5)],
        label="ticks",
    )
    counts = ticks | beam.Map(lambda t: 1) | beam.CombineGlobally(sum).without_defaults()
    check(counts, [el(1, _PAST + i + 0.999, W(_PAST + i, _PAST + i + 1)) for i in range(5)], label="per_window")
    runner.run(p)


@capability("library.periodic_impulse")
def test_periodic_impulse_with_data(runner):
    # With data=[...], the i-th element carries data[i] instead of its timestamp, at the same time (SEMANTICS 10).
    p = runner.pipeline()
    out = p | PeriodicImpulse(
        start_timestamp=Timestamp(_PAST), stop_timestamp=Timestamp(_PAST + 1.5), fire_interval=0.5, data=["a", "b", "c"]
    )
    check(out, [el("a", _PAST, GLOBAL), el("b", _PAST + 0.5, GLOBAL), el("c", _PAST + 1, GLOBAL)])
    runner.run(p)


@capability("library.periodic_impulse")
def test_periodic_sequence_from_several_inputs(runner):
    # PeriodicSequence: each input (start, stop, interval) gives its own sequence (SEMANTICS 10).
    p = runner.pipeline()
    out = (
        p
        | beam.Create(
            [(Timestamp(_PAST), Timestamp(_PAST + 3), 1), (Timestamp(_PAST + 100), Timestamp(_PAST + 102), 2)]
        )
        | PeriodicSequence()
        | beam.Map(lambda t: float(t))
    )
    check(out, [el(float(t), t, GLOBAL) for t in (_PAST, _PAST + 1, _PAST + 2, _PAST + 100)])
    runner.run(p)


@capability("library.periodic_impulse")
def test_periodic_impulse_reaching_into_the_future(runner):
    # A range ending about a second and a half after the pipeline is built: elements are emitted as
    # the wall clock reaches them, none early, and the pipeline ends once the range is done (SEMANTICS 10).
    start = Timestamp(int(time.time()))  # a whole second: the expected times are exact
    p = runner.pipeline()
    out = (
        p
        | PeriodicImpulse(start_timestamp=start, stop_timestamp=start + Duration(seconds=2.5), fire_interval=0.5)
        | beam.Map(lambda t: (float(t), time.time() >= float(t)))
    )
    check(out, [el((float(start) + 0.5 * i, True), float(start) + 0.5 * i, GLOBAL) for i in range(5)])
    runner.run(p)
