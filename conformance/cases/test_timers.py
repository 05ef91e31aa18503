"""Timers in a stateful ParDo (conformance/SEMANTICS.md, section 7).

Event-time timers fire when the input watermark passes them, per key in timestamp order,
in the window of the element that set them; their output is stamped with the firing time.
Setting a timer again overwrites it; clear() cancels it.

What Beam 2.77's Python SDK exposes: TimerSpec(name, TimeDomain.WATERMARK | REAL_TIME),
@on_timer, timer.set(ts, dynamic_timer_tag=...) / clear(dynamic_timer_tag=...) and
DoFn.DynamicTimerTagParam (timer families). It has no withOutputTimestamp (event-time
timers always hold and stamp at their firing time), no OnWindowExpiration and no
RequiresTimeSortedInput. The last two are Runner API features (ParDoPayload fields
on_window_expiration_timer_family_spec and requires_time_sorted_input, with their
pipeline requirements), so their cases set those fields on the submitted pipeline directly.
"""

import typing

import apache_beam as beam
from apache_beam.coders import coders
from apache_beam.portability import common_urns
from apache_beam.transforms import window
from apache_beam.transforms.timeutil import TimeDomain
from apache_beam.transforms.userstate import BagStateSpec, ReadModifyWriteStateSpec, TimerSpec, on_timer
from apache_beam.utils.timestamp import Timestamp

from conformance.api import GLOBAL, NO_FIRING, TestStream, W, capability, check, el, keyed_at, keyed_input, one_of, pane

StateParam = beam.DoFn.StateParam
TimerParam = beam.DoFn.TimerParam
KeyParam = beam.DoFn.KeyParam
WindowParam = beam.DoFn.WindowParam
TimestampParam = beam.DoFn.TimestampParam


def _secs(ts):
    return ts.micros / 1_000_000


# --------------------------------------------------------------------------- timers.event_time


class _TimerAtValue(beam.DoFn):
    """Sets an event-time timer at the element's value (seconds); the callback reports key and time."""

    FIRE = TimerSpec("fire", TimeDomain.WATERMARK)

    def process(self, kv, fire=TimerParam(FIRE)):
        fire.set(kv[1])

    @on_timer(FIRE)
    def fired(self, key=KeyParam, ts=TimestampParam):
        yield key, _secs(ts)


@capability("timers.event_time")
def test_event_time_timer_output_stamped_at_firing_time_in_element_window(runner):
    # SEMANTICS 7: timer output defaults to the firing time and lies in the window of the element that set it.
    p = runner.pipeline()
    out = (
        keyed_input(p, [("k", 7, 3), ("k", 17, 14), ("j", 8, 3)])
        | beam.WindowInto(window.FixedWindows(10))
        | beam.ParDo(_TimerAtValue())
    )
    check(out, [el(("k", 7.0), 7, W(0, 10)), el(("k", 17.0), 17, W(10, 20)), el(("j", 8.0), 8, W(0, 10))])
    runner.run(p)


@capability("timers.event_time")
def test_event_time_timer_in_global_window(runner):
    # A timer set in the global window fires at its time, output stamped with it, in the global window (SEMANTICS 7).
    p = runner.pipeline()
    out = keyed_input(p, [("k", 100, 5), ("j", 42, 50)]) | beam.ParDo(_TimerAtValue())
    check(out, [el(("k", 100.0), 100, GLOBAL), el(("j", 42.0), 42, GLOBAL)])
    runner.run(p)


@capability("timers.event_time")
def test_element_and_timer_at_the_end_of_the_global_window(runner):
    """An element stamped with the global window's max timestamp, arriving when the watermark is
    exactly there, is on time: its window expires only once the watermark passes that max timestamp
    (+ allowed lateness 0). So it is processed, and the timer it sets at its own timestamp fires when
    the watermark goes to infinity (Java testEventTimeTimerAlignAfterGcTimeUnbounded; SEMANTICS 7).
    The max timestamp is Beam's GLOBAL_WINDOW_MAX_TIMESTAMP_MILLIS, which Java's and Go's global
    window report; Python's GlobalWindow().max_timestamp() is one microsecond short of it."""
    end = Timestamp(micros=int(common_urns.constants.GLOBAL_WINDOW_MAX_TIMESTAMP_MILLIS.constant) * 1000)

    class Fn(beam.DoFn):
        AT = TimerSpec("at", TimeDomain.WATERMARK)

        def process(self, kv, at=TimerParam(AT), ts=TimestampParam):
            at.set(ts)
            yield kv[0], "element"

        @on_timer(AT)
        def fired(self, key=KeyParam):
            yield key, "timer"

    stream = TestStream().advance_watermark_to(end).add_elements([window.TimestampedValue(("k", 1), end)])
    p = runner.pipeline()
    out = p | stream.advance_watermark_to_infinity() | beam.ParDo(Fn())
    check(out, [("k", "element"), ("k", "timer")])
    runner.run(p)


@capability("timers.event_time")
def test_event_time_timer_within_allowed_lateness(runner):
    # SEMANTICS 7 (testEventTimeTimerSetWithinAllowedLateness): Fixed(10 s), lateness 10 s, element at 5 s,
    # timer at 15 s fires with timestamp 15 s, still in window [0,10).
    p = runner.pipeline()
    out = (
        keyed_input(p, [("k", 15, 5)])
        | beam.WindowInto(window.FixedWindows(10), allowed_lateness=10)
        | beam.ParDo(_TimerAtValue())
    )
    check(out, [el(("k", 15.0), 15, W(0, 10))])
    runner.run(p)


