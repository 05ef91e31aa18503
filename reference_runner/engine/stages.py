"""The per-stage half of the engine: each stage's own state behind one interface.

The ElementManager (engine/manager.py) routes input to a stage (``accept``), recomputes its
watermarks in topological order (``advance``), tells it processing time moved
(``on_processing_time``) and asks what processing time it waits for (``deadlines``); whatever
a stage fires there leaves it at once on every output. SDK stages also hand out bundles and
take their outcome back. Kinds: SdkStage (here), KeyedSdkStage (engine/keyed.py), GroupStage,
FlattenStage, ImpulseStage (here) and TestStreamStage (engine/teststream.py). PartitionedStage
(here) stands for a stage whose work runs elsewhere in parts, each with one of the others (Spark's
streaming driver, spark/stream_passes.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

from reference_runner.engine.grouping import Buffer, GroupBuffer
from reference_runner.engine.panes import TriggeredBuffer
from reference_runner.engine.spec import Bundle, Deferred, StageSpec
from reference_runner.engine.windows import MIN_TIMESTAMP, PLUS_INFINITY

#: (side PCollection, encoded side window, its max timestamp) -> whether a reader may see it
SideWindowReady = Callable[[str, bytes, int], bool]


class Stage:
    """What every stage has: its spec and its two watermarks (they never move backwards)."""

    def __init__(self, spec: StageSpec):
        self.spec = spec
        self.input_watermark = MIN_TIMESTAMP
        self.output_watermark = MIN_TIMESTAMP

    def accept(self, pcollection: str, elements: list, now: int) -> list:
        """Main input arrived on ``pcollection``: what leaves the stage at once, on every output."""
        raise TypeError(f"stage {self.spec.id} ({self.spec.kind}) has no main input")

    def catch_up(self, input_watermark: int) -> None:
        """A copy of the stage that missed watermark moves learns the input watermark it had
        reached (new input arrives at it)."""
        self.input_watermark = max(self.input_watermark, input_watermark)

    def advance(self, upstream: int, now: int) -> list:
        """Recompute the watermarks, ``upstream`` being the least output watermark of the main
        input's producers; returns what fired."""
        self.input_watermark = max(self.input_watermark, upstream)
        fired = self._on_watermark(now)
        self.output_watermark = max(self.output_watermark, min(self.input_watermark, self._hold(now)))
        return fired

    def _on_watermark(self, now: int) -> list:
        return []

    def _hold(self, now: int) -> int:
        """How far the output watermark may follow the input watermark."""
        return PLUS_INFINITY

    def on_processing_time(self, now: int) -> list:
        """Processing time reached ``now``: what fired."""
        return []

    def deadlines(self) -> Iterable[int | None]:
        """The processing times it waits for (None: not waiting)."""
        return ()

    def counts(self) -> tuple[int, int, int, int, int]:
        """(pending, deferred, in flight, to truncate, buffered groups/timers/events), to tell
        what a stuck job waits for."""
        return 0, 0, 0, 0, 0

    def held_for_side_windows(self) -> int | None:
        """Main input held until its side windows are ready (None: the stage reads side inputs
        whole, or none)."""
        return None


class ImpulseStage(Stage):
    """A root: its one element is fed at start, and then it is finished."""

    started = False

    def advance(self, upstream: int, now: int) -> list:
        self.output_watermark = PLUS_INFINITY if self.started else MIN_TIMESTAMP
        return []


class FlattenStage(Stage):
    """Passes its inputs through, re-encoding those whose coder differs from the output's."""

    def accept(self, pcollection: str, elements: list, now: int) -> list:
        convert = self.spec.convert.get(pcollection)
        return [convert(e) for e in elements] if convert else elements


class GroupStage(Stage):
    """A GroupByKey: grouped in batch style, or in panes by its trigger (the same Buffer
    interface either way)."""

    def __init__(self, spec: StageSpec):
        super().__init__(spec)
        grouping = spec.grouping
        if grouping is None:
            raise ValueError(f"GroupByKey stage {spec.id} has no grouping")
        self.buffer: Buffer = GroupBuffer(grouping) if grouping.trigger is None else TriggeredBuffer(grouping)

    def accept(self, pcollection: str, elements: list, now: int) -> list:
        return self.buffer.add(elements, self.input_watermark, now)

    def _on_watermark(self, now: int) -> list:
        return self.buffer.on_watermark(self.input_watermark, now)

    def _hold(self, now: int) -> int:
        return self.buffer.hold(self.input_watermark, PLUS_INFINITY)

    def on_processing_time(self, now: int) -> list:
        return self.buffer.on_processing_time(self.input_watermark, now)

    def deadlines(self) -> Iterable[int | None]:
        return (self.buffer.next_deadline(),)

    def counts(self) -> tuple[int, int, int, int, int]:
        return 0, 0, 0, 0, len(self.buffer)


