"""Side inputs in streaming: per-window readiness and triggered side inputs (conformance/SEMANTICS.md, section 6).

Every case drives main and side input from ONE TestStream, so the order of main elements
relative to side panes is part of the input. It is a single-output TestStream of tagged
elements, split into the "main" and "side" PCollections by an element-wise step
(conformance.api.TaggedTestStream), not a TestStream with two outputs: the cases need one totally
ordered sequence of events and one watermark for both inputs, which is what a single stream is,
and not the runner's support for several TestStream outputs (the teststream capability has a
case of its own for that). The semantics the expectations rely on survive the split: every
event is still one event of one stream, applied after the effects of the ones before it, and an
element-wise step holds no watermark back, so both inputs' watermarks are the stream's, as they
were when each watermark step advanced both outputs together (nothing can happen between two
such advances of one instant: main elements wait on the side input's watermark, not their own).
Model facts the expectations rely on:
- Readiness: a main element in window W is not processed before the side window W maps to
  is ready: the side input's watermark has passed the side window's end, or (triggered side
  input) a first pane has fired for it. Until then it waits; it does not see an empty view.
  A side window that never gets data resolves to the view's default once the side watermark
  passes it (CombineGlobally(...).as_singleton_view(): the CombineFn's default, sum -> 0;
  AsList -> []).
- Triggered side inputs: the DoFn sees, per side window, the latest fired pane (Java
  ViewTest.testTriggeredLatestSingleton): in accumulating mode the latest accumulated
  value, in discarding mode the latest pane alone; elements the trigger has not fired yet
  are not visible.
- TestStream: each event is applied once the pipeline has processed everything the previous
  events made processable (the runner is quiescent), so a main element that arrives after
  side pane k and before pane k+1 sees pane k, and an element waiting for its side window is
  processed right after the event that made the window ready, before the next event.
Panes are fired one element per step (AfterCount), so their contents do not depend on bundling.
"""

import apache_beam as beam
from apache_beam.pvalue import AsIter, AsList, AsSingleton
from apache_beam.transforms import trigger, window
from apache_beam.transforms.core import Windowing
from apache_beam.utils.windowed_value import WindowedValue

from conformance.api import ACCUMULATING, DISCARDING, TaggedTestStream, W, capability, check, el

TAGS = ("main", "side")


def _stream(*steps):
    """The tagged stream of "main" and "side". Steps: ("main" | "side", [(value, ts), ...]) adds
    one element batch to that input; ("watermark", t) advances the stream's watermark (both
    inputs') to t. At the end it goes to infinity."""
    stream = TaggedTestStream(*TAGS)
    for kind, arg in steps:
        if kind == "watermark":
            stream = stream.advance_watermark_to(arg)
        else:
            stream = stream.add_elements(kind, [window.TimestampedValue(v, ts) for v, ts in arg])
    return stream.advance_watermark_to_infinity()


def _pipeline(runner):
    # AfterCount without Repeatedly is unsafe in Python's eyes; Repeatedly is fine, but keep
    # the flag for symmetry with the trigger cases (it only affects construction).
    return runner.pipeline("--allow_unsafe_triggers")


def _global_triggered_sum(side, count, mode):
    """The side values summed in the global window, fired every ``count`` elements."""
    return (
        side
        | "SideWindow"
        >> beam.WindowInto(
            window.GlobalWindows(), trigger=trigger.Repeatedly(trigger.AfterCount(count)), accumulation_mode=mode
        )
        | "SideSum" >> beam.CombineGlobally(sum).without_defaults()
    )


# ---------------------------------------------------------------------------
# side_inputs.triggered


@capability("side_inputs.triggered")
def test_accumulating_global_side_input_shows_latest_sum(runner):
    # Repeatedly(AfterCount(1)), accumulating: side panes 1, 3 (1+2), 6 (1+2+3). z arrives before
    # any pane and waits for the first (it must not see an empty singleton); every other main
    # element sees the latest pane fired before it arrived (SEMANTICS 6 and 9).
    stream = _stream(
        ("main", [("z", 0)]),
        ("side", [(1, 1)]),
        ("main", [("a", 2)]),
        ("side", [(2, 3)]),
        ("main", [("b", 4), ("c", 5)]),
        ("side", [(3, 6)]),
        ("main", [("d", 7)]),
    )
    p = _pipeline(runner)
    streams = p | "Stream" >> stream
    total = _global_triggered_sum(streams["side"], 1, ACCUMULATING)
    out = streams["main"] | "Read" >> beam.Map(lambda x, s: (x, s), AsSingleton(total))
    check(out, [("z", 1), ("a", 1), ("b", 3), ("c", 3), ("d", 6)])
    runner.run(p)