@capability("timers.event_time")
def test_timer_received_in_original_sliding_windows(runner):
    # SEMANTICS 7 (testTimerReceivedInOriginalWindow): an element in three sliding windows sets a timer in
    # each; each fires in its own window (at that window's max timestamp).
    class Fn(beam.DoFn):
        END = TimerSpec("end", TimeDomain.WATERMARK)

        def process(self, kv, end=TimerParam(END), w=WindowParam):
            end.set(w.max_timestamp())

        @on_timer(END)
        def at_end(self, w=WindowParam):
            yield _secs(w.start), _secs(w.end)

    p = runner.pipeline()
    out = keyed_input(p, [("k", 0, 7)]) | beam.WindowInto(window.SlidingWindows(15, 5)) | beam.ParDo(Fn())
    check(
        out, [el((-5.0, 10.0), 9.999, W(-5, 10)), el((0.0, 15.0), 14.999, W(0, 15)), el((5.0, 20.0), 19.999, W(5, 20))]
    )
    runner.run(p)


@capability("timers.strict_ordering")
def test_timers_of_a_key_fire_in_timestamp_order(runner):
    # SEMANTICS 7: the timers of a key fire in timestamp order (set at 30, 10, 20 -> fire 10, 20, 30).
    class Fn(beam.DoFn):
        FIRED = ReadModifyWriteStateSpec("fired", coders.VarIntCoder())
        T_A = TimerSpec("a", TimeDomain.WATERMARK)
        T_B = TimerSpec("b", TimeDomain.WATERMARK)
        T_C = TimerSpec("c", TimeDomain.WATERMARK)

        def process(self, kv, a=TimerParam(T_A), b=TimerParam(T_B), c=TimerParam(T_C)):
            a.set(30)
            b.set(10)
            c.set(20)

        def _position(self, fired):
            n = fired.read() or 0
            fired.write(n + 1)
            return n

        @on_timer(T_A)
        def on_a(self, fired=StateParam(FIRED)):
            yield "a", self._position(fired)

        @on_timer(T_B)
        def on_b(self, fired=StateParam(FIRED)):
            yield "b", self._position(fired)

        @on_timer(T_C)
        def on_c(self, fired=StateParam(FIRED)):
            yield "c", self._position(fired)

    p = runner.pipeline()
    out = keyed_input(p, [("k", 0, 1)]) | beam.ParDo(Fn())
    check(out, [el(("b", 0), 10), el(("c", 1), 20), el(("a", 2), 30)])
    runner.run(p)


@capability("timers.event_time")
def test_two_timers_setting_each_other(runner):
    # SEMANTICS 7 (testTwoTimersSettingEachOther): t1 and t2 set each other one second apart; the
    # interleaved firings produce 0..100, each at its own timestamp.
    class Fn(beam.DoFn):
        N = ReadModifyWriteStateSpec("n", coders.VarIntCoder())
        T1 = TimerSpec("t1", TimeDomain.WATERMARK)
        T2 = TimerSpec("t2", TimeDomain.WATERMARK)

        def process(self, kv, t1=TimerParam(T1)):
            t1.set(0)

        def _step(self, n_state, ts):
            n = n_state.read() or 0
            n_state.write(n + 1)
            return n, ts + 1 if n < 100 else None

        @on_timer(T1)
        def on_t1(self, ts=TimestampParam, n=StateParam(N), t2=TimerParam(T2)):
            value, nxt = self._step(n, ts)
            if nxt is not None:
                t2.set(nxt)
            yield "t1", value

        @on_timer(T2)
        def on_t2(self, ts=TimestampParam, n=StateParam(N), t1=TimerParam(T1)):
            value, nxt = self._step(n, ts)
            if nxt is not None:
                t1.set(nxt)
            yield "t2", value

    p = runner.pipeline()
    out = keyed_input(p, [("k", 0, 0)]) | beam.ParDo(Fn())
    check(out, [el(("t1" if i % 2 == 0 else "t2", i), i) for i in range(101)])
    runner.run(p)


@capability("timers.event_time")
def test_timer_callback_flushes_buffered_state_per_window(runner):
    # Buffering in state and flushing at window end: one output per key and window, holding its elements (SEMANTICS 7).
    class Fn(beam.DoFn):
        BUF = BagStateSpec("buf", coders.VarIntCoder())
        FLUSH = TimerSpec("flush", TimeDomain.WATERMARK)

        def process(self, kv, buf=StateParam(BUF), flush=TimerParam(FLUSH), w=WindowParam):
            buf.add(kv[1])
            flush.set(w.max_timestamp())

        @on_timer(FLUSH)
        def on_flush(self, key=KeyParam, buf=StateParam(BUF)):
            yield key, sorted(buf.read())
            buf.clear()

    p = runner.pipeline()
    data = [("a", 1, 1), ("a", 2, 2), ("a", 3, 13), ("b", 4, 4), ("a", 5, 9)]
    out = keyed_input(p, data) | beam.WindowInto(window.FixedWindows(10)) | beam.ParDo(Fn())
    check(
        out, [el(("a", [1, 2, 5]), 9.999, W(0, 10)), el(("a", [3]), 19.999, W(10, 20)), el(("b", [4]), 9.999, W(0, 10))]
    )
    runner.run(p)


class _TimerAndProbes(beam.DoFn):
    """("set", "t") arms an event-time timer at t seconds (written as text, so that every event is
    a pair of strings: one standard coder for the stream); ("probe", label) reports whether it has
    fired yet (its callback notes the firing in state)."""

    FIRED = ReadModifyWriteStateSpec("fired", coders.BooleanCoder())
    FIRE = TimerSpec("fire", TimeDomain.WATERMARK)

    def process(self, kv, fire=TimerParam(FIRE), fired=StateParam(FIRED)):
        what, arg = kv[1]
        if what == "set":
            fire.set(float(arg))
        else:
            yield "probe", arg, bool(fired.read())

    @on_timer(FIRE)
    def on_fire(self, ts=TimestampParam, fired=StateParam(FIRED)):
        fired.write(True)
        yield "fired", _secs(ts), True


