"""The ElementManager: which bundle runs next, where outputs go, and how watermarks advance.

Stages are described by plain data (StageSpec, engine/spec.py). The executor asks for a
bundle, runs it wherever it likes and commits the outputs; the manager routes them to the
consuming stages and advances watermarks. Each stage's own state lives in a stage object
(engine/stages.py, engine/keyed.py, engine/teststream.py): the runner-side primitives are
performed there (Flatten passes elements through, GroupByKey buffers and fires when the
watermark passes a window's end or, triggered, by its trigger, engine/panes.py). The manager
keeps what spans stages: the topology, routing, the order watermarks are recomputed in, the
processing-time clock, drain, side inputs and the order stages are scanned for work.
Bounded inputs: a stage's output watermark is +infinity once nothing upstream can produce
more and it has no pending or in-flight work.

Streaming (a pipeline with TestStreams): a TestStream's events are applied one at a time,
each only when nothing else can run, so results do not depend on bundling. The runner owns a
processing-time clock (engine/clock.py): TestStreams advance it, and once they are exhausted and
nothing else can progress it moves to the next processing-time timer, trigger deadline or
resume time of self-checkpointed work (the virtual clock jumps there, the wall clock waits for
it); engine/timeline.py spells that order, for Spark's streaming driver too. Keyed stages drop
the state and processing-time timers of windows once the watermark passes their expiry.
Watermarks never move backwards.

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

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from reference_runner.engine import timeline, watermarks
from reference_runner.engine.clock import VirtualClock
from reference_runner.engine.keyed import KeyedSdkStage
from reference_runner.engine.sideinputs import SideInputBuffer
from reference_runner.engine.spec import Bundle, Deferred, KeyedSpec, StageKind, StageSpec
from reference_runner.engine.stages import FlattenStage, GroupStage, ImpulseStage, SdkStage, Stage
from reference_runner.engine.teststream import ELEMENTS, PROCESSING_TIME, WATERMARK, TestStreamStage
from reference_runner.engine.watermarks import format_watermark
from reference_runner.engine.windows import MIN_TIMESTAMP, PLUS_INFINITY


class _PerStage(Mapping[str, Any]):
    """A read-only view: stage id -> one attribute of the stage's object."""

    def __init__(self, stages: dict[str, Any], read: Callable[[Any], Any]):
        self._stages, self._read = stages, read

    def __getitem__(self, stage_id: str) -> Any:
        return self._read(self._stages[stage_id])

    def __iter__(self) -> Iterator[str]:
        return iter(self._stages)

    def __len__(self) -> int:
        return len(self._stages)


