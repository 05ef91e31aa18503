"""Trigger state machines: when a window's pane fires (conformance/SEMANTICS.md, section 5).

A trigger is plain, immutable and picklable data (built once, when the Plan is, from the Runner
API Trigger proto: graph/trigger_spec.py); the state
of one trigger for one key and window is a tree of ``Node`` objects, parallel to the trigger.
The pane logic (engine/panes.py) drives it: ``on_element`` for each element added to the
window, ``should_fire`` whenever the window is evaluated (after an element, when the watermark
passes the window's end, when a processing-time deadline comes due), ``on_fire`` when it fires.
A finished trigger closes its window. Each trigger type follows the Beam model's state
machine for it (Java's TriggerStateMachines, Python's trigger driver), written here afresh.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Context:
    """What a trigger may look at: the input watermark, the processing-time clock, the window."""

    watermark: int
    now: int
    window_end: int  # the window's max timestamp

    @property
    def past_end(self) -> bool:
        return self.watermark > self.window_end


@dataclass
class Node:
    """One trigger's state for one window."""

    finished: bool = False
    children: list = field(default_factory=list)
    count: int = 0  # AfterCount: elements since the trigger was (re)started
    deadline: int | None = None  # AfterProcessingTime: when it may fire
    late: bool = False  # AfterWatermark: the end of the window has fired
    current: int = 0  # AfterEach: the child now running


class Trigger:
    @property
    def children(self) -> tuple:
        """The sub-triggers, parallel to a state Node's children."""
        return ()

    def new(self) -> Node:
        return Node(children=[c.new() for c in self.children])

    def on_element(self, st: Node, ctx: Context) -> None:
        for c, s in zip(self.children, st.children, strict=True):
            if not s.finished:
                c.on_element(s, ctx)

    def should_fire(self, st: Node, ctx: Context) -> bool:
        raise NotImplementedError

    def on_fire(self, st: Node, ctx: Context) -> None:
        st.finished = True  # a once-trigger by default

    def merge(self, states: list[Node]) -> Node:
        """The state of a window that several windows merged into (sessions)."""
        merged = Node(
            finished=all(s.finished for s in states),
            children=[c.merge([s.children[i] for s in states]) for i, c in enumerate(self.children)],
        )
        self._merge_own(merged, states)
        return merged

    def _merge_own(self, merged: Node, states: list[Node]) -> None:
        pass

    def deadline(self, st: Node) -> int | None:
        """The earliest processing time at which this trigger could fire (None: not waiting for one)."""
        return _earliest(c.deadline(s) for c, s in zip(self.children, st.children, strict=True) if not s.finished)


def _earliest(times) -> int | None:
    times = [t for t in times if t is not None]
    return min(times) if times else None


def _reset(trigger: Trigger, st: Node) -> None:
    fresh = trigger.new()
    st.__dict__.update(fresh.__dict__)


@dataclass(frozen=True)
class Default(Trigger):
    """Fires whenever evaluated once the watermark is past the end of the window; never finishes
    (so: the on-time pane, then one late pane per late element)."""

    def should_fire(self, st, ctx):
        return ctx.past_end

    def on_fire(self, st, ctx):
        pass


@dataclass(frozen=True)
class Never(Trigger):
    """Never fires: only the final pane at garbage collection."""

    def should_fire(self, st, ctx):
        return False


@dataclass(frozen=True)
class AfterCount(Trigger):
    count: int

    def on_element(self, st, ctx):
        st.count += 1

    def should_fire(self, st, ctx):
        return st.count >= self.count

    def _merge_own(self, merged, states):
        merged.count = sum(s.count for s in states)


@dataclass(frozen=True)
class Always(AfterCount):
    """Fires for every element (Python's Always): Repeatedly(AfterCount(1)), which never finishes."""

    count: int = 1

    def on_fire(self, st, ctx):
        st.count = 0

    def _merge_own(self, merged, states):
        super()._merge_own(merged, states)
        merged.finished = False


@dataclass(frozen=True)
class AfterProcessingTime(Trigger):
    """Fires once the clock reaches the first element's processing time, transformed.

    transforms: ("delay", micros) or ("align", period, offset), applied in order."""

    transforms: tuple = ()

    def on_element(self, st, ctx):
        if st.deadline is None:
            st.deadline = self.target(ctx.now)

    def target(self, now: int) -> int:
        t = now
        for transform in self.transforms:
            if transform[0] == "delay":
                t += transform[1]
            else:
                _, period, offset = transform
                since = (t - offset) % period
                t = t if since == 0 else t + period - since
        return t

    def should_fire(self, st, ctx):
        return st.deadline is not None and ctx.now >= st.deadline

    def deadline(self, st):
        return st.deadline

    def _merge_own(self, merged, states):
        merged.deadline = _earliest(s.deadline for s in states)


@dataclass(frozen=True)
class AfterSynchronizedProcessingTime(AfterProcessingTime):
    """One runner, one clock: synchronized processing time is processing time (no delay)."""