class SdkStage(Stage):
    """A stage the executor runs in the SDK harness: its input waits here until a bundle takes it.

    Input is queued as the stage's items: for this class the encoded elements themselves (a
    keyed stage queues them with their decoded facts). Self-checkpointed residuals of
    splittable DoFns wait (``deferred``) until nothing else can run; when draining they go to
    truncation instead. In streaming, input of a stage reading side inputs is ``held`` until
    the side windows it needs are ready."""

    def __init__(self, spec: StageSpec, test_stream_driven: bool):
        super().__init__(spec)
        self.pending: list = []
        self.deferred: list[Deferred] = []
        self.in_flight = 0
        self.to_truncate: list = []  # draining: residuals of splittable DoFns
        self.side_windows = spec.side_windows if test_stream_driven and spec.side_inputs else None
        #: (item, [(side PCollection, encoded window, max timestamp)] it waits for)
        self.held: list[tuple[Any, list]] | None = [] if self.side_windows is not None else None

    # -- items -------------------------------------------------------------------------------
    def _admit(self, elements: list) -> list:
        """Encoded elements entering the stage -> its items."""
        return elements

    def _elements(self, items: list) -> list:
        """Items -> the encoded elements a bundle carries."""
        return items

    # -- input -------------------------------------------------------------------------------
    def accept(self, pcollection: str, elements: list, now: int) -> list:
        self._enqueue(self._admit(elements))
        return []

    def _enqueue(self, items: list) -> None:
        """New main input: pending, or held until its side windows are ready."""
        if self.held is None:
            self.pending.extend(items)
            return
        side_windows = self.side_windows
        assert side_windows is not None
        self.held.extend(zip(items, [side_windows(e) for e in self._elements(items)], strict=True))

    def release_held(self, ready: SideWindowReady) -> None:
        """Streaming: move the held items whose side windows are all ready to pending, in
        arrival order. Readiness only grows, so released items never go back."""
        held = self.held
        if not held:
            return
        waiting = []
        for item, needs in held:
            if all(ready(p, w, max_ts) for p, w, max_ts in needs):
                self.pending.append(item)
            else:
                waiting.append((item, needs))
        held[:] = waiting

    # -- bundles -----------------------------------------------------------------------------
    def busy(self) -> bool:
        """A bundle of the stage runs and no other may start (keyed stages)."""
        return False

    def take(self, policy, now: int) -> tuple[list, list] | None:
        """(items, due timers) of the next bundle of pending work, or None."""
        pending = self.pending
        if not pending:
            return None
        size = len(pending) if policy is None else policy.bundle_size(self.spec.id, len(pending))
        items, self.pending = pending[:size], pending[size:]
        return items, []

    def take_deferred(self, now: int) -> list | None:
        """The self-checkpointed items ready to resume at ``now``, or None."""
        ready = [d for d in self.deferred if d.ready_at <= now]
        if not ready or self.busy():
            return None
        self.deferred = [d for d in self.deferred if d.ready_at > now]
        return [d.element for d in ready]

    def take_truncation(self) -> list | None:
        if not self.to_truncate or self.busy():
            return None
        items, self.to_truncate = self.to_truncate, []
        return items

    def start(self, items: list) -> list:
        """A bundle of ``items`` starts: the encoded elements it carries."""
        self.in_flight += 1
        return self._elements(items)

    def commit(self, bundle: Bundle, residuals: list, timers: list, deferred: list, draining: bool, now: int) -> None:
        """The bundle succeeded (its outputs are the manager's to route): residuals go back to
        the front, self-checkpoints wait (or, draining, go to truncation)."""
        if residuals:
            self.pending[:0] = self._readmit(residuals)
        if deferred:
            items = self._admit([e for e, _, _ in deferred])
            if draining:
                self.to_truncate += items
            else:
                self.deferred += [
                    Deferred(item, hold, now + delay) for item, (_, hold, delay) in zip(items, deferred, strict=True)
                ]
        self.in_flight -= 1

    def _readmit(self, residuals: list) -> list:
        """Residuals of the running bundle -> items (an unread input is the same element again)."""
        return list(residuals)

    def absorb(self, other: SdkStage) -> None:
        """Another copy's items join this one's (unkeyed: items are independent); the watermarks
        are the lesser of the two."""
        self.pending += other.pending
        self.deferred += other.deferred
        self.to_truncate += other.to_truncate
        if self.held is not None and other.held:
            self.held += other.held
        self.input_watermark = min(self.input_watermark, other.input_watermark)
        self.output_watermark = min(self.output_watermark, other.output_watermark)

    def drain(self) -> None:
        """Deferred residuals go to truncation, however far in the future they were to resume."""
        self.to_truncate += [d.element for d in self.deferred]
        self.deferred.clear()

    # -- watermarks --------------------------------------------------------------------------
    def _has_work(self) -> bool:
        return bool(self.pending or self.in_flight or self.to_truncate or self.held)

    def _deferred_hold(self) -> int:
        """What the watermark estimators of deferred residuals promised (None: nothing)."""
        hold = PLUS_INFINITY
        for d in self.deferred:
            hold = min(hold, MIN_TIMESTAMP if d.hold is None else d.hold)
        return hold

    def _hold(self, now: int) -> int:
        return MIN_TIMESTAMP if self._has_work() else self._deferred_hold()

    def deadlines(self) -> Iterable[int | None]:
        return [d.ready_at for d in self.deferred]

    def counts(self) -> tuple[int, int, int, int, int]:
        return len(self.pending), len(self.deferred), self.in_flight, len(self.to_truncate), 0

    def held_for_side_windows(self) -> int | None:
        return None if self.held is None else len(self.held)


