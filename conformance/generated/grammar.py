"""Hypothesis strategies for well-typed generated pipelines (conformance/generated/programs.py).

Four shapes:
- *batch*: a Create of timestamped pairs and up to five steps of any kind;
- *on-time stream*: a TestStream whose elements are never behind its watermark, then the same
  steps (windowed before anything groups, as an unbounded global-window GroupByKey with the
  default trigger is refused): every correct runner gives the batch result;
- *triggered stream*: any TestStream script (late and droppable data, processing time), a few
  element-wise steps, then a WindowInto with a trigger, accumulation, allowed lateness and
  timestamp combiner, and a GroupByKey;
- *stateful*: a Create or an on-time TestStream, windowed, into a stateful DoFn with bag,
  combining and value state and an event-time timer, maybe grouped after.

Choices are drawn simplest first, so that hypothesis shrinks a program toward fewer steps, fewer
events and plainer triggers.
"""

from __future__ import annotations

from hypothesis import strategies as st

from conformance.generated import steps as s
from conformance.generated.programs import Create, Program, Stream, Triggered
from conformance.model import batch, triggers

KEYS = st.sampled_from(["a", "b", "c"])
VALUES = st.integers(-20, 20)
SECONDS = st.integers(0, 30)
COMBINERS = st.sampled_from([batch.END_OF_WINDOW, batch.EARLIEST, batch.LATEST])
MAX_STEPS = 5


def window_specs(allow_global: bool = True, allow_sessions: bool = True) -> st.SearchStrategy:
    choices = [
        st.builds(
            lambda size, offset: s.WindowSpec(("fixed", size, offset % size)), st.integers(1, 10), st.integers(0, 9)
        ),
        st.builds(
            lambda size, period: s.WindowSpec(("sliding", size, min(period, size))),
            st.integers(2, 10),
            st.integers(1, 5),
        ),
    ]
    if allow_sessions:
        choices.append(st.builds(lambda gap: s.WindowSpec(("sessions", gap)), st.integers(1, 6)))
    if allow_global:
        choices.append(st.just(s.WindowSpec(("global",))))
    return st.one_of(choices)


def elementwise() -> st.SearchStrategy:
    return st.one_of(
        st.builds(s.MapValues, st.sampled_from(s.VALUE_MAPS)),
        st.builds(s.FilterValues, st.sampled_from(s.FILTERS)),
        st.builds(s.FlatMapValues, st.sampled_from(s.FLAT_MAPS)),
        st.builds(s.Rekey, st.sampled_from(s.REKEYS)),
    )


def _branch() -> st.SearchStrategy:
    return st.lists(elementwise(), max_size=1).map(tuple)


@st.composite
def steps_for(draw, streaming: bool) -> tuple:
    """Up to MAX_STEPS steps, each allowed where the PCollection then stands."""
    out: list = []
    shape = ("global",)
    grouped = False
    grouped_globally = False  # something grouped in the global window: timestamps at its end
    for _ in range(draw(st.integers(0, MAX_STEPS))):
        is_global, sessions = shape[0] == "global", shape[0] == "sessions"
        groupable = not (streaming and is_global)
        kinds = ["elementwise", "window", "flatten", "reshuffle", "partition"]
        if groupable:
            kinds += ["group", "combine", "combine_globally", "cogroup"]
        # a stateful DoFn's timer at its window's max timestamp: never for a window past the end of
        # the global window, where outputs grouped there sit (Beam refuses a timer after the
        # window's expiration, which is capped at the global window's end)
        if groupable and not sessions:
            kinds.append("side_input")
            if not is_global and not grouped_globally:
                kinds.append("stateful")
        if is_global and not grouped:
            kinds.append("shift")
        kind = draw(st.sampled_from(kinds))
        if kind == "elementwise":
            step = draw(elementwise())
        elif kind == "window":
            spec = draw(window_specs(allow_global=not streaming))
            step = s.WindowInto(spec, draw(COMBINERS))
            shape = spec.shape
        elif kind == "flatten":
            step = s.FlattenWith(draw(_branch()))
        elif kind == "reshuffle":
            step = s.Reshuffle()
        elif kind == "partition":
            parts = draw(st.integers(2, 3))
            step = s.PartitionTake(parts, draw(st.integers(0, parts - 1)))
        elif kind == "group":
            step = s.GroupAndReduce(draw(st.sampled_from(s.REDUCERS)))
        elif kind == "combine":
            step = s.CombinePerKey(draw(st.sampled_from(s.COMBINE_FNS)))
        elif kind == "combine_globally":
            step = s.CombineGlobally(draw(st.sampled_from(s.COMBINE_FNS)))
        elif kind == "cogroup":
            step = s.CoGroup(draw(_branch()))
        elif kind == "side_input":
            step = s.WithSideInput(draw(st.sampled_from(s.SIDE_KINDS)))
        elif kind == "stateful":
            step = s.Accumulate()
        else:
            step = s.ShiftTimestamps(draw(st.integers(1, 5)))
        grouped = grouped or kind in ("group", "combine", "combine_globally", "cogroup", "stateful")
        grouped_globally = grouped_globally or (
            shape[0] == "global" and kind in ("group", "combine", "combine_globally", "cogroup")
        )
        out.append(step)
    return tuple(out)


