"""Every standard trigger as a per-window state machine (SEMANTICS 5).

A trigger is a description (``AfterCount(2)``, ``Repeatedly(...)``); ``new_state()`` gives the
state one key and window keep. The driver (conformance/model/streaming.py) tells a state of each
element that reaches the window (``on_element``), asks ``should_fire`` after every TestStream
event, and calls ``on_fire`` when it fires; ``on_fire`` says whether the trigger has finished.
What each state reads is a ``Moment``: the GroupByKey's input watermark, the processing time and
the window's max timestamp.

The conditions of the once-triggers (a count reached, the watermark past the end of the window, a
processing time reached) only ever become true, so a composite may ask its children again at any
time; only ``Repeatedly`` and the early and late parts of ``AfterWatermark`` start a child afresh.

Rests on: the programming guide's triggers section, the ``Trigger`` message of beam_runner_api.proto,
the Python SDK's trigger transcripts, and the finished-trigger rules apache/beam PR #40879 writes into
the proto (when the root trigger finishes, that firing is the window's final pane, no pane follows,
and later elements of the window are dropped).
"""

from __future__ import annotations

import ast
from abc import ABC, abstractmethod
from dataclasses import dataclass


@dataclass(frozen=True)
class Moment:
    watermark: int
    processing_time: int
    max_timestamp: int

    @property
    def past_end(self) -> bool:
        """The watermark has passed the end of the window (its max timestamp is behind it)."""
        return self.watermark > self.max_timestamp


class Trigger(ABC):
    """A trigger description."""

    @abstractmethod
    def new_state(self) -> TriggerState:
        """The state one key and window keep."""

    def children(self) -> tuple[Trigger, ...]:
        return ()

    def walk(self):
        yield self
        for c in self.children():
            yield from c.walk()

    @property
    def counts(self) -> bool:
        """Whether some part fires on a count of elements (so the panes depend on bundling)."""
        return any(isinstance(t, AfterCount) for t in self.walk())

    #: whether the trigger can finish before its window is collected (later data is dropped);
    #: every trigger says so of itself
    can_finish: bool

    @property
    def fires_on_time(self) -> bool:
        """Whether it fires exactly when the watermark passes the end of the window, whatever the
        data (the default trigger and AfterWatermark): the ON_TIME pane is then certain."""
        return False


class TriggerState(ABC):
    def on_element(self, m: Moment) -> None:  # noqa: B027 - most triggers ignore elements
        pass

    @abstractmethod
    def should_fire(self, m: Moment) -> bool:
        """Whether the trigger fires now."""

    @abstractmethod
    def on_fire(self, m: Moment) -> bool:
        """Fire; True when the trigger has now finished."""

    def merged(self, others: list[TriggerState]) -> TriggerState:
        """The state of a merged window (Sessions) from this one and ``others``. AfterEach has no
        merge rule in the model: the grammar never puts it under a merging WindowFn."""
        raise ValueError(f"the model has no rule for merging windows under {type(self).__name__}")


# --- once-triggers ----------------------------------------------------------------------------


@dataclass(frozen=True)
class AfterCount(Trigger):
    count: int

    def new_state(self):
        return _CountState(self.count)

    can_finish = True

    def __repr__(self):
        return f"AfterCount({self.count})"


@dataclass
class _CountState(TriggerState):
    needed: int
    seen: int = 0

    def on_element(self, m):
        self.seen += 1

    def should_fire(self, m):
        return self.seen >= self.needed

    def on_fire(self, m):
        return True

    def merged(self, others):
        return _CountState(self.needed, self.seen + sum(o.seen for o in others))


@dataclass(frozen=True)
class AfterProcessingTime(Trigger):
    """Fires ``delay`` of processing time after the first element of its pane."""

    delay: int

    def new_state(self):
        return _ProcessingTimeState(self.delay)

    can_finish = True

    def __repr__(self):
        return f"AfterProcessingTime({self.delay})"


@dataclass
class _ProcessingTimeState(TriggerState):
    delay: int
    due: int | None = None

    def on_element(self, m):
        if self.due is None:
            self.due = m.processing_time + self.delay

    def should_fire(self, m):
        return self.due is not None and m.processing_time >= self.due

    def on_fire(self, m):
        return True

    def merged(self, others):
        dues = [s.due for s in [self, *others] if s.due is not None]
        return _ProcessingTimeState(self.delay, min(dues) if dues else None)


@dataclass(frozen=True)
class Never(Trigger):
    """Never fires: the window's one pane is the final one when it is collected."""

    def new_state(self):
        return _NeverState()

    can_finish = False

    def __repr__(self):
        return "Never()"