class PartReport(Protocol):
    """What one part of a PartitionedStage reports after it ran (its stage object's state)."""

    watermark: int  # its output watermark
    active: bool  # it keeps state: it must see later watermarks and clock moves
    deadline: int | None  # the earliest processing time it waits for
    ready_at: int | None  # the earliest resume time of its deferred residuals
    counts: tuple  # its counts()
    held: int  # main input it holds for side windows


class PartitionedStage(Stage):
    """A GroupByKey or SDK stage run elsewhere in parts (Spark's partitions), each part with a
    stage object of its own: this one stands for the whole. Its output watermark follows the
    least output watermark the parts reported while some part keeps state, follows the input
    watermark once none does, and stays where it is while input waits that no part has seen."""

    def __init__(self, spec: StageSpec, test_stream_driven: bool):
        super().__init__(spec)
        self.reads_side_windows = test_stream_driven and bool(spec.side_inputs)
        self.unseen_input = False
        self.active = False  # some part keeps state
        self.deadline: int | None = None
        self.ready_at: int | None = None
        self.held = 0
        self._parts_watermark = PLUS_INFINITY
        self._counts: tuple[int, int, int, int, int] = (0, 0, 0, 0, 0)

    def accept(self, pcollection: str, elements: list, now: int) -> list:
        """Input arrived for the parts (``elements``: the runner's handles to it)."""
        self.unseen_input = True
        return []

    def ran(self, reports: list[PartReport]) -> None:
        """The parts ran over every input that had arrived: what each reported."""
        self.unseen_input = False
        self._parts_watermark = min((r.watermark for r in reports), default=PLUS_INFINITY)
        self.active = any(r.active for r in reports)
        self.deadline = min((r.deadline for r in reports if r.deadline is not None), default=None)
        self.ready_at = min((r.ready_at for r in reports if r.ready_at is not None), default=None)
        self.held = sum(r.held for r in reports)
        if reports:
            counts = [sum(c) for c in zip(*(r.counts for r in reports), strict=True)]
            self._counts = (counts[0], counts[1], counts[2], counts[3], counts[4])

    def _hold(self, now: int) -> int:
        if self.unseen_input:
            return MIN_TIMESTAMP
        return self._parts_watermark if self.active else PLUS_INFINITY

    def deadlines(self) -> Iterable[int | None]:
        return self.deadline, self.ready_at

    def counts(self) -> tuple[int, int, int, int, int]:
        return self._counts

    def held_for_side_windows(self) -> int | None:
        return self.held if self.reads_side_windows else None