@capability("timers.event_time")
def test_event_time_timer_fires_once_the_watermark_is_past_it_not_at_it(runner):
    """The boundary of an event-time timer, mid-stream: a timer set for 5 s has not fired while the
    input watermark is exactly 5 s, and has fired once it is 5.001 s (the least watermark past it).

    The model: a timer at T is eligible to fire only once the watermark has moved past T (T <
    watermark). A watermark of T still admits elements at T (an element is late only if its
    window's max timestamp is behind the watermark), which may reset or read what the timer would
    act on. Beam states it in its Flink runner (DoFnOperator.adjustTimestampForFlink: "In Beam, a
    timer with timestamp T is only eligible for firing when the time has moved past this time
    stamp, i.e. T < current_time", BEAM-3863); runners-core's InMemoryTimerInternals, behind the
    Java DirectRunner and other Java runners, fires event-time timers strictly before the input
    watermark; the programming guide: timers fire "when the input watermark ... passes" their time.
    Probes after each step read (in state) whether the callback ran: TestStream applies each
    event once the effects of the earlier ones are processed, so a timer that fired in a step is
    seen by the probe after it (SEMANTICS 7 and 9)."""
    stream = (
        TestStream()
        .advance_watermark_to(0)
        .add_elements([keyed_at(("set", "5"), 1)])
        .advance_watermark_to(5)
        .add_elements([keyed_at(("probe", "watermark at 5"), 5)])
        .advance_watermark_to(5.001)
        .add_elements([keyed_at(("probe", "watermark at 5.001"), 5.001)])
        .advance_watermark_to_infinity()
    )
    p = runner.pipeline()
    out = p | stream | beam.ParDo(_TimerAndProbes()).with_output_types(typing.Any)
    check(
        out,
        [
            el(("probe", "watermark at 5", False), 5, GLOBAL),
            el(("fired", 5.0, True), 5, GLOBAL),
            el(("probe", "watermark at 5.001", True), 5.001, GLOBAL),
        ],
    )
    runner.run(p)


# --------------------------------------------------------------------------- timers.clear_reset


@capability("timers.clear_reset")
def test_setting_timer_again_overwrites_it(runner):
    # SEMANTICS 7 (testEventTimeTimerCanBeReset): setting the same timer twice leaves one firing, at the last time.
    class Fn(beam.DoFn):
        FIRE = TimerSpec("fire", TimeDomain.WATERMARK)

        def process(self, kv, fire=TimerParam(FIRE)):
            fire.set(10)
            fire.set(kv[1])

        @on_timer(FIRE)
        def fired(self, key=KeyParam, ts=TimestampParam):
            yield key, _secs(ts)

    p = runner.pipeline()
    out = keyed_input(p, [("k", 20, 1), ("j", 5, 1)]) | beam.ParDo(Fn())
    check(out, [el(("k", 20.0), 20), el(("j", 5.0), 5)])
    runner.run(p)


@capability("timers.clear_reset")
def test_timer_reset_by_later_elements_fires_once(runner):
    # Each element resets the key's timer to (latest element time + 10); it fires once, after all of them (SEMANTICS 7).
    class Fn(beam.DoFn):
        LATEST = ReadModifyWriteStateSpec("latest", coders.VarIntCoder())
        SEEN = ReadModifyWriteStateSpec("seen", coders.VarIntCoder())
        FIRE = TimerSpec("fire", TimeDomain.WATERMARK)

        def process(
            self, kv, latest=StateParam(LATEST), seen=StateParam(SEEN), fire=TimerParam(FIRE), ts=TimestampParam
        ):
            t = max(latest.read() or 0, int(_secs(ts)))
            latest.write(t)
            seen.write((seen.read() or 0) + 1)
            fire.set(t + 10)

        @on_timer(FIRE)
        def fired(self, key=KeyParam, seen=StateParam(SEEN)):
            yield key, seen.read()

    p = runner.pipeline()
    out = keyed_input(p, [("k", 0, 1), ("k", 0, 5), ("k", 0, 3), ("j", 0, 2)]) | beam.ParDo(Fn())
    check(out, [el(("k", 3), 15), el(("j", 1), 12)])
    runner.run(p)


@capability("timers.clear_reset")
def test_cleared_timer_does_not_fire(runner):
    # SEMANTICS 7: clear() cancels a set timer.
    class Fn(beam.DoFn):
        FIRE = TimerSpec("fire", TimeDomain.WATERMARK)

        def process(self, kv, fire=TimerParam(FIRE)):
            fire.set(10)
            fire.clear()
            yield "processed", kv[0]

        @on_timer(FIRE)
        def fired(self, key=KeyParam):
            yield "fired", key

    p = runner.pipeline()
    out = keyed_input(p, [("k", 0, 1), ("j", 0, 2)]) | beam.ParDo(Fn())
    check(out, [el(("processed", "k"), 1, GLOBAL, NO_FIRING), el(("processed", "j"), 2, GLOBAL, NO_FIRING)])
    runner.run(p)


@capability("timers.clear_reset")
def test_timer_set_after_clear_fires(runner):
    # clear() then set(): the later set wins and the timer fires once (SEMANTICS 7).
    class Fn(beam.DoFn):
        FIRE = TimerSpec("fire", TimeDomain.WATERMARK)

        def process(self, kv, fire=TimerParam(FIRE)):
            fire.set(10)
            fire.clear()
            fire.set(kv[1])

        @on_timer(FIRE)
        def fired(self, key=KeyParam, ts=TimestampParam):
            yield key, _secs(ts)

    p = runner.pipeline()
    out = keyed_input(p, [("k", 30, 1)]) | beam.ParDo(Fn())
    check(out, [el(("k", 30.0), 30)])
    runner.run(p)