@capability("side_inputs.triggered")
def test_discarding_global_side_input_shows_latest_pane_only(runner):
    # Repeatedly(AfterCount(1)), discarding: each pane sums only the elements since the previous
    # firing (1, 2, 3, 4), and a main element sees the latest pane, not a running total (SEMANTICS 6 and 9).
    stream = _stream(
        ("main", [("z", 0)]),
        ("side", [(1, 1)]),
        ("main", [("a", 2)]),
        ("side", [(2, 3)]),
        ("main", [("b", 4)]),
        ("side", [(3, 5)]),
        ("side", [(4, 6)]),
        ("main", [("c", 7)]),
    )
    p = _pipeline(runner)
    streams = p | "Stream" >> stream
    latest = _global_triggered_sum(streams["side"], 1, DISCARDING)
    out = streams["main"] | "Read" >> beam.Map(lambda x, s: (x, s), AsSingleton(latest))
    check(out, [("z", 1), ("a", 1), ("b", 2), ("c", 4)])
    runner.run(p)


def _pane_list_case(runner, mode, expected):
    # Side values grouped in the global window by Repeatedly(AfterCount(2)) and flattened back
    # into elements, read as a list: x,y fire pane 0; z alone fires nothing (m must not see it);
    # w fires pane 1 ({z,w} discarding, {x,y,z,w} accumulating).
    stream = _stream(
        ("side", [("x", 1)]),
        ("side", [("y", 2)]),
        ("main", [("a", 3)]),
        ("side", [("z", 4)]),
        ("main", [("m", 5)]),
        ("side", [("w", 6)]),
        ("main", [("b", 7)]),
    )
    p = _pipeline(runner)
    streams = p | "Stream" >> stream
    panes = (
        streams["side"]
        | "SideWindow"
        >> beam.WindowInto(
            window.GlobalWindows(), trigger=trigger.Repeatedly(trigger.AfterCount(2)), accumulation_mode=mode
        )
        | "Key" >> beam.Map(lambda v: (None, v))
        | "Group" >> beam.GroupByKey()
        | "Values" >> beam.FlatMap(lambda kv: kv[1])
    )
    out = streams["main"] | "Read" >> beam.Map(lambda x, values: (x, sorted(values)), AsList(panes))
    check(out, expected)
    runner.run(p)


@capability("side_inputs.triggered")
def test_list_side_input_shows_latest_accumulated_pane(runner):
    # SEMANTICS 6 and 9: a reader sees the latest pane fired for its side window before it arrived.
    _pane_list_case(runner, ACCUMULATING, [("a", ["x", "y"]), ("m", ["x", "y"]), ("b", ["w", "x", "y", "z"])])


@capability("side_inputs.triggered")
def test_list_side_input_shows_latest_discarding_pane_only(runner):
    # SEMANTICS 6 and 9: a reader sees the latest pane fired for its side window before it arrived.
    _pane_list_case(runner, DISCARDING, [("a", ["x", "y"]), ("m", ["x", "y"]), ("b", ["w", "z"])])


@capability("side_inputs.triggered")
def test_early_pane_makes_windowed_side_input_ready(runner):
    # Fixed(10) side input, AfterWatermark(early=AfterCount(1)), accumulating, summed per window.
    # a@5 waits for [0,10) until its first (early) pane fires with 1; c@6 arrives after the second
    # early pane (3). b@15 waits for [10,20), which never gets data: once the side watermark
    # passes 20 it sees the CombineFn's default, 0 (SEMANTICS 6 and 9).
    stream = _stream(
        ("main", [("a", 5)]),
        ("main", [("b", 15)]),
        ("side", [(1, 1)]),
        ("side", [(2, 2)]),
        ("main", [("c", 6)]),
        ("watermark", 10),
        ("watermark", 20),
    )
    p = _pipeline(runner)
    streams = p | "Stream" >> stream
    sums = (
        streams["side"]
        | "SideWindows"
        >> beam.WindowInto(
            window.FixedWindows(10),
            trigger=trigger.AfterWatermark(early=trigger.AfterCount(1)),
            accumulation_mode=ACCUMULATING,
        )
        | "SideSum" >> beam.CombineGlobally(sum).as_singleton_view()
    )
    main = streams["main"] | "MainWindows" >> beam.WindowInto(window.FixedWindows(10))
    out = main | "Read" >> beam.Map(lambda x, s: (x, s), sums)
    check(out, [el(("a", 1), 5, W(0, 10)), el(("c", 3), 6, W(0, 10)), el(("b", 0), 15, W(10, 20))])
    runner.run(p)


# ---------------------------------------------------------------------------
# side_inputs.streaming_readiness