@dataclass(frozen=True)
class AfterWatermark(Trigger):
    """The on-time firing when the watermark passes the end of the window; ``early`` fires
    repeatedly before it, ``late`` repeatedly after it (without ``late`` the trigger finishes
    with the on-time pane)."""

    early: Trigger | None = None
    late: Trigger | None = None

    @property
    def children(self):
        return tuple(t if t is not None else Never() for t in (self.early, self.late))

    def on_element(self, st, ctx):
        phase, child = self._phase(st)
        if phase is not None:
            phase.on_element(child, ctx)

    def _phase(self, st: Node):
        if not st.late:
            return self.early, st.children[0]
        return self.late, st.children[1]

    def should_fire(self, st, ctx):
        if not st.late:
            return ctx.past_end or (self.early is not None and self.early.should_fire(st.children[0], ctx))
        return self.late is not None and self.late.should_fire(st.children[1], ctx)

    def on_fire(self, st, ctx):
        if not st.late and ctx.past_end:
            st.late = True
            if self.late is None:
                st.finished = True
            return
        phase, child = self._phase(st)
        phase.on_fire(child, ctx)
        if child.finished:  # early and late firings repeat
            _reset(phase, child)

    def _merge_own(self, merged, states):
        # Late if any merging window already fired on time (Python's trigger driver).
        merged.late = any(s.late for s in states)
        merged.finished = merged.late and self.late is None and all(s.finished for s in states)

    def deadline(self, st):
        phase, child = self._phase(st)
        return phase.deadline(child) if phase is not None else None


@dataclass(frozen=True)
class Repeatedly(Trigger):
    sub: Trigger

    @property
    def children(self):
        return (self.sub,)

    def should_fire(self, st, ctx):
        return self.sub.should_fire(st.children[0], ctx)

    def on_fire(self, st, ctx):
        child = st.children[0]
        self.sub.on_fire(child, ctx)
        if child.finished:
            _reset(self.sub, child)

    def _merge_own(self, merged, states):
        merged.finished = False


@dataclass(frozen=True)
class _OfSubs(Trigger):
    """A trigger made of a tuple of sub-triggers, its children."""

    subs: tuple

    @property
    def children(self):
        return self.subs


@dataclass(frozen=True)
class AfterEach(_OfSubs):
    """Runs its children one after the other; finishes with the last."""

    def on_element(self, st, ctx):
        self.subs[st.current].on_element(st.children[st.current], ctx)

    def should_fire(self, st, ctx):
        return self.subs[st.current].should_fire(st.children[st.current], ctx)

    def on_fire(self, st, ctx):
        child = st.children[st.current]
        self.subs[st.current].on_fire(child, ctx)
        while st.current < len(self.subs) and st.children[st.current].finished:
            st.current += 1
        if st.current == len(self.subs):
            st.finished = True
            st.current = len(self.subs) - 1

    def _merge_own(self, merged, states):
        merged.current = next((i for i, c in enumerate(merged.children) if not c.finished), len(self.subs) - 1)

    def deadline(self, st):
        return self.subs[st.current].deadline(st.children[st.current])


@dataclass(frozen=True)
class AfterAny(_OfSubs):
    """Fires (and finishes) as soon as any child fires."""

    def should_fire(self, st, ctx):
        return any(c.should_fire(s, ctx) for c, s in zip(self.subs, st.children, strict=True))

    def on_fire(self, st, ctx):
        for c, s in zip(self.subs, st.children, strict=True):
            if c.should_fire(s, ctx):
                c.on_fire(s, ctx)
        st.finished = True


@dataclass(frozen=True)
class AfterAll(_OfSubs):
    """Fires (and finishes) once every child has fired."""

    def should_fire(self, st, ctx):
        return all(s.finished or c.should_fire(s, ctx) for c, s in zip(self.subs, st.children, strict=True))

    def on_fire(self, st, ctx):
        for c, s in zip(self.subs, st.children, strict=True):
            if not s.finished:
                c.on_fire(s, ctx)
        st.finished = True


@dataclass(frozen=True)
class OrFinally(Trigger):
    """``main`` until ``until`` fires, which finishes the trigger."""

    main: Trigger
    until: Trigger

    @property
    def children(self):
        return (self.main, self.until)

    def should_fire(self, st, ctx):
        return self.main.should_fire(st.children[0], ctx) or self.until.should_fire(st.children[1], ctx)

    def on_fire(self, st, ctx):
        if self.until.should_fire(st.children[1], ctx):
            st.finished = True
            return
        self.main.on_fire(st.children[0], ctx)
        if st.children[0].finished:
            st.finished = True


def waits_for_processing_time(trigger: Trigger) -> bool:
    """Does the trigger, or one of its sub-triggers, fire on processing time?"""
    return isinstance(trigger, AfterProcessingTime) or any(waits_for_processing_time(c) for c in trigger.children)


__all__ = [
    "AfterAll",
    "AfterAny",
    "AfterCount",
    "AfterEach",
    "AfterProcessingTime",
    "AfterSynchronizedProcessingTime",
    "AfterWatermark",
    "Always",
    "Context",
    "Default",
    "Never",
    "Node",
    "OrFinally",
    "Repeatedly",
    "Trigger",
    "waits_for_processing_time",
]
