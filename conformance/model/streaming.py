"""A TestStream script replayed through one triggered GroupByKey (SEMANTICS 4, 5 and 9).

The script is a list of events: ``Elements([(key, value, timestamp), ...])``, ``Watermark(t)`` and
``ProcessingTime(advance)``; at its end the watermark goes to the end of time. The runner applies
each event only once the pipeline is quiescent (SEMANTICS 9), so what the model knows after an
event is what every correct runner has done by then.

``replay`` gives every pane the model derives and, per key and window, which of them the model
fixes exactly. It fixes them where the runner has no choice: a window that never received two
elements in one event, or received them where no firing depends on how the event's elements were
split into bundles. Where the runner may choose (a count trigger, or late data, met by several
elements of one event: they may share a bundle or not), the window is *open* and is judged by the
constraints of conformance/model/constraints.py instead, from what ``WindowFacts`` records.

Pane rules (SEMANTICS 5), with the windowing strategy a Python pipeline declares (OnTimeBehavior
FIRE_ALWAYS, ClosingBehavior EMIT_ALWAYS):
- an element whose window's max timestamp plus the allowed lateness is behind the watermark is
  dropped, as is an element of a window whose trigger has finished;
- a firing before the watermark passes the end of the window is EARLY; after it, the first
  non-EARLY pane is ON_TIME when the watermark fired it, and LATE otherwise (where only late data
  reached the window, or where time or a count fired that first pane, Python's driver and Java's
  PaneInfoTracker disagree: the window is open);
- a window is collected once the watermark passes its max timestamp plus the allowed lateness; a
  firing then, or the collection itself, gives the final pane (is_last), emitted even if nothing
  is new; so is the firing that finishes the trigger;
- a firing with nothing new is emitted only as the ON_TIME pane or as the final pane;
- ACCUMULATING panes hold everything so far, DISCARDING ones what came since the last firing;
- a pane's timestamp is the window's max timestamp (END_OF_WINDOW), or the earliest or latest
  timestamp of the elements since the last firing that were not behind the watermark when they
  arrived (an output may not be held behind it), or the max timestamp when there are none;
- merged sessions start their pane indices afresh unless the merged window is one that existed.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import NamedTuple

from conformance.model.batch import END_OF_WINDOW, Pane, combine_timestamps, key_identity
from conformance.model.time import MAX_TIMESTAMP_MS
from conformance.model.triggers import Moment, Trigger


class Elements(NamedTuple):
    elements: tuple  # (key, value, timestamp_ms) ...


class Watermark(NamedTuple):
    to: int


class ProcessingTime(NamedTuple):
    advance: int


@dataclass(frozen=True)
class Strategy:
    """The windowing strategy of the GroupByKey's input."""

    windowfn: object
    trigger: Trigger
    accumulating: bool = False
    allowed_lateness: int = 0
    timestamp_combiner: str = END_OF_WINDOW


class Firing(NamedTuple):
    """One emitted pane: the GroupByKey's output (key, sorted values) at ``timestamp`` in ``window``."""

    key: object
    window: object
    values: tuple
    timestamp: int
    pane: Pane
    step: int  # the event that fired it (len(events): the end of the script)


@dataclass
class WindowFacts:
    """What the model knows of one key and window, exact panes or not: what constraints read."""

    key: object
    window: object
    kept: Counter = field(default_factory=Counter)  # values that reached the window's state in the replay
    on_time: Counter = field(default_factory=Counter)  # values that arrived before the end passed
    dropped: Counter = field(default_factory=Counter)  # values behind the lateness horizon: dropped by all
    # values that arrived after the trigger finished in the replay: another bundling may have kept them
    after_finish: Counter = field(default_factory=Counter)
    open: bool = False  # the runner chose how to bundle some of its data: judged by constraints


@dataclass
class _State:
    window: object
    trigger: object
    values: list = field(default_factory=list)  # accumulated (value, timestamp, hold-eligible)
    new: list = field(default_factory=list)  # since the last firing
    index: int = 0
    nonspec: int = 0


