"""Streaming on Spark: micro-batch passes driven by the driver, state partitioned on executors.

The driver owns time: the TestStreams' events, the virtual processing-time clock and every
stage's watermarks. It applies one event (or one clock move) at a time, as the reference
engine does (engine/manager.py), and then runs a *pass*: the stages in topological order, each
as one Spark job over its new input and its state RDD, until the pipeline is quiescent.

- A GroupByKey or an SDK stage keeps its engine stage object per partition in a state RDD
  (spark/partitions.py). A keyed stage (GroupByKey, stateful ParDo) shuffles its new input by
  encoded key with the same partitioner as its state RDD, so the union of the two is
  partition-aligned (no shuffle of the state); an unkeyed stage keeps what is left of its
  partitions (deferred SDF residuals, input held for side windows) coalesced.
- A task returns its outputs, its new state and a Report (output watermark, deadlines, whether
  state is left, user metrics): only the reports reach the driver. A stage's output
  watermark is the least its partitions report; the next stage's input watermark follows.
- A stage runs in a pass only when it has new input, or state while its input watermark or the
  clock moved (or a drain or a resumption applies to it); otherwise its watermark simply follows.
- Self-checkpointed SDF residuals resume only when nothing else can run, one stage per pass,
  as in the reference engine; the clock jumps to the next deadline when nothing else is left.
- Element data reaches the driver only for TestStream events (which start there) and side
  inputs (collected, then broadcast to the readers).
- Each pass's results are persisted until read; state RDDs are checkpointed every few runs of
  their stage, so lineage (and recomputation after a lost executor) stays bounded.
"""

from __future__ import annotations

import atexit
import functools
import os
import random
import shutil
import tempfile
import threading
from dataclasses import dataclass, field

from apache_beam.portability.api import metrics_pb2
from pyspark import StorageLevel
from pyspark.broadcast import Broadcast

from reference_runner.engine import manager, triggers
from reference_runner.engine.sideinputs import SideInputBuffer
from reference_runner.engine.spec import StageKind
from reference_runner.engine.teststream import ELEMENTS, PROCESSING_TIME, TestStreamStage
from reference_runner.engine.windows import MIN_TIMESTAMP, PLUS_INFINITY
from reference_runner.execute import JobCancelled
from reference_runner.graph.plan import Plan
from reference_runner.spark import partitions
from reference_runner.spark.partitions import PassInfo
from reference_runner.spark.plan import StagePlan
from reference_runner.worker import codecs, stage_specs

CHECKPOINT_EVERY = 10  # runs of a stage between checkpoints of its state


class StreamCancelled(JobCancelled):
    pass


class StreamStuck(RuntimeError):
    pass


def needs_streaming(prepared: Plan) -> bool:
    """Run as micro-batches: TestStreams or unbounded input, splittable DoFns (whose watermark
    estimators must move downstream watermarks while they run) or triggers waiting for
    processing time (the batch translation has no clock to drive them)."""
    if prepared.unbounded or any(s.splittable for s in prepared.stages):
        return True
    return any(
        s.group is not None and s.group.trigger is not None and triggers.waits_for_processing_time(s.group.trigger)
        for s in prepared.stages
    )


@dataclass
class _Stage:
    plan: StagePlan
    producers: list  # _Stage of each main input PCollection
    input_watermark: int = MIN_TIMESTAMP
    output_watermark: int = MIN_TIMESTAMP
    inbox: list = field(default_factory=list)  # (pcoll, rdd) arrived since the stage last ran
    state: object = None  # its state RDD (GroupByKey, SDK stages)
    result: object = None  # its last pass's persisted result
    active: bool = False  # some partition keeps state
    deadline: int | None = None
    ready_at: int | None = None
    held: int = 0
    counts: tuple = (0, 0, 0, 0, 0)
    runs: int = 0
    seen_now: int = 0
    seen_sides: tuple = ()
    drained: bool = False  # it ran since the drain began
    checkpoints: list = field(default_factory=list)  # files of its state's checkpoints
    stream: TestStreamStage | None = None  # a TestStream, applied on the driver

    @property
    def id(self) -> str:
        return self.plan.stage.id


