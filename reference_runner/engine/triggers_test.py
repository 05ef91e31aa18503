"""The engine's trigger state machines and triggered GroupByKey (engine/triggers.py, engine/panes.py),
driven directly with plain elements: no SDK, no protos."""

from reference_runner.engine import triggers as t
from reference_runner.engine.grouping import Grouping
from reference_runner.engine.panes import TriggeredBuffer
from reference_runner.engine.windows import EARLIEST, END_OF_WINDOW, MAX_TIMESTAMP, Interval

S = 1_000_000  # one second in micros
INF = MAX_TIMESTAMP + 1


class Codec:
    """Elements are (key, value, timestamp seconds, window size seconds | "session:gap")."""

    def split(self, element):
        key, value, ts, windowing = element
        micros = int(ts * S)
        if isinstance(windowing, str):  # sessions
            gap = int(windowing.split(":")[1]) * S
            window = Interval(micros, micros + gap)
        else:
            start = micros - micros % (windowing * S)
            window = Interval(start, start + windowing * S)
        return key.encode(), key, value, micros, [window]

    def build(self, key, values, timestamp, window, pane):
        return (
            key,
            list(values),
            timestamp / S,
            (window.start // S, window.end // S),
            (pane.timing, pane.index, pane.nonspeculative_index, pane.is_first, pane.is_last),
        )


def buffer(trigger, accumulating=False, lateness=0, combiner=END_OF_WINDOW, merging=False):
    return TriggeredBuffer(
        Grouping(
            Codec(),
            merging=merging,
            timestamp_combiner=combiner,
            allowed_lateness=lateness * S,
            trigger=trigger,
            accumulating=accumulating,
        )
    )


class Driver:
    """Feeds one element at a time and moves watermark and clock, collecting every pane."""

    def __init__(self, buf, size=10):
        self.buf, self.size, self.wm, self.now, self.panes = buf, size, -INF, 0, []

    def add(self, value, ts, key="k"):
        self.panes += self.buf.add([(key, value, ts, self.size)], self.wm, self.now)
        return self

    def watermark(self, seconds):
        self.wm = INF if seconds == "inf" else int(seconds * S)
        self.panes += self.buf.on_watermark(self.wm, self.now)
        return self

    def clock(self, seconds):
        self.now = int(seconds * S)
        self.panes += self.buf.on_processing_time(self.wm, self.now)
        return self

    def shapes(self):
        """(values, pane info) of every pane so far."""
        return [(sorted(p[1]), p[4]) for p in self.panes]


EARLY = lambda i, last=False: ("EARLY", i, -1, i == 0, last)  # noqa: E731
ON_TIME = lambda i, last: ("ON_TIME", i, 0, i == 0, last)  # noqa: E731
LATE = lambda i, n, last=False: ("LATE", i, n, i == 0, last)  # noqa: E731


def test_default_trigger_fires_once_on_time_then_per_late_element_and_final_at_gc():
    d = Driver(buffer(t.Default(), accumulating=True, lateness=100))
    d.add(1, 1).add(2, 2).watermark(50).add(7, 7).watermark("inf")
    assert d.shapes() == [([1, 2], ON_TIME(0, False)), ([1, 2, 7], LATE(1, 1)), ([1, 2, 7], LATE(2, 2, True))]


def test_watermark_past_end_and_gc_at_once_gives_one_final_on_time_pane():
    d = Driver(buffer(t.Default()))
    d.add(1, 1).watermark("inf")
    assert d.shapes() == [([1], ON_TIME(0, True))]
    assert d.panes[0][2] == 9.999  # END_OF_WINDOW


def test_droppable_elements_are_dropped_and_late_born_window_panes_are_late():
    d = Driver(buffer(t.Default(), lateness=5))
    d.watermark(100).add("gone", 1)  # 9.999 + 5 < 100: dropped
    d.watermark(112).add("late", 105)  # [100,110) is past its end but within lateness
    assert d.buf.dropped == 1
    assert d.shapes() == [(["late"], LATE(0, 0))]
    d.watermark("inf")
    assert d.shapes()[-1] == ([], LATE(1, 1, True))  # discarding: the final pane is empty


def test_after_count_fires_once_finishes_and_closes_the_window():
    d = Driver(buffer(t.AfterCount(2)))
    d.add(1, 1).add(2, 2).add(3, 3).watermark("inf")
    assert d.shapes() == [([1, 2], EARLY(0, True))]
    assert d.buf.dropped == 1


def test_early_and_late_firings_repeat_with_on_time_pane_even_when_empty():
    trig = t.AfterWatermark(early=t.AfterCount(2), late=t.AfterCount(2))
    d = Driver(buffer(trig, lateness=50))
    d.add(1, 1).add(2, 2).add(3, 3).add(4, 4).watermark(20)
    d.add(5, 5).add(6, 6).add(7, 7).watermark("inf")
    assert d.shapes() == [
        ([1, 2], EARLY(0)),
        ([3, 4], EARLY(1)),
        ([], ON_TIME(2, False)),
        ([5, 6], LATE(3, 1)),
        ([7], LATE(4, 2, True)),
    ]


def test_accumulating_mode_repeats_everything_so_far():
    d = Driver(buffer(t.Repeatedly(t.AfterCount(2)), accumulating=True))
    for v in range(1, 6):
        d.add(v, v)
    d.watermark("inf")
    assert d.shapes() == [([1, 2], EARLY(0)), ([1, 2, 3, 4], EARLY(1)), ([1, 2, 3, 4, 5], ON_TIME(2, True))]


def test_after_processing_time_fires_at_deadline_of_first_element_and_repeats():
    d = Driver(buffer(t.Repeatedly(t.AfterProcessingTime((("delay", 5 * S),))), accumulating=False), size=100)
    d.add(1, 1).clock(2).add(2, 2).clock(4)
    assert d.panes == []
    assert d.buf.next_deadline() == 5 * S
    d.clock(6).add(3, 3).clock(12).watermark("inf")
    assert d.shapes() == [([1, 2], EARLY(0)), ([3], EARLY(1)), ([], ON_TIME(2, True))]
    assert d.buf.next_deadline() is None


def test_processing_time_deadline_after_expiry_fires_nothing():
    d = Driver(buffer(t.Repeatedly(t.AfterProcessingTime((("delay", 10 * S),))), combiner=EARLIEST), size=100)
    d.watermark(0).add(2, 2).add(5, 5).watermark(100).clock(10)
    assert [(p[1], p[2]) for p in d.panes] == [([2, 5], 2.0)]


def test_alignment_rounds_up_to_the_period_grid():
    trig = t.AfterProcessingTime((("delay", 1 * S), ("align", 10 * S, 2 * S)))
    assert trig.target(4 * S) == 12 * S
    assert trig.target(11 * S) == 12 * S
    assert trig.target(12 * S) == 22 * S


def test_composites_after_each_any_all_or_finally():
    d = Driver(buffer(t.AfterEach((t.AfterCount(2), t.AfterCount(3))), accumulating=True), size=100)
    for v in range(1, 7):
        d.add(v, v)
    assert d.shapes() == [([1, 2], EARLY(0)), ([1, 2, 3, 4, 5], EARLY(1, True))]

    d = Driver(buffer(t.AfterAny((t.AfterCount(5), t.AfterWatermark())), lateness=100))
    d.add("a", 1).add("b", 2).watermark(50).add("x", 1).watermark("inf")
    assert d.shapes() == [(["a", "b"], ON_TIME(0, True))]

    d = Driver(buffer(t.AfterAll((t.AfterCount(2), t.AfterWatermark()))))
    d.add("a", 1).add("b", 2).add("c", 3).watermark("inf")
    assert d.shapes() == [(["a", "b", "c"], ON_TIME(0, True))]

    d = Driver(buffer(t.OrFinally(t.Repeatedly(t.AfterCount(1)), t.AfterCount(3))))
    d.add(1, 1).add(2, 2).add(3, 3).add(4, 4)
    assert d.shapes() == [([1], EARLY(0)), ([2], EARLY(1)), ([3], EARLY(2, True))]


def test_never_fires_only_the_final_pane():
    d = Driver(buffer(t.Never(), lateness=10))
    d.add(1, 1).watermark(15).add(2, 2).watermark("inf")
    assert d.shapes() == [([1, 2], ON_TIME(0, True))]


def test_sessions_merge_trigger_state_and_restart_panes_in_a_new_window():
    trig = t.AfterWatermark(early=t.AfterCount(2), late=t.AfterCount(3))
    d = Driver(buffer(trig, accumulating=True, lateness=100, merging=True), size="session:10")
    d.add(1, 1).add(2, 2).add(3, 3).add(4, 4).add(5, 5).watermark(100)
    d.add(1, 1).add(3, 3).add(4, 4).watermark("inf")
    windows = [p[3] for p in d.panes]
    assert windows == [(1, 12), (1, 14), (1, 15), (1, 15), (1, 15)]
    assert d.shapes() == [
        ([1, 2], EARLY(0)),
        ([1, 2, 3, 4], EARLY(0)),
        ([1, 2, 3, 4, 5], ON_TIME(0, False)),
        ([1, 1, 2, 3, 3, 4, 4, 5], LATE(1, 1)),
        ([1, 1, 2, 3, 3, 4, 4, 5], LATE(2, 2, True)),
    ]


def test_earliest_timestamp_ignores_elements_behind_the_watermark():
    d = Driver(buffer(t.Default(), combiner=EARLIEST))
    d.watermark(5)
    for v in (2, 3, 7, 8):
        d.add(v, v)
    d.watermark(11)
    assert d.panes[0][2] == 7.0
    d = Driver(buffer(t.Default(), combiner=EARLIEST))
    d.watermark(8).add(2, 2).add(3, 3).watermark(11)
    assert d.panes[0][2] == 9.999


def test_hold_keeps_the_output_watermark_at_open_windows():
    buf = buffer(t.Default(), combiner=EARLIEST, lateness=100)
    d = Driver(buf).watermark(0).add(3, 3)
    assert buf.hold(0, INF) == 3 * S
    d.watermark(50)  # fired on time: no element hold left, past the end: no end-of-window hold
    assert buf.hold(50 * S, INF) == INF