def batch_programs() -> st.SearchStrategy:
    rows = st.lists(st.tuples(KEYS, VALUES, SECONDS), max_size=12).map(tuple)
    return st.builds(lambda rows, steps: Program(Create(rows), steps), rows, steps_for(streaming=False))


@st.composite
def streams(draw, on_time: bool, unique_values: bool = False, max_events: int = 8, paced: bool = False) -> Stream:
    """A TestStream script. ``on_time``: no element is behind the watermark when it arrives.
    ``unique_values``: every element's value is its position in the stream, so that panes show
    exactly which elements they hold. ``paced``: the watermark may step on after each batch of
    elements, so that it often stands between a window's end and its garbage collection, where
    non-final ON_TIME and LATE panes fire, instead of jumping past both at the stream's end."""
    events: list = []
    watermark = 0
    position = 0
    for n in range(draw(st.integers(1, max_events))):
        # a paced stream opens with elements: a script that never adds one judges no trigger
        kind = "elements" if paced and n == 0 else draw(st.sampled_from(["elements", "watermark", "processing_time"]))
        if kind == "elements":
            batch_ = []
            for _ in range(draw(st.integers(1, 3))):
                ts = watermark + draw(st.integers(0, 12)) if on_time else draw(SECONDS)
                value = position if unique_values else draw(VALUES)
                position += 1
                batch_.append((draw(KEYS), value, ts))
            events.append(("elements", tuple(batch_)))
            step = draw(st.integers(0, 8)) if paced else 0
            if step:
                watermark += step
                events.append(("watermark", watermark))
        elif kind == "watermark":
            watermark += draw(st.integers(1, 15))
            events.append(("watermark", watermark))
        else:
            events.append(("processing_time", draw(st.integers(1, 6))))
    return Stream(tuple(events))


def on_time_stream_programs() -> st.SearchStrategy:
    return st.builds(lambda stream, steps: Program(stream, steps), streams(on_time=True), steps_for(streaming=True))


def _once() -> st.SearchStrategy:
    return st.one_of(
        st.builds(triggers.AfterCount, st.integers(1, 3)),
        st.builds(lambda d: triggers.AfterProcessingTime(d * 1000), st.integers(1, 5)),
        st.just(triggers.AfterWatermark()),
    )


def _early_late() -> st.SearchStrategy:
    part = st.one_of(
        st.none(),
        st.builds(triggers.AfterCount, st.integers(1, 3)),
        st.builds(lambda d: triggers.AfterProcessingTime(d * 1000), st.integers(1, 5)),
    )
    return st.builds(triggers.AfterWatermark, part, part)