@capability("timers.strict_ordering")
def test_timer_cleared_by_an_earlier_timer(runner):
    # A timer at 20 clears a pending timer at 50 of the same key: only the one at 20 fires (SEMANTICS 7).
    class Fn(beam.DoFn):
        TARGET = TimerSpec("target", TimeDomain.WATERMARK)
        CANCEL = TimerSpec("cancel", TimeDomain.WATERMARK)

        def process(self, kv, target=TimerParam(TARGET), cancel=TimerParam(CANCEL)):
            target.set(50)
            cancel.set(20)

        @on_timer(CANCEL)
        def on_cancel(self, key=KeyParam, target=TimerParam(TARGET)):
            target.clear()
            yield "cancel", key

        @on_timer(TARGET)
        def on_target(self, key=KeyParam):
            yield "target", key

    p = runner.pipeline()
    out = keyed_input(p, [("k", 0, 1)]) | beam.ParDo(Fn())
    check(out, [el(("cancel", "k"), 20)])
    runner.run(p)


@capability("timers.strict_ordering")
def test_timer_moved_earlier_by_another_timer(runner):
    # A timer at 20 resets a pending timer at 50 to 30: it fires once, at 30 (SEMANTICS 7).
    class Fn(beam.DoFn):
        TARGET = TimerSpec("target", TimeDomain.WATERMARK)
        MOVE = TimerSpec("move", TimeDomain.WATERMARK)

        def process(self, kv, target=TimerParam(TARGET), move=TimerParam(MOVE)):
            target.set(50)
            move.set(20)

        @on_timer(MOVE)
        def on_move(self, target=TimerParam(TARGET)):
            target.set(30)

        @on_timer(TARGET)
        def on_target(self, key=KeyParam, ts=TimestampParam):
            yield key, _secs(ts)

    p = runner.pipeline()
    out = keyed_input(p, [("k", 0, 1)]) | beam.ParDo(Fn())
    check(out, [el(("k", 30.0), 30)])
    runner.run(p)


# --------------------------------------------------------------------------- timers.looping


class _Loop(beam.DoFn):
    """Arms a timer 10 s after the element; each firing re-arms it 10 s later until `value` firings."""

    N = ReadModifyWriteStateSpec("n", coders.VarIntCoder())
    BOUND = ReadModifyWriteStateSpec("bound", coders.VarIntCoder())
    LOOP = TimerSpec("loop", TimeDomain.WATERMARK)

    def process(self, kv, bound=StateParam(BOUND), loop=TimerParam(LOOP), ts=TimestampParam):
        bound.write(kv[1])
        loop.set(ts + 10)

    @on_timer(LOOP)
    def tick(self, key=KeyParam, ts=TimestampParam, n=StateParam(N), bound=StateParam(BOUND), loop=TimerParam(LOOP)):
        count = (n.read() or 0) + 1
        n.write(count)
        if count < bound.read():
            loop.set(ts + 10)
        yield key, count


@capability("timers.looping")
def test_looping_timer_rearms_until_bound(runner):
    # A timer re-arming itself from its callback fires again each time, until the bound (5) stops it (SEMANTICS 7).
    p = runner.pipeline()
    out = keyed_input(p, [("k", 5, 0)]) | beam.ParDo(_Loop())
    check(out, [el(("k", i), 10 * i) for i in range(1, 6)])
    runner.run(p)


@capability("timers.looping")
def test_looping_timers_of_different_keys_are_independent(runner):
    # Looping timers of two keys run side by side with their own state and bounds (SEMANTICS 7).
    p = runner.pipeline()
    out = keyed_input(p, [("a", 3, 1), ("b", 2, 4)]) | beam.ParDo(_Loop())
    check(out, [el(("a", 1), 11), el(("a", 2), 21), el(("a", 3), 31), el(("b", 1), 14), el(("b", 2), 24)])
    runner.run(p)


@capability("timers.looping")
def test_looping_timer_in_fixed_window_stays_in_window(runner):
    # A loop re-arming every 3 s while the next firing stays inside the window: element at 1 in [0,10)
    # fires at 4 and 7 (10 would leave the window), every firing in [0,10) (SEMANTICS 7).
    class Fn(beam.DoFn):
        N = ReadModifyWriteStateSpec("n", coders.VarIntCoder())
        LOOP = TimerSpec("loop", TimeDomain.WATERMARK)

        def process(self, kv, loop=TimerParam(LOOP), ts=TimestampParam):
            loop.set(ts + 3)

        @on_timer(LOOP)
        def tick(self, key=KeyParam, ts=TimestampParam, w=WindowParam, n=StateParam(N), loop=TimerParam(LOOP)):
            count = (n.read() or 0) + 1
            n.write(count)
            if ts + 3 < w.end and count < 20:  # the count bound only guards against a runaway loop
                loop.set(ts + 3)
            yield key, count

    p = runner.pipeline()
    out = keyed_input(p, [("k", 0, 1)]) | beam.WindowInto(window.FixedWindows(10)) | beam.ParDo(Fn())
    check(out, [el(("k", 1), 4, W(0, 10)), el(("k", 2), 7, W(0, 10))])
    runner.run(p)


# --------------------------------------------------------------------------- timers.families


class _Family(beam.DoFn):
    """Per element, sets (or, for time None, clears) timers of one family: value = [(tag, time), ...]."""

    FAMILY = TimerSpec("family", TimeDomain.WATERMARK)

    def process(self, kv, family=TimerParam(FAMILY)):
        for tag, when in kv[1]:
            if when is None:
                family.clear(dynamic_timer_tag=tag)
            else:
                family.set(when, dynamic_timer_tag=tag)

    @on_timer(FAMILY)
    def fired(self, key=KeyParam, tag=beam.DoFn.DynamicTimerTagParam, ts=TimestampParam):
        yield key, tag, _secs(ts)