class StreamingRun:
    def __init__(
        self,
        spark,
        prepared: Plan,
        plans: list[StagePlan],
        parallelism: int,
        bundle_size: int,
        control,
        seed: int | None = None,
    ):
        self.sc = spark.sparkContext
        self.prepared = prepared
        self.parallelism = parallelism
        self.bundle_size = bundle_size
        # seeded micro-batch boundaries: an event's elements over several passes
        self.seed = seed
        self._cuts = random.Random(f"{seed}/micro-batches") if seed is not None else None
        self._held_back: list = []  # (pcoll, elements) of an applied event, for the next passes
        self.control = control
        self.coders = codecs.Coders(prepared.components)
        self.now = 0
        self.draining = False
        producer: dict[str, _Stage] = {}
        self.stages: list[_Stage] = []
        for p in plans:
            stage = _Stage(p, [producer[i] for i in p.inputs if i in producer])
            for out in p.outputs:
                producer[out] = stage
            if p.kind == StageKind.TEST_STREAM:
                spec = stage_specs.engine_spec(prepared, self.coders, p.stage, None)
                stage.stream = TestStreamStage(spec)
            self.stages.append(stage)
        self.producer = producer
        self.consumers: dict[str, list[_Stage]] = {}
        for stage in self.stages:
            for pcoll in stage.plan.inputs:
                self.consumers.setdefault(pcoll, []).append(stage)
        decoders = stage_specs.side_decoders(prepared, self.coders)
        side_pcolls = {s.pcoll for st in self.stages for s in st.plan.stage.side_inputs}
        #: side PCollection -> SideInputBuffer (read per window and pane) or list (read whole)
        self.sides: dict = {p: SideInputBuffer(decoders[p]) if p in decoders else [] for p in side_pcolls}
        self._cancelled = threading.Event()
        self._drain = threading.Event()
        _ensure_checkpoint_dir(self.sc)
        self._persisted: list = []  # results not yet unpersisted
        self._refs: dict[int, int] = {}  # id(result) -> readers still to read it
        self._broadcasts: list = []  # destroyed when the run ends
        self._unread: list = []  # (result, finish) of this pass's sinks, run in its last job

    # -- the control's listener ------------------------------------------------------------------
    def cancel(self) -> None:
        self._cancelled.set()

    def drain(self) -> None:
        self._drain.set()

    # -- the loop ------------------------------------------------------------------------------
    def run(self) -> bool:
        """Until every watermark is +inf; True when it ended because it was drained."""
        try:
            self._start()
            while True:
                if self._cancelled.is_set():
                    raise StreamCancelled("the job was cancelled")
                if self._drain.is_set() and not self.draining:
                    self._begin_drain()
                    self._pass()
                    continue
                resume = next(
                    (s for s in self.stages if s.ready_at is not None and s.ready_at <= self.now and not self.draining),
                    None,
                )
                if resume is not None:
                    self._pass(resume)
                    continue
                if not self._held_back and all(s.output_watermark >= PLUS_INFINITY for s in self.stages):
                    return self.draining
                if not self._advance_time():
                    raise StreamStuck(self._describe_stuck())
                self._pass()
        finally:
            for rdd in self._persisted:
                rdd.unpersist()
            for broadcast in self._broadcasts:
                broadcast.destroy()
            for stage in self.stages:
                for path in stage.checkpoints:
                    _remove(path)

    def _start(self) -> None:
        for stage in self.stages:
            if stage.plan.kind == StageKind.IMPULSE:
                [out] = stage.plan.outputs
                rdd = self.sc.parallelize([stage_specs.impulse_element(self.coders, out)], 1)
                self._deliver(out, rdd)
        self._pass()

    def _advance_time(self) -> bool:
        """Nothing can run: the rest of an event held back for a later micro-batch, else the next
        TestStream event, else the clock to the next deadline."""
        if self._held_back:
            self._deliver_held_back()
            return True
        for stage in self.stages:
            if stage.stream is None:
                continue
            event = stage.stream.step()
            if event is None:
                continue
            kind, pcoll, value = event
            if kind == ELEMENTS:
                if value:
                    self._held_back = [(pcoll, part) for part in self._micro_batches(value)]
                    self._deliver_held_back()
            elif kind == PROCESSING_TIME:
                self.now += value
            return True
        later = [s.deadline for s in self.stages if s.deadline is not None and s.deadline > self.now]
        later += [s.ready_at for s in self.stages if s.ready_at is not None and s.ready_at > self.now]
        if not later:
            return False
        self.now = min(later)
        return True

    def _micro_batches(self, elements: list) -> list[list]:
        """An event's elements: whole, or (seeded) cut into up to four micro-batches. Between
        them no watermark and no clock moves: only the boundaries of the runner's work change."""
        if self._cuts is None or len(elements) < 2:
            return [elements]
        count = self._cuts.randint(1, min(4, len(elements)))
        cuts = sorted(self._cuts.sample(range(1, len(elements)), count - 1))
        return [elements[a:b] for a, b in zip([0, *cuts], [*cuts, len(elements)], strict=True)]

    def _deliver_held_back(self) -> None:
        """The next micro-batch of the event being applied (the only one unless seeded)."""
        pcoll, elements = self._held_back.pop(0)
        self._deliver(pcoll, self.sc.parallelize(elements, min(len(elements), self.parallelism)))

    def _begin_drain(self) -> None:
        self.draining = True
        for stage in self.stages:
            if stage.stream is not None:
                stage.stream.stop()

    # -- one pass --------------------------------------------------------------------------------
    def _pass(self, resume: _Stage | None = None) -> None:
        for stage in self.stages:
            if self._cancelled.is_set():
                raise StreamCancelled("the job was cancelled")
            kind = stage.plan.kind
            upstream = min((p.output_watermark for p in stage.producers), default=PLUS_INFINITY)
            if kind == StageKind.IMPULSE:
                stage.output_watermark = PLUS_INFINITY
            elif kind == StageKind.TEST_STREAM:
                assert stage.stream is not None
                stage.stream.advance(upstream, self.now)
                stage.output_watermark = stage.stream.output_watermark
            elif kind == StageKind.FLATTEN:
                self._flatten(stage)
                stage.input_watermark = stage.output_watermark = max(stage.output_watermark, upstream)
            elif self._should_run(stage, upstream, resume):
                self._run_stage(stage, upstream, stage is resume)
            else:
                stage.input_watermark = max(stage.input_watermark, upstream)
                if not stage.active and not stage.inbox:
                    stage.output_watermark = max(stage.output_watermark, upstream)
        self._finish_pass()

    def _should_run(self, stage: _Stage, upstream: int, resume: _Stage | None) -> bool:
        if not self._sides_ready(stage):
            return False  # batch: a side input is read once its producer finished
        if stage.inbox or stage is resume:
            return True
        if self.draining and not stage.drained and stage.active:
            return True
        if not stage.active:
            return False
        moved = upstream > stage.input_watermark or self.now > stage.seen_now
        return moved or (stage.held > 0 and self._side_marks(stage) != stage.seen_sides)

    def _sides_ready(self, stage: _Stage) -> bool:
        if self.prepared.streaming:
            return True  # streaming: per window, in the task (input held until ready)
        return all(self.producer[s.pcoll].output_watermark >= PLUS_INFINITY for s in stage.plan.stage.side_inputs)

    def _flatten(self, stage: _Stage) -> None:
        if not stage.inbox:
            return
        p = stage.plan
        pcolls = self.coders.components.pcollections
        [out] = p.outputs
        parts = []
        sources = []
        for pcoll, rdd, source in stage.inbox:
            if pcolls[pcoll].coder_id != pcolls[out].coder_id:
                rdd = rdd.mapPartitions(functools.partial(partitions.transcode, p, pcoll))
            parts.append(rdd)
            sources += getattr(rdd, "sources", [source])
        stage.inbox = []
        rdd = self.sc.union(parts)
        if p.stage.redistribute:
            rdd = rdd.repartition(self.parallelism)
        # a Flatten runs nothing itself: its readers read its inputs' results
        rdd.sources = [s for s in sources if s is not None]  # type: ignore[attr-defined]
        readers = len(self.consumers.get(out, ()))
        for source in rdd.sources:
            self._hold(source, readers)
            self._release(source)  # the Flatten's own read
        self._deliver(out, rdd)

    def _run_stage(self, stage: _Stage, upstream: int, resume: bool) -> None:
        p = stage.plan
        info = PassInfo(
            upstream,
            stage.input_watermark,
            self.now,
            self.prepared.streaming,
            draining=self.draining,
            resume=resume,
            bundle_size=self.bundle_size,
            seed=None if self.seed is None else f"{self.seed}/{stage.id}/{stage.runs}",
        )
        if p.stage.side_inputs:
            info.sides = {s.pcoll: self._side_contents(s.pcoll) for s in p.stage.side_inputs}
            info.side_marks = self._side_marks(stage)
        holder = self.sc.broadcast(info) if p.stage.side_inputs else info
        keyed = p.kind == StageKind.GROUP or bool(p.stage.keyed_head)
        records = self._input_records(stage, keyed)
        result = records.mapPartitions(functools.partial(partitions.run, p, holder), preservesPartitioning=keyed)
        read = [s for _, rdd, source in stage.inbox for s in getattr(rdd, "sources", [source]) if s is not None]
        stage.inbox = []
        if self._lazy(stage):
            # stateless: no job of its own; its one reader computes it (and forwards its reports)
            [out] = p.outputs
            rdd = result.mapPartitions(functools.partial(partitions.outputs, 0, True))
            rdd.sources = read  # type: ignore[attr-defined]
            stage.input_watermark = max(stage.input_watermark, upstream)
            stage.output_watermark = max(stage.output_watermark, upstream)
            self._deliver(out, rdd)
            return
        result.persist(StorageLevel.MEMORY_AND_DISK)
        self._persisted.append(result)
        finish = functools.partial(self._ran, stage, upstream, result, keyed, holder, read, info.side_marks)
        if any(self.consumers.get(out) or out in self.sides for out in p.outputs):
            finish(result.mapPartitions(partitions.reports).collect())
        else:  # nothing reads it: its job joins the pass's last one
            self._unread.append((result, finish))

    def _lazy(self, stage: _Stage) -> bool:
        """A stage that keeps no state and whose one output has one main-input reader."""
        p = stage.plan
        if p.kind != StageKind.SDK or p.stage.keyed_head or p.stage.side_inputs or p.stage.splittable:
            return False
        return len(p.outputs) == 1 and p.outputs[0] not in self.sides and len(self.consumers.get(p.outputs[0], ())) == 1

    def _finish_pass(self) -> None:
        """One job for the stages nothing reads (sinks), whose reports nobody waits for."""
        unread, self._unread = self._unread, []
        if not unread:
            return
        tagged = [r.mapPartitions(functools.partial(partitions.tagged_reports, i)) for i, (r, _) in enumerate(unread)]
        found: dict[int, list] = {}
        for i, report in self.sc.union(tagged).collect():
            found.setdefault(i, []).append(report)
        for i, (_, finish) in enumerate(unread):
            finish(found.get(i, []))

    def _ran(self, stage: _Stage, upstream: int, result, keyed: bool, holder, read: list, marks, found: list) -> None:
        """A stage's pass has run: its reports, its new state, its outputs to their readers."""
        p = stage.plan
        if isinstance(holder, Broadcast):
            # executors drop their copies; the value stays for a recomputation from lineage
            holder.unpersist()
            self._broadcasts.append(holder)
        self._release(stage.result)  # its state has been read
        for source in read:
            self._release(source)
        self._note_checkpoint(stage)
        stage.result = result
        self._hold(result, 1)  # for the state its next run reads
        stage.state = result.mapPartitionsWithIndex(partitions.state_records, preservesPartitioning=keyed)
        if not keyed:
            stage.state = stage.state.coalesce(self.parallelism)
        stage.runs += 1
        if stage.runs % CHECKPOINT_EVERY == 0:
            stage.state.checkpoint()  # written when the next run reads it: lineage stops there
            stage.checkpoints.append(stage.state)
        stage.input_watermark = max(stage.input_watermark, upstream)
        marks_out = [r.watermark for r in found]
        stage.output_watermark = max(stage.output_watermark, min(marks_out, default=stage.input_watermark))
        stage.active = any(r.active for r in found)
        stage.deadline = min((r.deadline for r in found if r.deadline is not None), default=None)
        stage.ready_at = min((r.ready_at for r in found if r.ready_at is not None), default=None)
        stage.held = sum(r.held for r in found)
        stage.counts = tuple(sum(c) for c in zip(*(r.counts for r in found), strict=True)) if found else stage.counts
        stage.seen_now = self.now
        stage.seen_sides = marks
        stage.drained = self.draining
        metrics = [i for r in found for i in r.metrics]
        if metrics:
            infos = [metrics_pb2.MonitoringInfo.FromString(i) for i in metrics]
            self.control.keep_metrics(self.prepared.graph.with_step_names(infos), committed=True)
        for position, pcoll in enumerate(p.outputs):
            if any(r.emitted[position] for r in found):  # (an empty output wakes no reader)
                rdd = result.mapPartitions(functools.partial(partitions.outputs, position, False))
                self._deliver(pcoll, rdd, result)

    def _input_records(self, stage: _Stage, keyed: bool):
        p = stage.plan
        parts = []
        for pcoll, rdd, _ in stage.inbox:
            if keyed:
                parts.append(rdd.map(functools.partial(partitions.keyed_input, p, pcoll)))
            else:
                parts.append(rdd.map(functools.partial(partitions.unkeyed_input, pcoll)))
        if keyed:
            state = stage.state
            if state is None:
                state = self.sc.parallelize([], self.parallelism).partitionBy(self.parallelism, partitions.partition_of)
            if parts:
                new = self.sc.union(parts) if len(parts) > 1 else parts[0]
                new = new.partitionBy(self.parallelism, partitions.partition_of)
                return state.union(new)
            return state
        if stage.state is not None:
            parts.append(stage.state)
        return self.sc.union(parts) if len(parts) > 1 else parts[0]

    # -- outputs and side inputs -----------------------------------------------------------------
    def _deliver(self, pcoll: str, rdd, source=None) -> None:
        if pcoll in self.sides:  # side inputs are collected (and broadcast to readers)
            elements = rdd.collect()
            if elements:
                side = self.sides[pcoll]
                if isinstance(side, list):
                    side.extend(elements)
                else:
                    side.add(elements)
        consumers = self.consumers.get(pcoll, ())
        if source is not None:
            self._hold(source, len(consumers))
        for consumer in consumers:
            consumer.inbox.append((pcoll, rdd, source))

    def _side_contents(self, pcoll: str):
        side = self.sides[pcoll]
        return list(side) if isinstance(side, list) else side.contents()

    def _side_marks(self, stage: _Stage) -> dict:
        marks = {}
        for s in stage.plan.stage.side_inputs:
            side = self.sides[s.pcoll]
            fired = frozenset(side.panes) if isinstance(side, SideInputBuffer) else frozenset()
            marks[s.pcoll] = (self.producer[s.pcoll].output_watermark, fired)
        return marks

    def _note_checkpoint(self, stage: _Stage) -> None:
        """Once a newer checkpoint of the stage's state is written, the older ones' files go."""
        written = [rdd for rdd in stage.checkpoints if rdd.isCheckpointed()]
        if len(written) > 1:
            for rdd in written[:-1]:
                _remove(rdd)
                stage.checkpoints.remove(rdd)

    def _hold(self, result, readers: int) -> None:
        if result is None:
            return
        self._refs[id(result)] = self._refs.get(id(result), 0) + readers

    def _release(self, result) -> None:
        """One reader of a persisted result has read it (its stage's next run read the state,
        or a consumer ran over an output): the last one unpersists it."""
        if result is None:
            return
        left = self._refs.get(id(result), 0) - 1
        if left > 0:
            self._refs[id(result)] = left
            return
        self._refs.pop(id(result), None)
        result.unpersist()
        if result in self._persisted:
            self._persisted.remove(result)

    def _describe_stuck(self) -> str:
        lines = ["no stage can make progress, but work remains:"]
        for s in self.stages:
            pending, deferred, in_flight, to_truncate, buffered = s.counts
            lines.append(
                f"  {s.id} ({s.plan.kind.value}): output watermark {manager.format_watermark(s.output_watermark)}, "
                f"pending {pending}, deferred {deferred}, held {s.held}, buffered groups/timers {buffered}, "
                f"new input {len(s.inbox)}"
            )
        return "\n".join(lines)


_checkpoint_lock = threading.Lock()


def _ensure_checkpoint_dir(sc) -> None:
    """State RDDs are checkpointed: into the user's checkpoint directory, or a temporary one."""
    with _checkpoint_lock:
        if not sc._jsc.sc().getCheckpointDir().isDefined():
            directory = tempfile.mkdtemp(prefix="beam-spark-checkpoints-")
            # ours, not the user's: gone when the driver process ends
            atexit.register(shutil.rmtree, directory, ignore_errors=True)
            sc.setCheckpointDir(directory)


def _remove(rdd) -> None:
    """Delete the files of a checkpointed RDD (a local or file: path; others are left to Spark's
    cleaner, spark.cleaner.referenceTracking.cleanCheckpoints)."""
    path = rdd.getCheckpointFile()
    if path and path.startswith("file:"):
        shutil.rmtree(path[len("file:") :], ignore_errors=True)
    elif path and os.path.isabs(path):
        shutil.rmtree(path, ignore_errors=True)