class ElementManager:
    def __init__(self, stages: list[StageSpec], bundle_policy=None, clock=None, side_decoders: dict | None = None):
        """``stages`` in topological order. ``bundle_policy``: how many pending elements a bundle
        takes (None: all). ``side_decoders``: side-input PCollection -> decode(element) ->
        ([encoded window], pane index or None), see engine/sideinputs.py; the side inputs to keep
        per window and pane (in streaming every one, in batch the triggered ones)."""
        self.policy = bundle_policy
        self.test_stream_driven = any(s.kind == StageKind.TEST_STREAM for s in stages)
        self.draining = False
        self.clock = clock or VirtualClock()
        self.now = self.clock.now()  # processing time (micros), as last read from the clock
        self.expired: list[tuple[str, bytes]] = []  # (transform, encoded window) whose state to drop
        self._stages: list[Stage] = [self._stage(s) for s in stages]  # topological
        self._by_id = {s.spec.id: s for s in self._stages}
        self._sdk = [s for s in self._stages if isinstance(s, SdkStage)]
        self._streams = [s for s in self._stages if isinstance(s, TestStreamStage)]
        self._impulses = [s for s in self._stages if isinstance(s, ImpulseStage)]
        self._consumers: dict[str, list[Stage]] = {}
        self._side_consumers: dict[str, list[str]] = {}
        self._producer: dict[str, Stage] = {}
        for stage in self._stages:
            spec = stage.spec
            for p in spec.inputs:
                self._consumers.setdefault(p, []).append(stage)
            for p in spec.side_inputs:
                self._side_consumers.setdefault(p, []).append(spec.id)
            for p in spec.outputs:
                self._producer[p] = stage
        #: side-input PCollections per window, latest pane (every one in streaming, triggered ones
        #: in batch: the executor supplies their decoders)
        self._side_buffers = {
            p: SideInputBuffer(side_decoders[p]) for p in self._side_consumers if side_decoders and p in side_decoders
        }
        #: batch: full contents of PCollections read as side inputs (read once their producer finished)
        self._materialized: dict[str, list] = {p: [] for p in self._side_consumers if p not in self._side_buffers}
        #: the stages' watermarks and pending input, readable per stage id (the executor's trace)
        self.input_watermark: Mapping[str, int] = _PerStage(self._by_id, lambda s: s.input_watermark)
        self.output_watermark: Mapping[str, int] = _PerStage(self._by_id, lambda s: s.output_watermark)
        self.pending: Mapping[str, list] = _PerStage({s.spec.id: s for s in self._sdk}, lambda s: s.pending)
        self._bundles = 0

    def _stage(self, spec: StageSpec) -> Stage:
        if spec.kind == StageKind.SDK:
            if spec.keyed is not None:
                return KeyedSdkStage(spec, spec.keyed, self.test_stream_driven, self.expired)
            return SdkStage(spec, self.test_stream_driven)
        if spec.kind == StageKind.GROUP:
            return GroupStage(spec)
        if spec.kind == StageKind.FLATTEN:
            return FlattenStage(spec)
        if spec.kind == StageKind.IMPULSE:
            return ImpulseStage(spec)
        if spec.kind == StageKind.TEST_STREAM:
            return TestStreamStage(spec)
        raise ValueError(f"stage {spec.id}: unknown kind {spec.kind!r}")

    # -- feeding -----------------------------------------------------------------------------
    def emit(self, pcollection: str, elements: list) -> None:
        """Elements produced into ``pcollection``: route them to every consumer."""
        if not elements:
            return
        if pcollection in self._side_buffers:
            self._side_buffers[pcollection].add(elements)
        elif pcollection in self._materialized:
            self._materialized[pcollection].extend(elements)
        for stage in self._consumers.get(pcollection, ()):
            self._emit_from(stage, stage.accept(pcollection, elements, self.now))

    def _emit_from(self, stage: Stage, elements: list) -> None:
        if elements:
            for out in stage.spec.outputs:
                self.emit(out, elements)

    def start(self, impulse_outputs: dict[str, list]) -> None:
        """Feed the roots: the one element of every Impulse."""
        for pcollection, elements in impulse_outputs.items():
            self.emit(pcollection, elements)
        for impulse in self._impulses:
            impulse.started = True
        self._advance()

    # -- scheduling --------------------------------------------------------------------------
    def next_bundle(self) -> Bundle | None:
        """The next bundle to run, or None when there is nothing runnable."""
        if self.clock.ticks and self.clock.now() > self.now:  # a wall clock: time passed
            self._observe(self.clock.now())
        if self.draining:
            for stage in self._sdk:
                items = stage.take_truncation()
                if items is not None:
                    return self._start(stage, items, [], truncate=True)
        for stage in self._sdk:
            if stage.held is not None:
                stage.release_held(self._side_window_ready)
            elif not watermarks.side_inputs_finished(stage, self._producer):
                continue
            work = stage.take(self.policy, self.now)
            if work is not None:
                return self._start(stage, *work)
        # Self-checkpointed work resumes only when nothing else can run, so downstream stages
        # (and the watermark) keep up with an unbounded source.
        for stage in self._sdk:
            items = stage.take_deferred(self.now)
            if items is not None:
                return self._start(stage, items, [])
        return None

    def _start(self, stage: SdkStage, items: list, timers: list, truncate: bool = False) -> Bundle:
        self._bundles += 1
        return Bundle(f"b{self._bundles}", stage.spec.id, stage.start(items), timers=timers, truncate=truncate)

    def commit(
        self,
        bundle: Bundle,
        outputs: dict[str, list],
        residuals: list | tuple = (),
        timers: list | tuple = (),
        deferred: list | tuple = (),
    ) -> None:
        """A bundle succeeded: publish its outputs atomically and reschedule its residuals.

        ``timers``: the TimerUpdates the bundle made, in order. ``deferred``: (element,
        watermark hold or None, resume delay) of the self-checkpoints it made. A truncation
        bundle's outputs (the truncated restrictions) come back as ``residuals``."""
        if self.clock.ticks:  # a wall clock: outputs arrive, and resume delays start, now
            self._observe(self.clock.now())
        # The stage's own bookkeeping first: its outputs only reach stages downstream of it.
        self._sdk_stage(bundle.stage).commit(
            bundle, list(residuals), list(timers), list(deferred), self.draining, self.now
        )
        for pcollection, elements in outputs.items():
            self.emit(pcollection, elements)
        self._advance()

    def _sdk_stage(self, stage_id: str) -> SdkStage:
        stage = self._by_id[stage_id]
        assert isinstance(stage, SdkStage), stage_id
        return stage

    # -- time --------------------------------------------------------------------------------
    def advance_time(self) -> bool:
        """Nothing can run: take one step of time (engine/timeline.py), the next TestStream event
        (the pipeline is quiescent, so each event sees all earlier work done) or else a jump of
        the processing-time clock to the next processing-time timer, trigger deadline or resume
        time. False when neither is possible."""
        step = timeline.next_step(
            self._streams, self.now, lambda: (d for stage in self._stages for d in stage.deadlines())
        )
        if step is None:
            return False
        if step.elements is not None:
            self.emit(*step.elements)
        if step.clock is not None:
            self._set_clock(step.clock)
        self._advance()
        return True

    def drain(self) -> None:
        """Stop ingesting and finish: TestStreams drop their remaining events and are done;
        deferred residuals (and later ones, see commit) go to truncation, however far in the
        future they were to resume."""
        self.draining = True
        for stream in self._streams:
            stream.stop()
        for stage in self._sdk:
            stage.drain()
        self._advance()

    def _set_clock(self, now: int) -> None:
        """Move processing time to ``now`` (a wall clock waits for it)."""
        self.clock.advance_to(now)
        self._observe(self.clock.now())

    def _observe(self, now: int) -> None:
        """Processing time is ``now``: fire the trigger deadlines it reached."""
        self.now = max(self.now, now)
        for stage in self._stages:
            self._emit_from(stage, stage.on_processing_time(self.now))

    def take_expired(self) -> list[tuple[str, bytes]]:
        """(transform, encoded window) of keyed stages whose windows expired since last asked:
        their user state is to be dropped."""
        expired = list(self.expired)
        self.expired.clear()  # (the keyed stages hold this very list)
        return expired

    def done(self) -> bool:
        return watermarks.finished(self._stages)

    # -- side inputs -------------------------------------------------------------------------
    def _side_window_ready(self, pcollection: str, window: bytes, max_timestamp: int) -> bool:
        buffer = self._side_buffers.get(pcollection)
        return watermarks.side_window_ready(
            self._producer[pcollection].output_watermark,
            max_timestamp,
            buffer is not None and buffer.fired(window),
        )

    def side_input_version(self, pcollection: str) -> int:
        """Changes whenever what side_input gives changes (cheap: no snapshot)."""
        buffer = self._side_buffers.get(pcollection)
        return 0 if buffer is None else buffer.version

    def side_input(self, pcollection: str) -> tuple[int, Any]:
        """(version, contents) of a side-input PCollection, as bundles starting now see it: the
        version changes when the contents do. Batch: every element (read once, after its producer
        finished). Streaming, and triggered side inputs in batch: encoded window -> the elements
        visible in it (latest pane)."""
        buffer = self._side_buffers.get(pcollection)
        if buffer is None:
            return 0, self._materialized.get(pcollection, [])
        return buffer.version, buffer.contents()

    # -- watermarks --------------------------------------------------------------------------
    def _advance(self) -> None:
        """Recompute watermarks in topological order; what fires on the way (GroupByKeys) goes on
        downstream, before those stages' watermarks are recomputed."""
        for stage in self._stages:
            self._emit_from(stage, stage.advance(watermarks.upstream(stage, self._producer), self.now))

    def describe_stuck(self) -> str:
        return watermarks.describe_stuck(self._stages, self._producer)


__all__ = [
    "format_watermark",
    "Bundle",
    "Deferred",
    "ElementManager",
    "KeyedSpec",
    "StageKind",
    "StageSpec",
    "ELEMENTS",
    "WATERMARK",
    "PROCESSING_TIME",
    "PLUS_INFINITY",
    "MIN_TIMESTAMP",
]