class _OrderedFamily(_Family):
    """Like _Family, but each firing also reports how many timers of its key fired before it."""

    FAMILY = TimerSpec("family", TimeDomain.WATERMARK)
    FIRED = ReadModifyWriteStateSpec("fired", coders.VarIntCoder())

    def process(self, kv, family=TimerParam(FAMILY)):
        for tag, when in kv[1]:
            family.set(when, dynamic_timer_tag=tag)

    @on_timer(FAMILY)
    def fired(self, key=KeyParam, tag=beam.DoFn.DynamicTimerTagParam, fired=StateParam(FIRED)):
        n = fired.read() or 0
        fired.write(n + 1)
        yield key, tag, n


@capability("timers.families")
def test_timer_family_tags_fire_independently(runner):
    # Timers of one family with different dynamic tags are independent timers: each fires at its own time (SEMANTICS 7).
    p = runner.pipeline()
    data = [("k", [("x", 30), ("y", 10), ("z", 20)], 1), ("j", [("x", 15)], 1)]
    out = keyed_input(p, data) | beam.ParDo(_Family())
    check(out, [el(("k", "y", 10.0), 10), el(("k", "z", 20.0), 20), el(("k", "x", 30.0), 30), el(("j", "x", 15.0), 15)])
    runner.run(p)


@capability("timers.strict_ordering")
def test_timer_family_tags_fire_in_timestamp_order(runner):
    # SEMANTICS 7: timers of a key fire in timestamp order, across the tags of a family too.
    p = runner.pipeline()
    data = [("k", [("x", 30), ("y", 10), ("z", 20)], 1)]
    out = keyed_input(p, data) | beam.ParDo(_OrderedFamily())
    check(out, [el(("k", "y", 0), 10), el(("k", "z", 1), 20), el(("k", "x", 2), 30)])
    runner.run(p)


@capability("timers.families")
def test_timer_family_reset_and_clear_apply_per_tag(runner):
    # Re-setting a tag overwrites only that tag's timer; clearing a tag cancels only that tag (SEMANTICS 7).
    p = runner.pipeline()
    data = [("k", [("x", 10), ("y", 20), ("z", 25), ("x", 40), ("z", None)], 1)]
    out = keyed_input(p, data) | beam.ParDo(_Family())
    check(out, [el(("k", "y", 20.0), 20), el(("k", "x", 40.0), 40)])
    runner.run(p)


# --------------------------------------------------------------------------- timers.output_timestamp


@capability("timers.output_timestamp")
def test_timer_output_timestamp_defaults_to_firing_time(runner):
    # SEMANTICS 7: an event-time timer's output timestamp defaults to its firing time: the callback's
    # timestamp and its outputs' timestamps are the firing time (13), not the setting element's (3).
    class Fn(beam.DoFn):
        FIRE = TimerSpec("fire", TimeDomain.WATERMARK)

        def process(self, kv, fire=TimerParam(FIRE)):
            fire.set(13)

        @on_timer(FIRE)
        def fired(self, ts=TimestampParam):
            yield "callback-timestamp", _secs(ts)

    p = runner.pipeline()
    out = keyed_input(p, [("k", 0, 3)]) | beam.WindowInto(window.FixedWindows(20)) | beam.ParDo(Fn())
    check(out, [el(("callback-timestamp", 13.0), 13, W(0, 20))])
    runner.run(p)


@capability("timers.output_timestamp")
def test_timer_output_keeps_window_for_downstream_grouping(runner):
    # Timer output stamped 15 in window [0,10) (lateness 10) stays in [0,10): a downstream GroupByKey
    # groups it with that window's elements, not into [10,20). The pending timer holds the ParDo's
    # output watermark at 15, not before the window's end (9.999), so the model lets the GroupByKey
    # fire [0,10)'s on-time pane with the element before the timer fires; the timer's output then
    # comes in a late pane of the same window (within the lateness, never dropped). Either way both
    # land in [0,10) (SEMANTICS 7).
    class Fn(beam.DoFn):
        FIRE = TimerSpec("fire", TimeDomain.WATERMARK)

        def process(self, kv, fire=TimerParam(FIRE)):
            fire.set(15)
            yield kv

        @on_timer(FIRE)
        def fired(self, key=KeyParam):
            yield key, "timer"

    p = runner.pipeline()
    out = (
        keyed_input(p, [("k", "elem", 5)])
        | beam.WindowInto(window.FixedWindows(10), allowed_lateness=10)
        | beam.ParDo(Fn())
        | beam.GroupByKey()
        | beam.MapTuple(lambda k, vs: (k, sorted(vs)))
    )
    check(
        out,
        one_of(
            [el(("k", ["elem", "timer"]), window=W(0, 10))],
            [el(("k", ["elem"]), window=W(0, 10)), el(("k", ["timer"]), window=W(0, 10))],
        ),
    )
    runner.run(p)


@capability("timers.output_timestamp")
def test_pending_timer_holds_output_watermark(runner):
    # SEMANTICS 7: a pending event-time timer holds the output watermark at its output timestamp (8), so its
    # output is on time for a downstream GroupByKey even though the input watermark jumped to 30 at once.
    class Fn(beam.DoFn):
        FIRE = TimerSpec("fire", TimeDomain.WATERMARK)

        def process(self, kv, fire=TimerParam(FIRE)):
            fire.set(8)
            yield kv

        @on_timer(FIRE)
        def fired(self, key=KeyParam):
            yield key, "timer"

    stream = (
        TestStream()
        .advance_watermark_to(0)
        .add_elements([window.TimestampedValue(("k", "elem"), 1)])
        .advance_watermark_to(30)
        .advance_watermark_to_infinity()
    )
    p = runner.pipeline()
    out = (
        p
        | stream
        | beam.WindowInto(window.FixedWindows(10))
        | beam.ParDo(Fn())
        | beam.GroupByKey()
        | beam.MapTuple(lambda k, vs: (k, sorted(vs)))
    )
    check(out, [el(("k", ["elem", "timer"]), 9.999, W(0, 10), pane(timing="ON_TIME"))])
    runner.run(p)


# --------------------------------------------------------------------------- timers.processing_time


