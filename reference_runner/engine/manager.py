"""The ElementManager: pending elements per stage, watermarks, and which bundle runs next.

Stages are described by plain data (StageSpec). The executor asks for a bundle, runs it
wherever it likes and commits the outputs; the manager routes them to the consuming stages,
performs the runner-side primitives itself (Flatten passes elements through, GroupByKey
buffers and fires when the watermark passes a window's end) and advances watermarks.
Bounded inputs: a stage's output watermark is +infinity once nothing upstream can produce
more and it has no pending or in-flight work.

Keyed stages (a stateful ParDo at their head) also keep pending event-time timers: the
stage runs at most one bundle at a time, elements first, then the due timers (the earliest
per key, again and again, since a callback may set earlier ones). A pending timer holds
the stage's output watermark at its output timestamp; a due one keeps the stage busy.

Streaming (a pipeline with TestStreams): a TestStream is a runner-side source whose events
(element batches, watermark advances, processing-time advances) are applied one at a time,
each only when nothing else can run, so results do not depend on bundling. The runner owns a
processing-time clock (engine/clock.py): TestStreams advance it, and once they are exhausted and
nothing else can progress it moves to the next processing-time timer (the virtual clock jumps
there, the wall clock waits for it). GroupByKeys fire panes by their
triggers (engine/panes.py); keyed stages drop the state and processing-time timers of windows
once the watermark passes their expiry. Watermarks never move backwards.

Drain: TestStreams stop (their remaining events are dropped, their watermark goes to
+infinity); the self-checkpointed residuals of splittable DoFns, and those they make from then
on, become truncation bundles (the SDF's truncate, run by the executor) whose finite
restrictions return as ordinary input. Everything else finishes as with bounded input.

Side inputs in streaming are read per window while they grow (engine/sideinputs.py): a main
input element is held back (holding its stage's watermark) until every side window it maps
to is ready - a pane fired for it, or the side watermark passed its end - and a bundle sees
the latest fired pane of each. Bundles run one at a time and stages are scanned in
topological order, so a side-input reader only runs once nothing upstream of its side inputs
can: what it sees depends on the TestStream events applied so far, not on bundling.
"""
from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

from reference_runner.engine.clock import VirtualClock
from reference_runner.engine.grouping import GroupBuffer, Grouping
from reference_runner.engine.panes import TriggeredBuffer
from reference_runner.engine.sideinputs import SideInputBuffer
from reference_runner.engine.timers import TimerId, TimerStore, TimerUpdate
from reference_runner.engine.windows import MAX_TIMESTAMP, MIN_TIMESTAMP

SDK, FLATTEN, GROUP, IMPULSE, TEST_STREAM = "sdk", "flatten", "group", "impulse", "test_stream"
# TestStream events, as plain data
ELEMENTS, WATERMARK, PROCESSING_TIME = "elements", "watermark", "processing_time"
PLUS_INFINITY = MAX_TIMESTAMP + 1  # past every timestamp, as the watermark of finished input


@dataclass
class StageSpec:
    id: str
    kind: str                       # SDK, FLATTEN, GROUP, IMPULSE or TEST_STREAM
    inputs: list[str]               # main input PCollections
    outputs: list[str]              # PCollections leaving the stage
    side_inputs: list[str] = field(default_factory=list)
    grouping: Grouping | None = None
    # Flatten: re-encoding of an input whose coder differs from the output's (input -> function)
    convert: dict = field(default_factory=dict)
    keyed: KeyedSpec | None = None   # stages headed by a stateful ParDo
    # TestStream: (ELEMENTS, pcollection, [encoded elements]) | (WATERMARK, pcollection, time)
    # | (PROCESSING_TIME, None, advance), in order
    events: list = field(default_factory=list)
    # Streaming, a stage reading side inputs: element -> [(side PCollection, encoded side window,
    # its max timestamp)] the element needs ready (for each of its windows, each side input)
    side_windows: Callable[[bytes], list] | None = None


@dataclass
class KeyedSpec:
    """A stage headed by a stateful ParDo (``transform``).

    key_of(element) -> (encoded key, timestamp, [(encoded window, expiry time)]), where the
    expiry time is the window's max timestamp + allowed lateness; needed for time-sorted
    input and OnWindowExpiration. expiry_timer(key, window, time) -> encoded timer of the
    ``expiry_family`` that the runner fires once per key and window of the input.
    """
    transform: str
    key_of: Callable[[bytes], Any] | None = None
    time_sorted: bool = False
    expiry_family: str | None = None
    expiry_timer: Callable[[bytes, bytes, int], bytes] | None = None


