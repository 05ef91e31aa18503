"""Streaming on Spark, the pass scheduler: a *pass* runs the stages in topological order, each
as one Spark job over its new input and its state RDD, until the pipeline is quiescent. The
driver's clock (spark/stream_clock.py) decides when time advances; spark/streaming.py alternates
the two.

- A GroupByKey or an SDK stage keeps its engine stage object per partition in a state RDD
  (spark/partitions.py). A keyed stage (GroupByKey, stateful ParDo) shuffles its new input by
  encoded key with the same partitioner as its state RDD, so the union of the two is
  partition-aligned (no shuffle of the state); an unkeyed stage keeps what is left of its
  partitions (deferred SDF residuals, input held for side windows) coalesced.
- A task returns its outputs, its new state and a Report (output watermark, deadlines, whether
  state is left, user metrics): only the reports reach the driver.
- The driver keeps one engine stage object per stage, and every watermark is theirs: an Impulse,
  TestStream or Flatten is the engine's own (engine/stages.py, engine/teststream.py); a stage run
  in partitions is an engine PartitionedStage, whose output watermark follows the least its
  partitions reported. Upstream watermarks, batch side-input readiness and the description of a
  stuck job are the ElementManager's rules (engine/watermarks.py).
- A stage runs in a pass only when it has new input, or state while its input watermark or the
  clock moved (or a drain or a resumption applies to it); otherwise its watermark simply follows.
- Self-checkpointed SDF residuals resume only when nothing else can run, one stage per pass,
  as in the reference engine.
- Element data reaches the driver only for TestStream events (which start there) and side
  inputs (collected, then broadcast to the readers).
- Each pass's results are persisted until read; state RDDs are checkpointed every few runs of
  their stage, so lineage (and recomputation after a lost executor) stays bounded.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from apache_beam.portability.api import metrics_pb2
from pyspark import StorageLevel
from pyspark.broadcast import Broadcast

import reference_runner.spark.partitions as partitions
from reference_runner.engine import watermarks
from reference_runner.engine.sideinputs import SideInputBuffer
from reference_runner.engine.spec import StageKind, StageSpec
from reference_runner.engine.stages import FlattenStage, ImpulseStage, PartitionedStage, Stage
from reference_runner.engine.teststream import TestStreamStage
from reference_runner.executor import stage_specs
from reference_runner.graph.plan import Plan
from reference_runner.spark.partitions import PassInfo
from reference_runner.spark.plan import StagePlan
from reference_runner.spark.spread import spread
from reference_runner.worker import codecs

CHECKPOINT_EVERY = 10  # runs of a stage between checkpoints of its state


@dataclass
class DriverStage:
    """What the driver knows of a stage between passes: its engine object (its watermarks, and
    for a stage run in partitions what they reported) and the Spark side of it."""

    plan: StagePlan
    engine: Stage
    inbox: list = field(default_factory=list)  # (pcoll, rdd) arrived since the stage last ran
    state: object = None  # its state RDD (GroupByKey, SDK stages)
    result: object = None  # its last pass's persisted result
    runs: int = 0
    seen_now: int = 0
    seen_sides: tuple = ()
    drained: bool = False  # it ran since the drain began
    checkpoints: list = field(default_factory=list)  # files of its state's checkpoints

    @property
    def id(self) -> str:
        return self.plan.stage.id

    @property
    def parts(self) -> PartitionedStage:
        """The engine object of a stage run in partitions."""
        assert isinstance(self.engine, PartitionedStage), self.id
        return self.engine


class PassScheduler:
    """The stages' watermarks, new input and state RDDs, and the passes that move them."""

    def __init__(
        self,
        sc,
        prepared: Plan,
        plans: list[StagePlan],
        parallelism: int,
        bundle_size: int,
        control,
        seed: int | None,
        check_cancelled: Callable[[], None],
    ):
        """``check_cancelled`` raises when the job was cancelled (asked before each stage runs)."""
        self.sc = sc
        self.prepared = prepared
        self.parallelism = parallelism
        self.bundle_size = bundle_size
        self.seed = seed  # seeds each stage run's bundling
        self.control = control
        self._check_cancelled = check_cancelled
        self.coders = codecs.Coders(prepared.components)
        self.now = 0  # processing time of the pass running, as the driver's clock gave it
        self.draining = False
        self.stages = [DriverStage(p, self._engine_stage(p)) for p in plans]
        #: PCollection -> the engine object of the stage producing it (the engine's rules read these)
        self.producer = {pcoll: stage.engine for stage in self.stages for pcoll in stage.plan.outputs}
        self.consumers: dict[str, list[DriverStage]] = {}
        for stage in self.stages:
            for pcoll in stage.plan.inputs:
                self.consumers.setdefault(pcoll, []).append(stage)
        decoders = stage_specs.side_decoders(prepared, self.coders)
        side_pcolls = {s.pcoll for st in self.stages for s in st.plan.stage.side_inputs}
        #: side PCollection -> SideInputBuffer (read per window and pane) or list (read whole)
        self.sides: dict = {p: SideInputBuffer(decoders[p]) if p in decoders else [] for p in side_pcolls}
        _ensure_checkpoint_dir(self.sc)
        self._persisted: list = []  # results not yet unpersisted
        self._refs: dict[int, int] = {}  # id(result) -> readers still to read it
        self._broadcasts: list = []  # destroyed when the run ends
        self._unread: list = []  # (result, finish) of this pass's sinks, run in its last job

    def _engine_stage(self, p: StagePlan) -> Stage:
        if p.kind == StageKind.TEST_STREAM:
            return TestStreamStage(stage_specs.engine_spec(self.prepared, self.coders, p.stage, None))
        # the rest need only their place in the pipeline on the driver
        spec = StageSpec(p.stage.id, p.kind, list(p.inputs), list(p.outputs), p.stage.side_pcolls)
        if p.kind == StageKind.IMPULSE:
            return ImpulseStage(spec)
        if p.kind == StageKind.FLATTEN:
            return FlattenStage(spec)
        return PartitionedStage(spec, self.prepared.test_stream_driven)

    @property
    def streams(self) -> list[TestStreamStage]:
        """The TestStreams, in topological order (applied on the driver, by its clock)."""
        return [s.engine for s in self.stages if isinstance(s.engine, TestStreamStage)]

    def start(self, now: int) -> None:
        """The Impulses' elements, then the first pass."""
        for stage in self.stages:
            if stage.plan.kind == StageKind.IMPULSE:
                [out] = stage.plan.outputs
                rdd = self.sc.parallelize([stage_specs.impulse_element(self.coders, out)], 1)
                self.deliver(out, rdd)
                assert isinstance(stage.engine, ImpulseStage)
                stage.engine.started = True
        self.run_pass(now)

    def begin_drain(self) -> None:
        self.draining = True

    def resumable(self, now: int) -> DriverStage | None:
        """The first stage whose self-checkpointed work may resume at ``now`` (none while
        draining)."""
        return next((s for s in self.stages if self._resumes(s, now) and not self.draining), None)

    @staticmethod
    def _resumes(stage: DriverStage, now: int) -> bool:
        ready_at = stage.engine.ready_at if isinstance(stage.engine, PartitionedStage) else None
        return ready_at is not None and ready_at <= now

    def finished(self) -> bool:
        """Every watermark is +inf."""
        return watermarks.finished(s.engine for s in self.stages)

    def deadlines(self) -> list[int | None]:
        """The processing times the stages wait for: trigger and timer deadlines, resume times."""
        return [d for s in self.stages for d in s.engine.deadlines()]

    def deliver_elements(self, pcoll: str, elements: list) -> None:
        """Elements the driver holds (a TestStream's) into ``pcoll``."""
        self.deliver(pcoll, self.sc.parallelize(elements, min(len(elements), self.parallelism)))

    def close(self) -> None:
        """The run ended: its persisted results, broadcasts and checkpoint files go."""
        for rdd in self._persisted:
            rdd.unpersist()
        for broadcast in self._broadcasts:
            broadcast.destroy()
        for stage in self.stages:
            for path in stage.checkpoints:
                _remove(path)

    # -- one pass --------------------------------------------------------------------------------
    def run_pass(self, now: int, resume: DriverStage | None = None) -> None:
        """One pass at processing time ``now``: each stage in topological order that has
        something to do runs as one Spark job (``resume``: the stage whose self-checkpointed work
        resumes); the others' watermarks follow."""
        self.now = now
        for stage in self.stages:
            self._check_cancelled()
            upstream = watermarks.upstream(stage.engine, self.producer)
            if isinstance(stage.engine, PartitionedStage) and self._should_run(stage, upstream, resume):
                self._run_stage(stage, upstream, stage is resume)
                continue  # its watermarks move once it ran
            if isinstance(stage.engine, FlattenStage):
                self._flatten(stage)
            stage.engine.advance(upstream, self.now)
        self._finish_pass()

    def _should_run(self, stage: DriverStage, upstream: int, resume: DriverStage | None) -> bool:
        if not self._sides_ready(stage):
            return False  # batch: a side input is read once its producer finished
        if stage.inbox or stage is resume:
            return True
        parts = stage.parts
        if self.draining and not stage.drained and parts.active:
            return True
        if not parts.active:
            return False
        moved = upstream > parts.input_watermark or self.now > stage.seen_now
        return moved or (parts.held > 0 and self._side_marks(stage) != stage.seen_sides)

    def _sides_ready(self, stage: DriverStage) -> bool:
        if self.prepared.test_stream_driven:
            return True  # streaming: per window, in the task (input held until ready)
        return watermarks.side_inputs_finished(stage.engine, self.producer)

    def _flatten(self, stage: DriverStage) -> None:
        if not stage.inbox:
            return
        p = stage.plan
        [out] = p.outputs
        parts = []
        sources = []
        for pcoll, rdd, source in stage.inbox:
            if pcoll in p.stage.converted:
                rdd = rdd.mapPartitions(functools.partial(partitions.transcode, p, pcoll))
            parts.append(rdd)
            sources += getattr(rdd, "sources", [source])
        stage.inbox = []
        rdd = self.sc.union(parts)
        if p.stage.redistribute:
            # Not spread.py here: a micro-batch Reshuffle dealt by spread() lost elements of Beam's
            # Java WindowedWordCount (its output missed words; found by the SDK trials, cause not
            # yet found), where Spark's own repartition keeps them all.
            rdd = rdd.repartition(self.parallelism)
        # a Flatten runs nothing itself: its readers read its inputs' results
        rdd.sources = [s for s in sources if s is not None]  # type: ignore[attr-defined]
        readers = len(self.consumers.get(out, ()))
        for source in rdd.sources:
            self._hold(source, readers)
            self._release(source)  # the Flatten's own read
        self.deliver(out, rdd)

    def _run_stage(self, stage: DriverStage, upstream: int, resume: bool) -> None:
        p = stage.plan
        info = PassInfo(
            upstream,
            stage.engine.input_watermark,
            self.now,
            self.prepared.test_stream_driven,
            draining=self.draining,
            resume=resume,
            # (a seeded run draws sizes up to --spark_bundle_size itself, as documented)
            bundle_size=self.bundle_size if self.seed is not None else p.bundle_size(self.bundle_size),
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
            stage.parts.ran([])  # (it keeps nothing)
            stage.engine.advance(upstream, self.now)
            self.deliver(out, rdd)
            return
        result.persist(StorageLevel.MEMORY_AND_DISK)
        self._persisted.append(result)
        finish = functools.partial(self._ran, stage, upstream, result, keyed, holder, read, info.side_marks)
        if any(self.consumers.get(out) or out in self.sides for out in p.outputs):
            finish(result.mapPartitions(partitions.reports).collect())
        else:  # nothing reads it: its job joins the pass's last one
            self._unread.append((result, finish))

    def _lazy(self, stage: DriverStage) -> bool:
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

    def _ran(
        self, stage: DriverStage, upstream: int, result, keyed: bool, holder, read: list, marks, found: list
    ) -> None:
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
        stage.parts.ran(found)
        stage.engine.advance(upstream, self.now)
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
                self.deliver(pcoll, rdd, result)

    def _input_records(self, stage: DriverStage, keyed: bool):
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
        if p.stage.splittable and parts:  # initial splits of restrictions over every partition, as in batch
            parts = [spread(self.sc.union(parts) if len(parts) > 1 else parts[0], self.parallelism)]
        if stage.state is not None:
            parts.append(stage.state)
        return self.sc.union(parts) if len(parts) > 1 else parts[0]

    # -- outputs and side inputs -----------------------------------------------------------------
    def deliver(self, pcoll: str, rdd, source=None) -> None:
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
            consumer.engine.accept(pcoll, [rdd], self.now)

    def _side_contents(self, pcoll: str):
        side = self.sides[pcoll]
        return list(side) if isinstance(side, list) else side.contents()

    def _side_marks(self, stage: DriverStage) -> dict:
        marks = {}
        for s in stage.plan.stage.side_inputs:
            side = self.sides[s.pcoll]
            fired = frozenset(side.panes) if isinstance(side, SideInputBuffer) else frozenset()
            marks[s.pcoll] = (self.producer[s.pcoll].output_watermark, fired)
        return marks

    def _note_checkpoint(self, stage: DriverStage) -> None:
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

    def describe_stuck(self) -> str:
        return watermarks.describe_stuck([s.engine for s in self.stages], self.producer)


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