def trigger_strategy(global_window: bool) -> st.SearchStrategy:
    counts = st.builds(triggers.AfterCount, st.integers(1, 3))
    choices = [] if global_window else [st.just(triggers.Default())]
    choices += [
        # the early/late trigger of Beam's guides, every element early: in discarding mode its
        # ON_TIME pane is often empty, and still fires (OnTimeBehavior FIRE_ALWAYS, SEMANTICS 5)
        st.just(triggers.AfterWatermark(early=triggers.AfterCount(1), late=triggers.AfterCount(1))),
        _early_late(),
        st.builds(triggers.Repeatedly, st.one_of(counts, _once())),
        counts,
        st.builds(lambda a, b: triggers.AfterAny(a, b), _once(), _once()),
        st.builds(lambda a, b: triggers.AfterAll(a, b), _once(), _once()),
        st.builds(lambda a, b: triggers.AfterEach(a, b), _once(), _once()),
        st.builds(
            lambda n, until: triggers.OrFinally(triggers.Repeatedly(triggers.AfterCount(n)), until),
            st.integers(1, 3),
            _once(),
        ),
        st.just(triggers.Never()),
        st.just(triggers.Repeatedly(triggers.AfterAny(triggers.AfterCount(2), triggers.AfterWatermark()))),
    ]
    return st.one_of(choices)


@st.composite
def triggered_programs(draw) -> Program:
    sessions = draw(st.integers(0, 4)) == 0
    if sessions:
        spec = s.WindowSpec(("sessions", draw(st.integers(1, 6))))
        trig = draw(
            st.one_of(
                st.just(triggers.Default()),
                st.builds(lambda n: triggers.AfterWatermark(early=triggers.AfterCount(n)), st.integers(1, 3)),
            )
        )
    else:
        spec = draw(window_specs(allow_sessions=False))
        trig = draw(trigger_strategy(spec.is_global))
    stream = draw(streams(on_time=sessions, unique_values=True, paced=True))
    pre = draw(
        st.lists(
            st.one_of(
                st.builds(s.MapValues, st.sampled_from(("v + 1", "v * 2", "-v"))),
                st.builds(s.FilterValues, st.sampled_from(s.FILTERS)),
                st.builds(s.FlatMapValues, st.just("[(k, v), (k, v + 100)]")),
                st.just(s.FlattenWith(())),
            ),
            max_size=2,
        ).map(tuple)
    )
    tail = Triggered(
        spec,
        trig,
        accumulating=draw(st.booleans()),
        # some lateness first: late firings and non-final ON_TIME panes need it
        lateness=draw(st.sampled_from([20, 0, 5])),
        timestamp_combiner=draw(COMBINERS),
    )
    return Program(stream, pre, tail)


@st.composite
def stateful_programs(draw) -> Program:
    """A stateful DoFn with its timer, on a Create or an on-time TestStream: windowed (state and
    timers are per key and window), maybe a few element-wise steps, the DoFn, and maybe a grouping
    of what its timer emits. Drawn as a shape of its own: left to ``steps_for``, a stateful step
    needs a WindowInto before it and is rare."""
    streaming = draw(st.booleans())
    if streaming:
        source: Create | Stream = draw(streams(on_time=True))
    else:
        source = Create(draw(st.lists(st.tuples(KEYS, VALUES, SECONDS), max_size=12).map(tuple)))
    spec = draw(window_specs(allow_global=False, allow_sessions=False))
    steps = (s.WindowInto(spec, draw(COMBINERS)), *draw(st.lists(elementwise(), max_size=2)), s.Accumulate())
    after = draw(
        st.one_of(
            st.just(()),
            st.builds(lambda r: (s.GroupAndReduce(r),), st.sampled_from(s.REDUCERS)),
            st.builds(lambda c: (s.CombinePerKey(c),), st.sampled_from(s.COMBINE_FNS)),
        )
    )
    return Program(source, steps + after)


def programs() -> st.SearchStrategy:
    """Any generated pipeline: triggered streams first (the commonest source of runner bugs),
    then batch, then on-time streams, then stateful DoFns."""
    return st.one_of(triggered_programs(), batch_programs(), on_time_stream_programs(), stateful_programs())