@dataclass
class Bundle:
    id: str
    stage: str
    inputs: list                    # encoded elements of the main input
    attempt: int = 0
    timers: list = field(default_factory=list)  # engine.timers.Timer due in this bundle
    truncate: bool = False          # drain: run the inputs (SDF residuals) through truncation


@dataclass
class Deferred:
    """A residual a splittable DoFn handed back (self-checkpoint): its encoded element, the
    output watermark its watermark estimator reported (None: no promise, the stage is held
    back entirely) and the processing time from which it may resume."""
    element: bytes
    hold: int | None
    ready_at: int


class Stuck(RuntimeError):
    """No stage can make progress, yet work remains."""


class ElementManager:
    def __init__(self, stages: list[StageSpec], bundle_policy=None, clock=None, side_decoders: dict | None = None):
        """``side_decoders``: side-input PCollection -> decode(element) -> ([encoded window],
        pane index or None), see engine/sideinputs.py; the side inputs to keep per window and
        pane (in streaming every one, in batch the triggered ones)."""
        self.stages = {s.id: s for s in stages}
        self.order = [s.id for s in stages]  # topological
        self.policy = bundle_policy
        self.pending: dict[str, list] = {s.id: [] for s in stages}
        #: self-checkpointed work of splittable DoFns: Deferred, run when nothing else can
        self.deferred: dict[str, list[Deferred]] = {s.id: [] for s in stages}
        self.in_flight: dict[str, int] = {s.id: 0 for s in stages}
        #: draining: residuals of splittable DoFns waiting for truncation
        self.to_truncate: dict[str, list] = {s.id: [] for s in stages}
        self.draining = False
        self.buffers = {s.id: TriggeredBuffer(s.grouping) if s.grouping.trigger is not None else GroupBuffer(s.grouping)
                        for s in stages if s.kind == GROUP}
        self.triggered = {sid for sid, b in self.buffers.items() if isinstance(b, TriggeredBuffer)}
        self.events = {s.id: deque(s.events) for s in stages if s.kind == TEST_STREAM}
        self.stream_watermark = {s.id: {p: MIN_TIMESTAMP for p in s.outputs} for s in stages if s.kind == TEST_STREAM}
        self.streaming = bool(self.events)
        self.clock = clock or VirtualClock()
        self.now = self.clock.now()  # processing time (micros), as last read from the clock
        #: keyed stages (streaming): encoded window -> expiry, for the windows their input reached
        self.windows_seen: dict[str, dict[bytes, int]] = {s.id: {} for s in stages if s.keyed and self.streaming}
        self.expired: list[tuple[str, bytes]] = []  # (transform, encoded window) whose state to drop
        self.dropped = 0  # droppable elements dropped before keyed stages
        self.timers = {s.id: TimerStore() for s in stages if s.keyed is not None}
        #: time-sorted stages: (timestamp, arrival, element) waiting for the watermark to pass
        self.unsorted: dict[str, list] = {s.id: [] for s in stages if s.keyed and s.keyed.time_sorted}
        self.input_watermark: dict[str, int] = {s.id: MIN_TIMESTAMP for s in stages}
        self._arrivals = itertools.count()
        self.consumers: dict[str, list[str]] = {}
        self.side_consumers: dict[str, list[str]] = {}
        self.producer: dict[str, str] = {}
        for s in stages:
            for p in s.inputs:
                self.consumers.setdefault(p, []).append(s.id)
            for p in s.side_inputs:
                self.side_consumers.setdefault(p, []).append(s.id)
            for p in s.outputs:
                self.producer[p] = s.id
        #: side-input PCollections per window, latest pane (every one in streaming, triggered ones
        #: in batch: the executor supplies their decoders); main input waiting for them (streaming)
        self.side_buffers = {p: SideInputBuffer(side_decoders[p]) for p in self.side_consumers
                             if side_decoders and p in side_decoders}
        self.held: dict[str, list] = {s.id: [] for s in stages
                                      if self.streaming and s.side_inputs and s.side_windows is not None}
        #: batch: full contents of PCollections read as side inputs (read once their producer finished)
        self.materialized: dict[str, list] = {p: [] for p in self.side_consumers if p not in self.side_buffers}
        self.output_watermark: dict[str, int] = {s.id: MIN_TIMESTAMP for s in stages}
        self._impulses_done = False
        self._bundles = 0

    # -- feeding -----------------------------------------------------------------------------
    def emit(self, pcollection: str, elements: list) -> None:
        """Elements produced into ``pcollection``: route them to every consumer."""
        if not elements:
            return
        if pcollection in self.side_buffers:
            self.side_buffers[pcollection].add(elements)
        elif pcollection in self.materialized:
            self.materialized[pcollection].extend(elements)
        for stage_id in self.consumers.get(pcollection, ()):
            stage = self.stages[stage_id]
            if stage.kind == FLATTEN:
                convert = stage.convert.get(pcollection)
                passed = [convert(e) for e in elements] if convert else elements
                for out in stage.outputs:
                    self.emit(out, passed)
                continue
            if stage.kind == GROUP:
                if stage_id in self.triggered:
                    fired = self.buffers[stage_id].add(elements, self.input_watermark[stage_id], self.now)
                    for out in stage.outputs:
                        self.emit(out, fired)
                else:
                    self.buffers[stage_id].add(elements)
                continue
            routed = self._drop_expired(stage_id, elements) if stage_id in self.windows_seen else elements
            if stage_id in self.unsorted:
                key_of = stage.keyed.key_of
                buffer = self.unsorted[stage_id]
                buffer.extend((key_of(e)[1], next(self._arrivals), e) for e in routed)
            else:
                self._enqueue(stage_id, routed)

    def _enqueue(self, stage_id: str, elements: list) -> None:
        """New main input of an SDK stage: pending, or held until its side windows are ready."""
        held = self.held.get(stage_id)
        if held is None:
            self.pending[stage_id].extend(elements)
        else:
            side_windows = self.stages[stage_id].side_windows
            held.extend((e, side_windows(e)) for e in elements)

    def start(self, impulse_outputs: dict[str, list]) -> None:
        """Feed the roots: the one element of every Impulse."""
        for pcollection, elements in impulse_outputs.items():
            self.emit(pcollection, elements)
        self._impulses_done = True
        self._advance()

    # -- scheduling --------------------------------------------------------------------------
    def next_bundle(self) -> Bundle | None:
        """The next bundle to run, or None when there is nothing runnable."""
        if self.clock.ticks and self.clock.now() > self.now:  # a wall clock: time passed
            self._observe(self.clock.now())
        if self.draining:
            truncation = self._next_truncation()
            if truncation is not None:
                return truncation
        for stage_id in self.order:
            stage = self.stages[stage_id]
            if stage.kind != SDK:
                continue
            if stage_id in self.held:
                self._release_held(stage_id)
            elif not self._side_inputs_ready(stage):
                continue
            if stage.keyed is not None:
                if self.in_flight[stage_id]:
                    continue  # one bundle at a time: its state writes and timers commit first
                if not self.pending[stage_id]:
                    due = self.timers[stage_id].take_due(self.input_watermark[stage_id], self.now)
                    if due:
                        return self._start(stage_id, [], due)
                    continue
            elif not self.pending[stage_id]:
                continue
            pending = self.pending[stage_id]
            size = len(pending) if self.policy is None else self.policy.bundle_size(stage_id, len(pending))
            elements, self.pending[stage_id] = pending[:size], pending[size:]
            return self._start(stage_id, elements, [])
        return self._next_deferred()

    def _next_deferred(self) -> Bundle | None:
        """Resume self-checkpointed work only when nothing else can run, so downstream stages
        (and the watermark) keep up with an unbounded source."""
        for stage_id in self.order:
            deferred = self.deferred[stage_id]
            ready = [d for d in deferred if d.ready_at <= self.now]
            if ready and not (self.stages[stage_id].keyed and self.in_flight[stage_id]):
                self.deferred[stage_id] = [d for d in deferred if d.ready_at > self.now]
                return self._start(stage_id, [d.element for d in ready], [])
        return None

    def _next_truncation(self) -> Bundle | None:
        for stage_id in self.order:
            work = self.to_truncate[stage_id]
            if work and not (self.stages[stage_id].keyed and self.in_flight[stage_id]):
                self.to_truncate[stage_id] = []
                return self._start(stage_id, work, [], truncate=True)
        return None

    def _start(self, stage_id: str, elements: list, timers: list, truncate: bool = False) -> Bundle:
        self.in_flight[stage_id] += 1
        self._bundles += 1
        return Bundle(f"b{self._bundles}", stage_id, elements, timers=timers, truncate=truncate)

    def commit(self, bundle: Bundle, outputs: dict[str, list], residuals: list = (),
               timers: list = (), deferred: list = ()) -> None:
        """A bundle succeeded: publish its outputs atomically and reschedule its residuals.

        ``timers``: the TimerUpdates the bundle made, in order. ``deferred``: (element,
        watermark hold or None, resume delay) of the self-checkpoints it made. A truncation
        bundle's outputs (the truncated restrictions) come back as ``residuals``."""
        if self.clock.ticks:  # a wall clock: outputs arrive, and resume delays start, now
            self._observe(self.clock.now())
        keyed = self.stages[bundle.stage].keyed
        if keyed is not None:
            store = self.timers[bundle.stage]
            store.apply(timers, None if bundle.inputs else self.input_watermark[bundle.stage])
            if keyed.expiry_family is not None:
                self._arm_expiry(keyed, store, bundle.inputs)
        for pcollection, elements in outputs.items():
            self.emit(pcollection, elements)
        if residuals:
            self.pending[bundle.stage][:0] = list(residuals)
        if self.draining:
            self.to_truncate[bundle.stage] += [e for e, _, _ in deferred]
        else:
            self.deferred[bundle.stage] += [Deferred(e, hold, self.now + delay) for e, hold, delay in deferred]
        self.in_flight[bundle.stage] -= 1
        self._advance()

    def fail(self, bundle: Bundle) -> None:
        """A bundle failed: nothing it produced is kept; its input goes back to the front."""
        (self.to_truncate if bundle.truncate else self.pending)[bundle.stage][:0] = bundle.inputs
        if bundle.timers:
            self.timers[bundle.stage].restore(bundle.timers)
        self.in_flight[bundle.stage] -= 1

    def _upstream_watermark(self, stage_id: str) -> int:
        """The least output watermark of the stage's main-input producers."""
        stage = self.stages[stage_id]
        return min((self.output_watermark[self.producer[p]] for p in stage.inputs if p in self.producer),
                   default=PLUS_INFINITY)

    @staticmethod
    def _arm_expiry(keyed: KeyedSpec, store: TimerStore, elements: list) -> None:
        """OnWindowExpiration: one runner timer per key and window the input reached."""
        for element in elements:
            key, _, windows = keyed.key_of(element)
            for window, expiry in windows:
                tid = TimerId(keyed.transform, keyed.expiry_family, key, "", window, expiry=True)
                store.add_if_absent(TimerUpdate(tid, False, expiry, expiry,
                                                keyed.expiry_timer(key, window, expiry)))

    def _drop_expired(self, stage_id: str, elements: list) -> list:
        """Streaming input of a keyed stage: drop elements whose every window has expired (their
        state is gone; Beam drops such droppable data), note the windows of the others."""
        seen, key_of, watermark = self.windows_seen[stage_id], self.stages[stage_id].keyed.key_of, \
            self.input_watermark[stage_id]
        kept = []
        for e in elements:
            windows = key_of(e)[2]
            if windows and all(expiry < watermark for _, expiry in windows):
                self.dropped += 1
                continue
            seen.update(windows)
            kept.append(e)
        return kept

    # -- time --------------------------------------------------------------------------------
    def advance_time(self) -> bool:
        """Nothing can run: apply the next TestStream event (the pipeline is quiescent, so each
        event sees all earlier work done), or else jump the processing-time clock to the next
        processing-time timer or trigger deadline. False when neither is possible."""
        for stage_id, events in self.events.items():
            marks = self.stream_watermark[stage_id]
            if events:
                kind, pcollection, value = events.popleft()
                if kind == ELEMENTS:
                    self.emit(pcollection, value)
                elif kind == WATERMARK:
                    marks[pcollection] = max(marks[pcollection], value)
                else:
                    self._set_clock(self.now + value)
            elif any(w < PLUS_INFINITY for w in marks.values()):
                marks.update(dict.fromkeys(marks, PLUS_INFINITY))  # an exhausted stream is finished
            else:
                continue
            self._advance()
            return True
        deadlines = [b.next_deadline() for sid, b in self.buffers.items() if sid in self.triggered]
        deadlines += [store.next_processing_time() for store in self.timers.values()]
        deadlines += [d.ready_at for deferred in self.deferred.values() for d in deferred]
        later = [d for d in deadlines if d is not None and d > self.now]
        if not later:
            return False
        self._set_clock(min(later))
        self._advance()
        return True

    def drain(self) -> None:
        """Stop ingesting and finish: TestStreams drop their remaining events and are done;
        deferred residuals (and later ones, see commit) go to truncation, however far in the
        future they were to resume."""
        self.draining = True
        for stage_id, events in self.events.items():
            events.clear()
            marks = self.stream_watermark[stage_id]
            marks.update(dict.fromkeys(marks, PLUS_INFINITY))
        for stage_id, deferred in self.deferred.items():
            self.to_truncate[stage_id] += [d.element for d in deferred]
            deferred.clear()
        self._advance()

    def _set_clock(self, now: int) -> None:
        """Move processing time to ``now`` (a wall clock waits for it)."""
        self.clock.advance_to(now)
        self._observe(self.clock.now())

    def _observe(self, now: int) -> None:
        """Processing time is ``now``: fire the trigger deadlines it reached."""
        self.now = max(self.now, now)
        for stage_id in self.order:
            if stage_id in self.triggered:
                fired = self.buffers[stage_id].on_processing_time(self.input_watermark[stage_id], self.now)
                for out in self.stages[stage_id].outputs:
                    self.emit(out, fired)

    def take_expired(self) -> list[tuple[str, bytes]]:
        """(transform, encoded window) of keyed stages whose windows expired since last asked:
        their user state is to be dropped."""
        expired, self.expired = self.expired, []
        return expired

    def done(self) -> bool:
        return all(w >= PLUS_INFINITY for w in self.output_watermark.values())

    def _side_inputs_ready(self, stage: StageSpec) -> bool:
        # Batch readiness: a side input is read once its producer has finished.
        return all(self.output_watermark[self.producer[p]] >= PLUS_INFINITY for p in stage.side_inputs)

    def _release_held(self, stage_id: str) -> None:
        """Streaming: move the held elements whose side windows are all ready to pending, in
        arrival order. Readiness only grows, so released elements never go back."""
        held = self.held[stage_id]
        if not held:
            return
        waiting = []
        for element, needs in held:
            if all(self._side_window_ready(p, w, max_ts) for p, w, max_ts in needs):
                self.pending[stage_id].append(element)
            else:
                waiting.append((element, needs))
        held[:] = waiting

    def _side_window_ready(self, pcollection: str, window: bytes, max_timestamp: int) -> bool:
        """The side watermark passed the window's end, or (triggered) a pane fired for it."""
        if self.output_watermark[self.producer[pcollection]] > max_timestamp:
            return True
        buffer = self.side_buffers.get(pcollection)
        return buffer is not None and buffer.fired(window)

    def side_input_version(self, pcollection: str) -> int:
        """Changes whenever what side_input gives changes (cheap: no snapshot)."""
        buffer = self.side_buffers.get(pcollection)
        return 0 if buffer is None else buffer.version

    def side_input(self, pcollection: str) -> tuple[int, Any]:
        """(version, contents) of a side-input PCollection, as bundles starting now see it: the
        version changes when the contents do. Batch: every element (read once, after its producer
        finished). Streaming, and triggered side inputs in batch: encoded window -> the elements
        visible in it (latest pane)."""
        buffer = self.side_buffers.get(pcollection)
        if buffer is None:
            return 0, self.materialized.get(pcollection, [])
        return buffer.version, buffer.contents()

    # -- watermarks --------------------------------------------------------------------------
    def _advance(self) -> None:
        """Recompute watermarks in topological order, firing GroupByKeys as they advance."""
        for stage_id in self.order:
            stage = self.stages[stage_id]
            if stage.kind == IMPULSE:
                watermark = PLUS_INFINITY if self._impulses_done else MIN_TIMESTAMP
                self.output_watermark[stage_id] = watermark
                continue
            if stage.kind == TEST_STREAM:
                self.output_watermark[stage_id] = min(self.stream_watermark[stage_id].values(), default=PLUS_INFINITY)
                continue
            input_wm = max(self.input_watermark[stage_id], self._upstream_watermark(stage_id))
            self.input_watermark[stage_id] = input_wm
            if stage_id in self.triggered:
                buffer = self.buffers[stage_id]
                fired = buffer.on_watermark(input_wm, self.now)
                for out in stage.outputs:
                    self.emit(out, fired)
                hold = buffer.hold(input_wm, PLUS_INFINITY)
            elif stage.kind == GROUP:
                buffer = self.buffers[stage_id]
                fired = buffer.fire(input_wm)
                for out in stage.outputs:
                    self.emit(out, fired)
                hold = MIN_TIMESTAMP if len(buffer) else PLUS_INFINITY
            else:
                hold = self._sdk_hold(stage_id, input_wm)
            self.output_watermark[stage_id] = max(self.output_watermark[stage_id], min(input_wm, hold))

    def _sdk_hold(self, stage_id: str, input_wm: int) -> int:
        unsorted = self.unsorted.get(stage_id)
        if unsorted:  # release, in timestamp order, what the watermark has passed
            ready = sorted(e for e in unsorted if e[0] < input_wm)
            self._enqueue(stage_id, [e for _, _, e in ready])
            unsorted[:] = [e for e in unsorted if e[0] >= input_wm]
        if self.pending[stage_id] or self.in_flight[stage_id] or self.to_truncate[stage_id] \
                or self.held.get(stage_id):
            return MIN_TIMESTAMP
        hold = PLUS_INFINITY
        for d in self.deferred[stage_id]:  # what a watermark estimator promised, or nothing
            hold = min(hold, MIN_TIMESTAMP if d.hold is None else d.hold)
        if unsorted:
            hold = min(e[0] for e in unsorted)
        store = self.timers.get(stage_id)
        if store is not None:
            if store.has_due(input_wm, self.now):
                return MIN_TIMESTAMP
            self._expire(stage_id, store, input_wm)
            hold = min(hold, store.hold(PLUS_INFINITY))
        return hold

    def _expire(self, stage_id: str, store: TimerStore, input_wm: int) -> None:
        """An idle keyed stage (every due timer fired, OnWindowExpiration included): drop what
        belongs to the windows the watermark has passed the expiry of."""
        seen = self.windows_seen.get(stage_id)
        if not seen:
            return
        gone = {w for w, expiry in seen.items() if expiry < input_wm}
        if gone:
            for w in sorted(gone):
                del seen[w]
                self.expired.append((self.stages[stage_id].keyed.transform, w))
            store.drop_processing(gone)

    def describe_stuck(self) -> str:
        lines = ["no stage can make progress, but work remains:"]
        for stage_id in self.order:
            stage = self.stages[stage_id]
            waiting = [p for p in stage.side_inputs
                       if self.output_watermark[self.producer[p]] < PLUS_INFINITY]
            if stage_id in self.held:  # streaming: per window
                held = self.held[stage_id]
                waiting = f"{len(held)} elements held for windows of {waiting}" if held else ""
            buffered = len(self.buffers[stage_id]) if stage_id in self.buffers else 0
            buffered += len(self.timers[stage_id]) if stage_id in self.timers else 0
            buffered += len(self.events.get(stage_id, ()))  # TestStream events not yet applied
            lines.append(f"  {stage_id} ({stage.kind}): output watermark {format_watermark(self.output_watermark[stage_id])}, "
                         f"pending {len(self.pending[stage_id])}, deferred {len(self.deferred[stage_id])}, "
                         f"in flight {self.in_flight[stage_id]}, "
                         + (f"to truncate {len(self.to_truncate[stage_id])}, " if self.to_truncate[stage_id] else "") +
                         f"buffered groups/timers/events {buffered}" + (f", waiting for side inputs {waiting}" if waiting else ""))
        return "\n".join(lines)


def format_watermark(t: int) -> str:
    if t >= PLUS_INFINITY:
        return "+inf"
    if t <= MIN_TIMESTAMP:
        return "-inf"
    return f"{t / 1e6:.3f}s"


__all__ = ["format_watermark", "Bundle", "ElementManager", "KeyedSpec", "StageSpec", "Stuck", "SDK", "FLATTEN", "GROUP",
           "IMPULSE", "TEST_STREAM", "ELEMENTS", "WATERMARK", "PROCESSING_TIME"]