@dataclass
class Replay:
    firings: list[Firing]
    facts: dict  # (key identity, window) -> WindowFacts
    strategy: Strategy


def replay(events: list, strategy: Strategy) -> Replay:
    return _Replayer(strategy).run(events)


class _Replayer:
    def __init__(self, strategy: Strategy):
        self.s = strategy
        self.watermark = -MAX_TIMESTAMP_MS
        self.processing_time = 0
        self.live: dict = {}  # key identity -> {window: _State}
        self.keys: dict = {}  # key identity -> key
        self.closed: set = set()  # (key identity, window) whose trigger finished
        self.firings: list[Firing] = []
        self.facts: dict = {}
        # (key identity, window or None for all of the key's) the runner may have bundled as it chose
        self.open_keys: set = set()
        self.step = 0

    def run(self, events: list) -> Replay:
        for self.step, event in enumerate(events):
            if isinstance(event, Elements):
                self.elements(event.elements)
            elif isinstance(event, Watermark):
                self.advance_watermark(event.to)
            elif isinstance(event, ProcessingTime):
                self.processing_time += event.advance
                self.evaluate(watermark_caused=False)
            else:
                raise TypeError(f"not a TestStream event: {event!r}")
        self.step = len(events)
        self.advance_watermark(MAX_TIMESTAMP_MS)
        for (kid, window), facts in self.facts.items():
            facts.open = (kid, window) in self.open_keys or (kid, None) in self.open_keys
        return Replay(self.firings, self.facts, self.s)

    def moment(self, window) -> Moment:
        return Moment(self.watermark, self.processing_time, window.max_timestamp)

    def fact(self, kid, window) -> WindowFacts:
        if (kid, window) not in self.facts:
            self.facts[(kid, window)] = WindowFacts(self.keys[kid], window)
        return self.facts[(kid, window)]

    def elements(self, batch) -> None:
        touched = []
        per_window: Counter = Counter()
        late_in_batch: set = set()
        for key, value, ts in batch:
            kid = key_identity(key)
            self.keys[kid] = key
            for proto in self.s.windowfn.assign(ts):
                if proto.max_timestamp + self.s.allowed_lateness < self.watermark:
                    self.fact(kid, proto).dropped[value] += 1
                    continue
                state = self.place(kid, proto)
                if state is None:  # its trigger finished: the window takes nothing more
                    facts = self.fact(kid, proto)
                    facts.after_finish[value] += 1
                    if not self.moment(proto).past_end:
                        facts.on_time[value] += 1
                    continue
                m = self.moment(state.window)
                state.trigger.on_element(m)
                entry = (value, ts, ts >= self.watermark)
                state.values.append(entry)
                state.new.append(entry)
                facts = self.fact(kid, state.window)
                facts.kept[value] += 1
                if not m.past_end:
                    facts.on_time[value] += 1
                else:
                    late_in_batch.add((kid, self.bundle_unit(state.window)))
                per_window[(kid, self.bundle_unit(state.window))] += 1
                if (kid, state.window) not in touched:
                    touched.append((kid, state.window))
        for (kid, window), n in per_window.items():
            if n > 1 and (self.s.trigger.counts or (kid, window) in late_in_batch):
                self.open_keys.add((kid, window))
        for kid, window in touched:
            state = self.live.get(kid, {}).get(window)
            if state is not None and state.trigger.should_fire(self.moment(window)):
                self.fire(kid, state, watermark_caused=False, collected=False)

    def bundle_unit(self, window):
        """What one bundle's elements may change together: a window, or with merging windows all
        of a key's windows (None), since a merge may join them."""
        return None if self.s.windowfn.merging else window

    def place(self, kid, proto) -> _State | None:
        """The state the element's proto-window belongs to, merging sessions."""
        windows = self.live.setdefault(kid, {})
        if not self.s.windowfn.merging:
            if (kid, proto) in self.closed:
                return None
            if proto not in windows:
                windows[proto] = _State(proto, self.s.trigger.new_state())
            return windows[proto]
        merged = self.s.windowfn.merge([*windows, proto])
        target = merged[proto]
        members = [w for w in windows if merged[w] == target]
        if target in windows and members == [target]:
            return windows[target]
        if (kid, target) in self.closed:
            return None
        states = [windows.pop(w) for w in members]
        if not states:
            new = _State(target, self.s.trigger.new_state())
        else:
            keeps = next((s for s in states if s.window == target), None)
            first, rest = states[0], states[1:]
            new = _State(target, first.trigger.merged([s.trigger for s in rest]))
            for s in states:
                new.values += s.values
                new.new += s.new
            if keeps is not None:
                new.index, new.nonspec = keeps.index, keeps.nonspec
            facts = self.fact(kid, target)
            for s in states:
                old = self.facts.pop((kid, s.window), None)
                if old is not None and s.window != target:
                    facts.kept += old.kept
                    facts.on_time += old.on_time
                    facts.dropped += old.dropped
                    facts.after_finish += old.after_finish
                    facts.open = facts.open or old.open
        windows[target] = new
        return new

    def advance_watermark(self, to: int) -> None:
        self.watermark = max(self.watermark, to)
        self.evaluate(watermark_caused=True)

    def evaluate(self, watermark_caused: bool) -> None:
        for kid in list(self.live):
            for window, state in sorted(self.live[kid].items(), key=lambda kv: repr(kv[0])):
                m = self.moment(window)
                collected = watermark_caused and m.max_timestamp + self.s.allowed_lateness < self.watermark
                if collected or state.trigger.should_fire(m):
                    if watermark_caused and not collected and state.nonspec and not state.new:
                        # Past its end and fired there already, nothing new: a trigger the watermark
                        # alone makes ready again (an AfterEach's next AfterWatermark) fires when the
                        # runner next evaluates the window. Java's and Python's drivers do so on the
                        # next element or at collection, timers set on elements; this model at the
                        # next watermark advance. When is the runner's: judge by constraints.
                        self.open_keys.add((kid, self.bundle_unit(state.window)))
                    self.fire(kid, state, watermark_caused, collected)

    def fire(self, kid, state: _State, watermark_caused: bool, collected: bool) -> None:
        m = self.moment(state.window)
        finished = state.trigger.on_fire(m) if state.trigger.should_fire(m) else False
        last = finished or collected
        if not m.past_end:
            timing = "EARLY"
        elif watermark_caused and state.nonspec == 0:
            timing = "ON_TIME"
            if not self.fact(kid, state.window).on_time:
                # Only late data reached this window: whether the watermark's pane is then ON_TIME
                # (Python's trigger driver) or LATE (Java's PaneInfoTracker: the output watermark
                # already passed the window) SDKs and runners settle differently: judge by constraints.
                self.open_keys.add((kid, self.bundle_unit(state.window)))
        else:
            timing = "LATE"
            if state.nonspec == 0 and not watermark_caused and self.fact(kid, state.window).on_time:
                # The first pane after the end, fired by time or count rather than the watermark:
                # LATE in Python's trigger driver (only the watermark's firing is ON_TIME, as
                # PaneInfo.Timing's Javadoc says), ON_TIME in Java's PaneInfoTracker while the
                # output watermark is held behind the window's end. Beam's two drivers differ:
                # judge by constraints.
                self.open_keys.add((kid, self.bundle_unit(state.window)))
        if state.new or timing == "ON_TIME" or last:
            content = state.values if self.s.accumulating else state.new
            eligible = [ts for _, ts, ok in state.new if ok]
            ts = combine_timestamps(eligible, state.window, self.s.timestamp_combiner)
            pane = Pane(state.index == 0, last, timing, state.index, -1 if timing == "EARLY" else state.nonspec)
            self.firings.append(
                Firing(self.keys[kid], state.window, tuple(sorted(v for v, _, _ in content)), ts, pane, self.step)
            )
            state.index += 1
            if timing != "EARLY":
                state.nonspec += 1
        state.new = []
        if not self.s.accumulating:
            state.values = []
        if last:
            del self.live[kid][state.window]
            self.closed.add((kid, state.window))