class _NeverState(TriggerState):
    def should_fire(self, m):
        return False

    def on_fire(self, m):  # never asked: it never should fire
        return False

    def merged(self, others):
        return self


# --- the watermark ----------------------------------------------------------------------------


@dataclass(frozen=True)
class AfterWatermark(Trigger):
    """Fires ON_TIME once the watermark passes the end of the window; before that the early
    trigger fires repeatedly, after it the late one. Without a late trigger it finishes at the
    ON_TIME pane, so later data of the window is dropped."""

    early: Trigger | None = None
    late: Trigger | None = None

    def new_state(self):
        return _WatermarkState(self.early, self.late)

    def children(self):
        return tuple(t for t in (self.early, self.late) if t is not None)

    @property
    def can_finish(self):
        return self.late is None

    fires_on_time = True

    def __repr__(self):
        parts = [f"{n}={t!r}" for n, t in (("early", self.early), ("late", self.late)) if t is not None]
        return f"AfterWatermark({', '.join(parts)})"


class _WatermarkState(TriggerState):
    def __init__(self, early: Trigger | None, late: Trigger | None):
        self.early_trigger, self.late_trigger = early, late
        self.early = early.new_state() if early else None
        self.late = late.new_state() if late else None
        self.on_time_fired = False

    def on_element(self, m):
        if not self.on_time_fired:
            if self.early is not None and not m.past_end:
                self.early.on_element(m)
        elif self.late is not None:
            self.late.on_element(m)

    def should_fire(self, m):
        if not self.on_time_fired:
            return m.past_end or (self.early is not None and self.early.should_fire(m))
        return self.late is not None and self.late.should_fire(m)

    def on_fire(self, m):
        if not self.on_time_fired:
            if m.past_end:
                self.on_time_fired = True
                return self.late is None
            assert self.early is not None and self.early_trigger is not None
            self.early.on_fire(m)
            self.early = self.early_trigger.new_state()  # the early part repeats
            return False
        assert self.late is not None and self.late_trigger is not None
        self.late.on_fire(m)
        self.late = self.late_trigger.new_state()  # the late part repeats
        return False

    def merged(self, others):
        out = _WatermarkState(self.early_trigger, self.late_trigger)
        states = [self, *others]
        out.on_time_fired = any(s.on_time_fired for s in states)
        if out.early is not None:
            out.early = states[0].early.merged([s.early for s in states[1:]])  # type: ignore[union-attr]
        if out.late is not None:
            out.late = states[0].late.merged([s.late for s in states[1:]])  # type: ignore[union-attr]
        return out


@dataclass(frozen=True)
class Default(Trigger):
    """The default trigger: ON_TIME when the watermark passes the end of the window, then a LATE
    pane for every bundle of late data, until the window is collected. It never finishes."""

    def new_state(self):
        return _DefaultState()

    can_finish = False
    fires_on_time = True

    def __repr__(self):
        return "Default()"


@dataclass
class _DefaultState(TriggerState):
    pending: bool = False  # data since the last firing

    def on_element(self, m):
        self.pending = True

    def should_fire(self, m):
        return self.pending and m.past_end

    def on_fire(self, m):
        self.pending = False
        return False

    def merged(self, others):
        return _DefaultState(self.pending or any(o.pending for o in others))


# --- composites -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Repeatedly(Trigger):
    """Fires whenever its child would, and starts the child afresh after each firing; never finishes."""

    child: Trigger

    def new_state(self):
        return _RepeatedlyState(self.child)

    def children(self):
        return (self.child,)

    can_finish = False

    def __repr__(self):
        return f"Repeatedly({self.child!r})"


class _RepeatedlyState(TriggerState):
    def __init__(self, child: Trigger, state: TriggerState | None = None):
        self.child_trigger = child
        self.child = state or child.new_state()

    def on_element(self, m):
        self.child.on_element(m)

    def should_fire(self, m):
        return self.child.should_fire(m)

    def on_fire(self, m):
        self.child.on_fire(m)
        self.child = self.child_trigger.new_state()
        return False

    def merged(self, others):
        return _RepeatedlyState(self.child_trigger, self.child.merged([o.child for o in others]))


def Always() -> Trigger:  # noqa: N802 - named as Beam names it
    """Fires for every bundle: Repeatedly(AfterCount(1))."""
    return Repeatedly(AfterCount(1))


@dataclass(frozen=True)
class _Parallel(Trigger):
    triggers: tuple[Trigger, ...]

    def __init__(self, *triggers: Trigger):
        object.__setattr__(self, "triggers", tuple(triggers))

    def children(self):
        return self.triggers

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(map(repr, self.triggers))})"