class _ProcessingTimer(beam.DoFn):
    """Sets a processing-time timer at the element's value (seconds, a number or its text; text
    "+d": d seconds after the harness's wall-clock now); its callback marks the key as fired. The
    value "probe" instead reports whether it has fired yet."""

    FIRED = ReadModifyWriteStateSpec("fired", coders.BooleanCoder())
    PT = TimerSpec("pt", TimeDomain.REAL_TIME)

    def process(self, kv, pt=TimerParam(PT), fired=StateParam(FIRED)):
        if kv[1] == "probe":
            yield kv[0], "probe", bool(fired.read())
        elif str(kv[1]).startswith("+"):
            pt.set(Timestamp.now() + float(kv[1][1:]))
        else:
            pt.set(float(kv[1]))

    @on_timer(PT)
    def on_pt(self, key=KeyParam, fired=StateParam(FIRED)):
        fired.write(True)
        yield key, "fired", True


@capability("timers.processing_time")
def test_processing_time_timer_fires_in_element_window(runner):
    # A processing-time timer whose time has come (set for processing time 1, clock advanced to 20) fires
    # once, in the window of the element that set it (SEMANTICS 7 and 9).
    stream = (
        TestStream()
        .advance_watermark_to(0)
        .add_elements([window.TimestampedValue(("k", 1), 3), window.TimestampedValue(("j", 1), 12)])
        .advance_processing_time(20)
        .advance_watermark_to_infinity()
    )
    p = runner.pipeline()
    out = p | stream | beam.WindowInto(window.FixedWindows(10)) | beam.ParDo(_ProcessingTimer())
    check(out, [el(("k", "fired", True), window=W(0, 10)), el(("j", "fired", True), window=W(10, 20))])
    runner.run(p)


@capability("timers.processing_time")
def test_processing_time_timer_waits_for_processing_time(runner):
    # A processing-time timer set for processing time 10 (TestStream processing time starts at 0; Python
    # sets processing-time timers in absolute time) has not fired after advancing 5 s, has after 15 s.
    # The timer's time is written as text, so that it and the probes are (str, str) pairs of one coder.
    # (SEMANTICS 7 and 9)
    stream = (
        TestStream()
        .advance_watermark_to(0)
        .add_elements([window.TimestampedValue(("k", "10"), 1)])
        .advance_processing_time(5)
        .add_elements([window.TimestampedValue(("k", "probe"), 2)])
        .advance_processing_time(10)
        .add_elements([window.TimestampedValue(("k", "probe"), 3)])
        .advance_watermark_to_infinity()
    )
    p = runner.pipeline()
    out = p | stream | beam.ParDo(_ProcessingTimer())
    check(out, [("k", "probe", False), ("k", "fired", True), ("k", "probe", True)])
    runner.run(p)


@capability("timers.processing_time")
def test_processing_time_timer_set_from_the_harness_clock_fires_after_that_delay(runner):
    """A processing-time timer an SDK sets from its own wall clock (now + 5 s: Java's
    Timer.offset(5 s).setRelative(), GroupIntoBatches' buffering timer; here Python's
    Timestamp.now() + 5) fires once the runner's processing time has moved 5 s on: not after 2 s,
    by 12 s, before the watermark ends the global window. The Fn API gives a harness no other
    clock to read, so a runner whose processing time is not the wall clock must take such a time
    as a delay from now (Java testTimerFamilyProcessingTime, GroupIntoBatchesTest
    testBufferingTimerInGlobalWindow; SEMANTICS 7)."""
    stream = (
        TestStream()
        .advance_watermark_to(0)
        .add_elements([window.TimestampedValue(("k", "+5"), 1)])
        .advance_processing_time(2)
        .add_elements([window.TimestampedValue(("k", "probe"), 2)])
        .advance_processing_time(10)
        .add_elements([window.TimestampedValue(("k", "probe"), 3)])
        .advance_watermark_to_infinity()
    )
    p = runner.pipeline()
    out = p | stream | beam.ParDo(_ProcessingTimer())
    check(out, [("k", "probe", False), ("k", "fired", True), ("k", "probe", True)])
    runner.run(p)


@capability("timers.processing_time")
def test_processing_time_timer_of_an_expired_window_never_fires(runner):
    """A processing-time timer whose window expired mid-stream does not fire when its time comes.

    Fixed(10), allowed lateness 0: [0,10) is live while the input watermark is 9.999 (its max
    timestamp + lateness is not behind it), so i's timer (processing time 30) fires when the clock
    reaches 40; at watermark 10 the window has expired, its state is gone, and k's timer
    (processing time 50) in it must not fire when the clock reaches 100, while j's timer (50) in
    the live [10,20) does. Beam's Java StatefulDoFnRunner.onTimer ignores a processing-time timer
    whose window is past garbage collection ("it can happen that a processing-time timer fires
    for a late window, we need to ignore this"); SEMANTICS 7 (state and timers live until
    max timestamp + allowed lateness). Processing time of a TestStream starts at 0 and Python
    sets processing-time timers in absolute time."""
    stream = (
        TestStream()
        .advance_watermark_to(0)
        .add_elements([keyed_at(30, 1, key="i"), keyed_at(50, 2, key="k"), keyed_at(50, 12, key="j")])
        .advance_watermark_to(9.999)
        .advance_processing_time(40)
        .advance_watermark_to(10)
        .advance_processing_time(60)
        .advance_watermark_to_infinity()
    )
    p = runner.pipeline()
    out = p | stream | beam.WindowInto(window.FixedWindows(10)) | beam.ParDo(_ProcessingTimer())
    check(out, [el(("i", "fired", True), window=W(0, 10)), el(("j", "fired", True), window=W(10, 20))])
    runner.run(p)


# --------------------------------------------------------------------------- Runner API level features