@capability("side_inputs.streaming_readiness")
def test_windowed_side_input_waits_for_watermark(runner):
    # Fixed(10) side input with the default trigger, summed per window: a side window is ready
    # only once the side watermark passes its end. a@2 sees [0,10) = 1+2; b@12 arrives before
    # 4@14 but waits until the watermark passes 20, so it sees 5+4; c@25's side window [20,30)
    # never gets data and resolves to the default 0 when the watermark passes 30 (end of input; SEMANTICS 6 and 9).
    stream = _stream(
        ("main", [("c", 25)]),
        ("main", [("a", 2)]),
        ("side", [(1, 1)]),
        ("side", [(2, 3)]),
        ("main", [("b", 12)]),
        ("side", [(5, 11)]),
        ("watermark", 10),
        ("side", [(4, 14)]),
        ("watermark", 20),
    )
    p = runner.pipeline()
    streams = p | "Stream" >> stream
    sums = (
        streams["side"]
        | "SideWindows" >> beam.WindowInto(window.FixedWindows(10))
        | "SideSum" >> beam.CombineGlobally(sum).as_singleton_view()
    )
    main = streams["main"] | "MainWindows" >> beam.WindowInto(window.FixedWindows(10))
    out = main | "Read" >> beam.Map(lambda x, s: (x, s), sums)
    check(out, [el(("a", 3), 2, W(0, 10)), el(("b", 9), 12, W(10, 20)), el(("c", 0), 25, W(20, 30))])
    runner.run(p)


@capability("side_inputs.streaming_readiness")
def test_ungrouped_side_input_waits_for_watermark_and_missing_window_is_empty(runner):
    # Side elements straight from the stream (no GroupByKey, so the unknown pane) in Fixed(10):
    # a window is ready only when the side watermark passes its end, and then shows every element
    # in it. a@5 waits for the watermark to pass 10 and sees s1, s2; b@15 waits for 20 and sees
    # t1; c@25's side window never gets data: when the watermark passes 30 (end of input) c sees
    # an empty list and iterable (SEMANTICS 6 and 9).
    stream = _stream(
        ("main", [("c", 25)]),
        ("main", [("a", 5)]),
        ("side", [("s1", 1), ("s2", 3)]),
        ("watermark", 10),
        ("side", [("t1", 12)]),
        ("main", [("b", 15)]),
        ("watermark", 20),
    )
    p = runner.pipeline()
    streams = p | "Stream" >> stream
    side = streams["side"] | "SideWindows" >> beam.WindowInto(window.FixedWindows(10))
    main = streams["main"] | "MainWindows" >> beam.WindowInto(window.FixedWindows(10))
    out = main | "Read" >> beam.Map(lambda x, lst, it: (x, sorted(lst), sorted(it)), AsList(side), AsIter(side))
    check(
        out,
        [
            el(("a", ["s1", "s2"], ["s1", "s2"]), 5, W(0, 10)),
            el(("b", ["t1"], ["t1"]), 15, W(10, 20)),
            el(("c", [], []), 25, W(20, 30)),
        ],
    )
    runner.run(p)


class _ToGlobalKeepingPanes(beam.ParDo):
    """Into the global window with the default trigger, each element keeping its pane, as the Java
    and Go SDKs' WindowInto do (Python's resets the pane): Go's passert reads a triggered result
    so, re-windowed into the global window, as a side input."""

    class _Keep(beam.DoFn):
        def process(self, element, timestamp=beam.DoFn.TimestampParam, pane=beam.DoFn.PaneInfoParam):
            yield WindowedValue(element, timestamp, (window.GlobalWindow(),), pane)

    def __init__(self):
        super().__init__(self._Keep())

    def get_windowing(self, inputs):
        return Windowing(window.GlobalWindows())


@capability("side_inputs.streaming_readiness")
def test_side_input_rewindowed_after_grouping_waits_for_its_own_watermark(runner):
    # Sums per Fixed(10) window (default trigger): 6 fires ON_TIME for [0,10) when the watermark
    # passes 10, 9 for [10,20) at the end. Re-windowed into the global window with the default
    # trigger they keep those panes, fired in windows the side input no longer has: its global
    # window is ready only once the side watermark passes its end (SEMANTICS 6), so a, waiting
    # from the start, sees both sums, not just the first one.
    stream = _stream(
        ("main", [("a", 0)]),
        ("side", [(1, 1), (2, 1), (3, 1)]),
        ("watermark", 11),
        ("side", [(4, 12), (5, 12)]),
        ("watermark", 13),
    )
    p = runner.pipeline()
    streams = p | "Stream" >> stream
    sums = (
        streams["side"]
        | "SideWindows" >> beam.WindowInto(window.FixedWindows(10))
        | "SideSum" >> beam.CombineGlobally(sum).without_defaults()
        | "ToGlobal" >> _ToGlobalKeepingPanes()
    )
    out = streams["main"] | "Read" >> beam.Map(lambda x, s: (x, sorted(s)), AsList(sums))
    check(out, [el(("a", [6, 9]), 0)])
    runner.run(p)