@dataclass(frozen=True, repr=False, init=False)
class AfterAny(_Parallel):
    """Fires when any child fires, and finishes with it."""

    def new_state(self):
        return _ParallelState(self, any)

    can_finish = True


@dataclass(frozen=True, repr=False, init=False)
class AfterAll(_Parallel):
    """Fires once every child has fired, and finishes then."""

    def new_state(self):
        return _ParallelState(self, all)

    can_finish = True


class _ParallelState(TriggerState):
    def __init__(self, trigger: _Parallel, combine, states: list[TriggerState] | None = None):
        self.trigger, self.combine = trigger, combine
        self.states = states or [t.new_state() for t in trigger.triggers]

    def on_element(self, m):
        for s in self.states:
            s.on_element(m)

    def should_fire(self, m):
        return self.combine(s.should_fire(m) for s in self.states)

    def on_fire(self, m):
        finished = [s.on_fire(m) for s in self.states if s.should_fire(m)]
        return self.combine(finished) if self.combine is all else any(finished)

    def merged(self, others):
        return _ParallelState(
            self.trigger,
            self.combine,
            [s.merged([o.states[i] for o in others]) for i, s in enumerate(self.states)],  # type: ignore[attr-defined]
        )


@dataclass(frozen=True, repr=False, init=False)
class AfterEach(_Parallel):
    """Runs its children one after the other: each fires (once or more) until it finishes, then
    the next takes over; finishes with the last. Only the child in charge sees elements."""

    def new_state(self):
        return _EachState(self.triggers)

    can_finish = True


class _EachState(TriggerState):
    def __init__(self, triggers: tuple[Trigger, ...]):
        self.triggers = triggers
        self.position = 0
        self.current = triggers[0].new_state()

    def on_element(self, m):
        self.current.on_element(m)

    def should_fire(self, m):
        return self.current.should_fire(m)

    def on_fire(self, m):
        if self.current.on_fire(m):
            self.position += 1
            if self.position == len(self.triggers):
                return True
            self.current = self.triggers[self.position].new_state()
        return False


@dataclass(frozen=True)
class OrFinally(Trigger):
    """Fires when ``trigger`` fires, and a last time when ``until`` does, which finishes it."""

    trigger: Trigger
    until: Trigger

    def new_state(self):
        return _OrFinallyState(self.trigger.new_state(), self.until.new_state())

    def children(self):
        return (self.trigger, self.until)

    can_finish = True

    def __repr__(self):
        return f"OrFinally({self.trigger!r}, {self.until!r})"


@dataclass
class _OrFinallyState(TriggerState):
    main: TriggerState
    until: TriggerState

    def on_element(self, m):
        self.main.on_element(m)
        self.until.on_element(m)

    def should_fire(self, m):
        return self.main.should_fire(m) or self.until.should_fire(m)

    def on_fire(self, m):
        finished = False
        if self.main.should_fire(m):
            finished = self.main.on_fire(m)
        if self.until.should_fire(m):
            self.until.on_fire(m)
            finished = True
        return finished

    def merged(self, others):
        return _OrFinallyState(self.main.merged([o.main for o in others]), self.until.merged([o.until for o in others]))


_NAMES = {
    "AfterWatermark": AfterWatermark,
    "AfterCount": AfterCount,
    "AfterProcessingTime": AfterProcessingTime,
    "AfterAny": AfterAny,
    "AfterAll": AfterAll,
    "AfterEach": AfterEach,
    "Repeatedly": Repeatedly,
    "OrFinally": OrFinally,
    "Never": Never,
    "Always": Always,
    "Default": Default,
    "DefaultTrigger": Default,
}


def parse(text: str, unit: int = 1) -> Trigger:
    """A trigger written with Beam's Python names (``AfterWatermark(early=AfterCount(2))``); the
    delays of AfterProcessingTime are multiplied by ``unit`` (1000 for seconds to ms)."""

    def build(node):
        if isinstance(node, ast.Name) and node.id in _NAMES:
            return _NAMES[node.id]()
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name) or node.func.id not in _NAMES:
            raise ValueError(f"not a trigger the model knows: {ast.unparse(node)!r} in {text!r}")
        cls = _NAMES[node.func.id]
        args = [_arg(a) for a in node.args]
        kwargs = {k.arg: _arg(k.value) for k in node.keywords}
        if cls is AfterProcessingTime:
            args = [a * unit for a in args]
        return cls(*args, **kwargs)

    def _arg(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        return build(node)

    return build(ast.parse(text.strip(), mode="eval").body)