class _ParDoWithPayloadFlags(beam.ParDo):
    """A ParDo whose submitted ParDoPayload carries flags the Python SDK has no API for."""

    def __init__(self, fn, requirement, **payload_fields):
        super().__init__(fn)
        self._requirement = requirement
        self._payload_fields = payload_fields

    def to_runner_api_parameter(self, context, **extra_kwargs):
        urn, payload = super().to_runner_api_parameter(context, **extra_kwargs)
        for name, value in self._payload_fields.items():
            setattr(payload, name, value)
        context.add_requirement(self._requirement)
        return urn, payload


@capability("timers.time_sorted_input")
def test_time_sorted_input_delivers_each_key_in_timestamp_order(runner):
    # SEMANTICS 7 (@RequiresTimeSortedInput): elements of each key reach the DoFn in timestamp order,
    # whatever order they were created in. (Runner API flag: the Python SDK has no decorator for it.)
    # Creation order, value order and timestamp order all differ, so a runner that sorts by value,
    # or keeps arrival order, delivers another sequence.
    class Fn(beam.DoFn):
        SEEN = ReadModifyWriteStateSpec("seen", coders.PickleCoder())
        REPORT = TimerSpec("report", TimeDomain.WATERMARK)

        def process(self, kv, seen=StateParam(SEEN), report=TimerParam(REPORT), ts=TimestampParam):
            seen.write((seen.read() or []) + [(kv[1], _secs(ts))])
            report.set(1000)

        @on_timer(REPORT)
        def on_report(self, key=KeyParam, seen=StateParam(SEEN)):
            yield key, seen.read()

    p = runner.pipeline()
    data = [
        ("k", "c", 5),
        ("k", "e", 1),
        ("k", "a", 4),
        ("k", "d", 2),
        ("k", "b", 3),
        ("j", "x", 9),
        ("j", "z", 7),
        ("j", "y", 8),
    ]
    out = keyed_input(p, data) | _ParDoWithPayloadFlags(
        Fn(), common_urns.requirements.REQUIRES_TIME_SORTED_INPUT.urn, requires_time_sorted_input=True
    )
    check(
        out,
        [
            el(("k", [("e", 1), ("d", 2), ("b", 3), ("a", 4), ("c", 5)]), 1000, GLOBAL),
            el(("j", [("z", 7), ("y", 8), ("x", 9)]), 1000, GLOBAL),
        ],
    )
    runner.run(p)


@capability("timers.time_sorted_input")
def test_time_sorted_input_waits_out_the_allowed_lateness(runner):
    """Time-sorted input is released once the watermark passes an element's timestamp + the allowed
    lateness, so data late by less than that is still delivered in order; data later than that
    can no longer be, and is dropped (Beam's DoFn.RequiresTimeSortedInput: "All data is emitted
    after input watermark passes element's timestamp + allowedLateness", "all data that arrives
    later than the allowed lateness will have to be dropped"; Java
    testRequiresTimeSortedInputWithLateDataAndAllowedLateness). Global window, lateness 20 s:
    5 arrives, the watermark goes to 10, then 3, 1 and 8 arrive late but within the lateness; at
    watermark 40 the four are released in order; 15 arriving then is 20 s too late (15 + 20 < 40).
    Each element reports the element processed before it (0 for the first; SEMANTICS 7)."""

    class Fn(beam.DoFn):
        LAST = ReadModifyWriteStateSpec("last", coders.VarIntCoder())

        def process(self, kv, last=StateParam(LAST)):
            yield kv[1], last.read() or 0
            last.write(kv[1])

    stream = (
        TestStream()
        .advance_watermark_to(0)
        .add_elements([window.TimestampedValue(("k", 5), 5)])
        .advance_watermark_to(10)
        .add_elements([window.TimestampedValue(("k", 3), 3)])
        .add_elements([window.TimestampedValue(("k", 1), 1)])
        .add_elements([window.TimestampedValue(("k", 8), 8)])
        .advance_watermark_to(40)
        .add_elements([window.TimestampedValue(("k", 15), 15)])
        .advance_watermark_to_infinity()
    )
    p = runner.pipeline()
    out = (
        p
        | stream
        | beam.WindowInto(window.GlobalWindows(), allowed_lateness=20)
        | _ParDoWithPayloadFlags(
            Fn(), common_urns.requirements.REQUIRES_TIME_SORTED_INPUT.urn, requires_time_sorted_input=True
        )
    )
    check(out, [(1, 0), (3, 1), (5, 3), (8, 5)])
    runner.run(p)


@capability("timers.on_window_expiration")
def test_on_window_expiration_runs_once_per_key_and_window_with_state(runner):
    # SEMANTICS 7 (runOnWindowExpirationSimple): the expiration callback runs once per key and window,
    # just before the window's state is cleared, and still reads it. (Runner API field
    # on_window_expiration_timer_family_spec: the Python SDK has no @on_window_expiration.)
    class Fn(beam.DoFn):
        COUNT = ReadModifyWriteStateSpec("count", coders.VarIntCoder())
        EXPIRY = TimerSpec("expiry", TimeDomain.WATERMARK)

        def process(self, kv, count=StateParam(COUNT)):
            count.write((count.read() or 0) + 1)

        @on_timer(EXPIRY)
        def expired(self, key=KeyParam, w=WindowParam, count=StateParam(COUNT), unused=TimerParam(EXPIRY)):
            yield key, _secs(w.start), count.read()

    p = runner.pipeline()
    data = [("k", 0, 1), ("k", 0, 2), ("k", 0, 12), ("j", 0, 3)]
    out = (
        keyed_input(p, data)
        | beam.WindowInto(window.FixedWindows(10))
        | _ParDoWithPayloadFlags(
            Fn(),
            common_urns.requirements.REQUIRES_ON_WINDOW_EXPIRATION.urn,
            on_window_expiration_timer_family_spec=Fn.EXPIRY.name,
        )
    )
    check(
        out,
        [el(("k", 0.0, 2), window=W(0, 10)), el(("k", 10.0, 1), window=W(10, 20)), el(("j", 0.0, 1), window=W(0, 10))],
    )
    runner.run(p)


class _ArrivalRecorder(beam.DoFn):
    """One key: keeps what arrives; a ("probe", label) outputs (label, what arrived before it)."""

    SEEN = BagStateSpec("seen", coders.PickleCoder())

    def process(self, kv, seen=StateParam(SEEN)):
        value = kv[1]
        if value[0] == "probe":
            yield value[1], sorted(seen.read())
        else:
            seen.add(value)


@capability("timers.on_window_expiration")
def test_on_window_expiration_runs_mid_stream_once_the_window_expired(runner):
    """OnWindowExpiration runs when the watermark passes the window's expiry mid-stream, not at the
    end of the input, and not before the expiry; the window's state does not outlive it.

    Fixed(10), allowed lateness 0, so [0,10) expires once the input watermark is past 9.999
    (max timestamp + allowed lateness, SEMANTICS 5/7). At watermark 9.999 the window is still live
    (an element for it would be processed with its state), so its expiration callback cannot have
    run; at watermark 12 it has expired, so the callback has run, reading k's count 2, before the
    stream goes on. The model fixes no tighter bound than that: Beam's Java StatefulDoFnRunner
    runs it from a cleanup timer 1 ms past the expiry (GC_DELAY_MS), and 12 is past both. j's and
    k's [10,20) expire at the end of the input, each with its own count 1.

    An element for the expired window (k at 5) is droppable. The model requires dropping at a
    GroupByKey only (the Runner Authoring Guide lets a runner drop data for an expired window
    anywhere, without requiring it elsewhere); Beam's Java StatefulDoFnRunner drops it (isLate),
    and then nothing more happens in [0,10). A runner that processes it does so without the
    expired state, so if it runs the expiration callback for it, the callback reads 1, never 3.

    The callback's outputs and probe elements go through the same stateful DoFn to a recorder (one
    key, global window) that lists, at each probe, the expirations that arrived before it.
    TestStream applies each event once the effects of the earlier ones are processed. The counted
    elements' values are never read; they are strings, as the probes' labels are, so that the
    stream's events have one standard coder."""

    class Fn(beam.DoFn):
        COUNT = ReadModifyWriteStateSpec("count", coders.VarIntCoder())
        EXPIRY = TimerSpec("expiry", TimeDomain.WATERMARK)

        def process(self, kv, count=StateParam(COUNT)):
            if kv[0] == "probe":
                yield "probe", kv[1]
            else:
                count.write((count.read() or 0) + 1)

        @on_timer(EXPIRY)
        def expired(self, key=KeyParam, w=WindowParam, count=StateParam(COUNT), unused=TimerParam(EXPIRY)):
            n = count.read()
            if n is not None:  # (the probes' key keeps no state)
                yield "expired", key, _secs(w.start), n

    stream = (
        TestStream()
        .advance_watermark_to(0)
        .add_elements([keyed_at("a", 1), keyed_at("b", 2), keyed_at("c", 15, key="j")])
        .advance_watermark_to(9.999)
        .add_elements([keyed_at("watermark at 9.999", 10, key="probe")])
        .advance_watermark_to(12)
        .add_elements([keyed_at("watermark at 12", 12, key="probe")])
        .add_elements([keyed_at("d", 5)])
        .add_elements([keyed_at("e", 13)])
        .advance_watermark_to_infinity()
    )
    p = runner.pipeline()
    out = (
        p
        | stream
        | beam.WindowInto(window.FixedWindows(10))
        | _ParDoWithPayloadFlags(
            Fn(),
            common_urns.requirements.REQUIRES_ON_WINDOW_EXPIRATION.urn,
            on_window_expiration_timer_family_spec=Fn.EXPIRY.name,
        ).with_output_types(typing.Any)
    )
    expirations = out | "Expirations" >> beam.Filter(lambda v: v[0] == "expired")
    once = [
        el(("expired", "k", 0.0, 2), 9.999, W(0, 10)),
        el(("expired", "k", 10.0, 1), 19.999, W(10, 20)),
        el(("expired", "j", 10.0, 1), 19.999, W(10, 20)),
    ]
    late_processed = [el(("expired", "k", 0.0, 1), 9.999, W(0, 10))]
    check(expirations, one_of(once, once + late_processed), label="expirations")
    arrivals = (
        out
        | "Global" >> beam.WindowInto(window.GlobalWindows())
        | "OneKey" >> beam.Map(lambda v: ("all", v))
        | "Record" >> beam.ParDo(_ArrivalRecorder())
    )
    check(
        arrivals,
        [("watermark at 9.999", []), ("watermark at 12", [("expired", "k", 0.0, 2)])],
        label="arrivals",
    )
    runner.run(p)


# --------------------------------------------------------------------------- timers.failure


@capability("timers.failure")
def test_exception_in_timer_callback_fails_job_with_message(runner):
    # SEMANTICS 8: an exception in user code fails the job with the user's message; in an event-time
    # timer callback too (which runs in a later bundle than the element that set the timer), here in a
    # timer set by another timer's callback.
    message = "conformance-boom-in-on-timer-8e41"

    class Fn(beam.DoFn):
        FIRST = TimerSpec("first", TimeDomain.WATERMARK)
        SECOND = TimerSpec("second", TimeDomain.WATERMARK)

        def process(self, kv, first=TimerParam(FIRST)):
            first.set(10)
            yield kv

        @on_timer(FIRST)
        def on_first(self, second=TimerParam(SECOND)):
            second.set(20)

        @on_timer(SECOND)
        def on_second(self, key=KeyParam):
            if key == "boom":
                raise RuntimeError(message)

    p = runner.pipeline()
    _ = p | beam.Create([("fine", 1), ("boom", 2)]) | beam.ParDo(Fn())
    runner.run_expecting_failure(p, match=message)
