"""One partition of one stage in one micro-batch pass, on a Spark executor (streaming).

A GroupByKey or an SDK stage keeps its engine stage object (engine/stages.py, engine/keyed.py:
buffered groups, trigger state, pending and held input, timers, deferred SDF residuals) and,
for a stateful ParDo, its user state, per partition, between passes: the record of a state RDD
partitioned like the stage's keyed input. A pass's task gets that record and the partition's
new input, applies the pass (new input at the stage's previous input watermark, the
processing time, the new upstream watermark), runs every bundle that becomes runnable until
the partition is quiescent, and returns the outputs, the new state record and a small report
(output watermark, deadlines, whether state is left, user metrics) for the driver, which
computes the watermarks of the next stages from it (spark/stream_passes.py).

The engine objects hold coder-backed functions of their spec (decoders, codecs, triggers built
from protos), which must not travel: a state record pickles the object with those as
references to the spec, which each process rebuilds from the StagePlan.
"""

from __future__ import annotations

import functools
import io
import pickle
import zlib
from dataclasses import dataclass, field

import reference_runner.spark.tasks as tasks
from reference_runner import bundling
from reference_runner.engine import watermarks
from reference_runner.engine.keyed import KeyedSdkStage
from reference_runner.engine.spec import Bundle, StageKind, StageSpec
from reference_runner.engine.stages import GroupStage, SdkStage, Stage
from reference_runner.engine.userstate import UserStateStore
from reference_runner.executor import stage_specs
from reference_runner.executor.bundles import BundleError
from reference_runner.knobs import RANDOM, Knobs
from reference_runner.spark.plan import StagePlan, coders_of
from reference_runner.spark.sdk_workers import Lease, lease
from reference_runner.spark.stateful import keyed_stage
from reference_runner.worker import merging
from reference_runner.worker.state import StateService

STATE, ELEMENT, OUTPUT, REPORT = "S", "E", "O", "R"


def partition_of(key) -> int:
    """Keyed input by its encoded key's crc32 (the same in every process, unlike hash()); a
    state record by the index of the partition it belongs to."""
    return key if isinstance(key, int) else zlib.crc32(key)


@dataclass
class PassInfo:
    """What the driver tells every task of a stage's pass."""

    upstream: int  # the least output watermark of the main input's producers
    previous: int  # the stage's input watermark before this pass (new input arrives at it)
    now: int  # processing time (the driver's virtual clock)
    test_stream_driven: bool  # the pipeline has TestStreams (Plan.test_stream_driven)
    draining: bool = False
    resume: bool = False  # self-checkpointed residuals ready at ``now`` may run
    bundle_size: int = 1000
    seed: str | None = None  # seeded bundle sizes (at most bundle_size), drawn per stage run and partition
    sides: dict = field(default_factory=dict)  # side PCollection -> contents (list, or window -> list)
    side_marks: dict = field(default_factory=dict)  # side PCollection -> (producer watermark, fired windows)


@dataclass
class Report:
    watermark: int  # the partition's output watermark
    active: bool  # state is left (the stage must see later watermarks and clock moves)
    deadline: int | None  # earliest processing time it waits for (timers, triggers, resumes)
    ready_at: int | None  # earliest resume time of deferred residuals
    counts: tuple  # (pending, deferred, in flight, to truncate, buffered), for a stuck job
    held: int = 0  # main input held for side windows
    metrics: list = field(default_factory=list)  # committed user MonitoringInfos, serialized
    emitted: list = field(default_factory=list)  # elements output, per output position


def keyed_input(plan: StagePlan, pcoll: str, element):
    """A main-input element as a keyed stage's shuffle takes it: (encoded key, record); a
    report forwarded from a stage computed on the way goes to partition 0."""
    if isinstance(element, tuple):
        return 0, element
    if plan.kind == StageKind.GROUP:
        key = tasks.key_of(plan, element)[0]
    else:
        key = keyed_stage(plan).key_of(element)[0]
    return key, (ELEMENT, pcoll, element)


def unkeyed_input(pcoll: str, element):
    return 0, element if isinstance(element, tuple) else (ELEMENT, pcoll, element)


def transcode(plan: StagePlan, pcoll: str, records):
    """A Flatten input re-encoded as its output (forwarded reports pass as they are)."""
    convert = stage_specs.conversions(coders_of(plan.components), plan.stage)[pcoll]
    for record in records:
        yield record if isinstance(record, tuple) else convert(record)


def run(plan: StagePlan, info_holder, records):
    """The task: state and input records of one partition -> OUTPUT, STATE and REPORT records."""
    info: PassInfo = getattr(info_holder, "value", info_holder)
    blobs, inputs, forwarded = [], {}, []
    for _, record in records:
        if record[0] == STATE:
            blobs.append(record[1])
        elif record[0] == REPORT:  # of a stateless stage computed on the way here
            forwarded += record[1].metrics
        else:
            inputs.setdefault(record[1], []).append(record[2])
    if plan.kind == StageKind.GROUP:
        partition: _Partition = _GroupPartition(plan, info)
    else:
        partition = _SdkPartition(plan, info)
    partition.forwarded = forwarded
    yield from partition.run(blobs, inputs)


def state_records(index: int, records):
    """A pass's result -> the stage's state RDD (partition ``index`` keeps its records)."""
    for record in records:
        if record[0] == STATE:
            yield index, record


def outputs(position: int, with_reports: bool, records):
    """The elements of one output; ``with_reports``: the reports too (a stage computed by its
    reader, which forwards them to the driver)."""
    for record in records:
        if record[0] == OUTPUT and record[1] == position:
            yield record[2]
        elif with_reports and record[0] == REPORT:
            yield record


def reports(records):
    for record in records:
        if record[0] == REPORT:
            yield record[1]


def tagged_reports(tag: int, records):
    for record in records:
        if record[0] == REPORT:
            yield tag, record[1]


class _Partition:
    def __init__(self, plan: StagePlan, info: PassInfo):
        self.plan, self.info = plan, info
        self.forwarded: list = []  # metrics of stages computed on the way here
        self.emitted = [0] * len(plan.outputs)

    def _load(self, spec: StageSpec, blobs: list, fresh) -> tuple[Stage, UserStateStore]:
        loaded = [_thaw(spec, blob) for blob in blobs]
        if not loaded:
            stage, user = fresh(), UserStateStore()
        else:
            stage, user = loaded[0]
            for other, _ in loaded[1:]:  # unkeyed stages (no user state): records coalesced together
                assert isinstance(stage, SdkStage) and isinstance(other, SdkStage)
                stage.absorb(other)
        # new input arrives at the input watermark the stage had; a fresh object has not seen it
        stage.catch_up(self.info.previous)
        return stage, user

    def _finish(self, spec: StageSpec, stage: Stage, user: UserStateStore, active: bool, metrics: list):
        if active:
            yield STATE, _freeze(spec, (stage, user))
        deadlines = [d for d in stage.deadlines() if d is not None]
        deferred = getattr(stage, "deferred", ())
        yield (
            REPORT,
            Report(
                stage.output_watermark,
                active,
                min(deadlines, default=None),
                min((d.ready_at for d in deferred), default=None),
                stage.counts(),
                len(getattr(stage, "held", None) or ()),
                self.forwarded + metrics,
                self.emitted,
            ),
        )


class _GroupPartition(_Partition):
    def run(self, blobs: list, inputs: dict):
        plan, info = self.plan, self.info
        merging_in_sdk = plan.stage.group.merge_in_sdk
        merger = lease(plan.user_code, StateService(), plan.job_id) if merging_in_sdk else None
        try:
            spec = _spec(plan, tasks.window_merger(plan, merger) if merger else None)
            stage, user = self._load(spec, blobs, lambda: GroupStage(spec))
            assert isinstance(stage, GroupStage)
            fired = []
            try:
                for pcoll, elements in inputs.items():
                    fired += stage.accept(pcoll, elements, info.now)
                fired += stage.on_processing_time(info.now)
                fired += stage.advance(info.upstream, info.now)
            except merging.MergeFailed as e:
                raise tasks.StageFailed(f"GroupByKey {plan.id}: {e}") from None
            self.emitted[0] += len(fired)
            for element in fired:
                yield OUTPUT, 0, element
            active = not stage.buffer.idle()
            yield from self._finish(spec, stage, user, active, [])
        finally:
            if merger is not None:
                merger.release(True)


class _SdkPartition(_Partition):
    def run(self, blobs: list, inputs: dict):
        plan, info = self.plan, self.info
        state = StateService()
        leased, descriptor = tasks.sdk_worker(plan, info.sides, state, warm_worker=not plan.stage.side_inputs)
        succeeded = False
        try:
            yield from self._run(blobs, inputs, state, leased, descriptor)
            succeeded = True
        finally:
            leased.release(succeeded)  # (an embedded worker reading side inputs is never kept warm)

    def _run(self, blobs: list, inputs: dict, state: StateService, leased: Lease, descriptor):
        plan, info = self.plan, self.info
        # (a user's side WindowFn is mapped by the SDK, on this task's worker)
        spec = _spec(plan, side_mapper=tasks.side_mapper(plan, leased))
        keyed = keyed_stage(plan) if plan.stage.keyed_head else None
        expired: list = []

        def fresh():
            if keyed is not None:
                return KeyedSdkStage(spec, spec.keyed, info.test_stream_driven, expired)
            return SdkStage(spec, info.test_stream_driven)

        stage, user = self._load(spec, blobs, fresh)
        assert isinstance(stage, SdkStage)
        if isinstance(stage, KeyedSdkStage):
            stage._expired = expired  # (a thawed object reports to this task's list)
        state.user = user
        metrics: list = []
        runner = tasks.bundle_runner(plan, leased.worker, state, _Collected(metrics))
        positions = {p: i for i, p in enumerate(plan.outputs)}
        truncator = None
        unfinalized: list = []
        for pcoll, elements in inputs.items():
            stage.accept(pcoll, elements, info.now)
        if info.draining:
            stage.drain()
        stage.on_processing_time(info.now)
        resume = info.resume
        policy = _bundling(info)
        bundles = 0
        while True:
            stage.advance(info.upstream, info.now)
            for transform, window in expired:
                state.release_window(transform, window)
            expired.clear()
            if stage.held is not None:
                stage.release_held(functools.partial(_side_ready, info.side_marks))
            truncate = False
            items, timers = None, []
            if info.draining:
                items = stage.take_truncation()
                truncate = items is not None
            if items is None:
                work = stage.take(policy, info.now)
                if work is not None:
                    items, timers = work
            if items is None and resume:
                items = stage.take_deferred(info.now)
                resume = False  # one resumption per pass: what it hands back waits for the next
            if items is None:
                break
            bundles += 1
            bundle = Bundle(f"p{bundles}", spec.id, stage.start(items), timers=timers, truncate=truncate)
            if truncate:
                if truncator is None:
                    truncator = _truncation(plan, leased)
                described = truncator
            else:
                described = descriptor
            try:
                committed = runner.run(
                    plan.stage, described, bundle.inputs, timers, None if truncate else keyed, truncate
                )
            except BundleError as e:
                raise tasks.stage_failed(plan, e) from None
            stage.commit(bundle, committed.residuals, committed.timers, committed.deferred, info.draining, info.now)
            for pcoll, elements in committed.outputs.items():
                position = positions.get(pcoll)
                if position is not None:
                    self.emitted[position] += len(elements)
                    for element in elements:
                        yield OUTPUT, position, element
            unfinalized.append(committed)
        if keyed is not None and watermarks.finished([stage]):
            state.release(keyed.transform)  # every window is done: its state is dropped
        active = _sdk_active(stage, state.user)
        yield from self._finish(spec, stage, state.user, active, metrics)
        # only once Spark took the task's whole output (and its new state) can no failure
        # of this task lose a bundle's outputs: finalize then
        for committed in unfinalized:
            committed.finalize()


def _bundling(info: PassInfo):
    """Bundles of ``bundle_size`` elements, or of seeded sizes (drawn per partition of the pass)."""
    if info.seed is None:
        return bundling.SeededPolicy(Knobs(bundle_size=info.bundle_size))
    from pyspark import TaskContext

    partition = TaskContext.get().partitionId()
    knobs = Knobs(seed=f"{info.seed}/{partition}", bundle_size=RANDOM)
    return bundling.SeededPolicy(knobs, max_bundle_size=info.bundle_size)


def _sdk_active(stage: SdkStage, user: UserStateStore) -> bool:
    if any(stage.counts()) or stage.held:
        return True
    if isinstance(stage, KeyedSdkStage):
        return bool(stage.unsorted or stage.windows_seen or user.cells())
    return False


def _side_ready(marks: dict, pcoll: str, window: bytes, max_timestamp: int) -> bool:
    """Whether a side window is ready, by the driver's marks: (side watermark, windows fired)."""
    watermark, fired = marks[pcoll]
    return watermarks.side_window_ready(watermark, max_timestamp, window in fired)


class _Collected:
    """The bundle runner's metrics sink for one task: committed infos, serialized."""

    def __init__(self, into: list):
        self._into = into

    def add(self, infos: list) -> None:
        self._into.extend(infos)


def _truncation(plan: StagePlan, leased: Lease):
    """The stage's SDF truncation (drain), registered on the leased worker."""
    described = plan.stage.truncation.instantiate(f"{plan.id}/truncate", leased.endpoint)
    leased.worker.register(described.proto)
    return described


# -- engine objects between passes ------------------------------------------------------------
def _static(spec: StageSpec) -> dict[int, str]:
    """The spec's objects (and their functions) that a state record names instead of pickling."""
    named: dict[int, str] = {id(spec): "spec"}
    for owner_name, owner in (("spec", spec), ("grouping", spec.grouping), ("keyed", spec.keyed)):
        if owner is None:
            continue
        named[id(owner)] = owner_name
        for name, value in vars(owner).items():
            if value is not None and not isinstance(value, (bool, int, str, list, dict, tuple)):
                named.setdefault(id(value), f"{owner_name}.{name}")
    return named


def _resolve(spec: StageSpec, name: str):
    owner_name, _, attribute = name.partition(".")
    owner = {"spec": spec, "grouping": spec.grouping, "keyed": spec.keyed}[owner_name]
    return getattr(owner, attribute) if attribute else owner


def _freeze(spec: StageSpec, value) -> bytes:
    named = _static(spec)
    out = io.BytesIO()
    pickler = pickle.Pickler(out, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.persistent_id = lambda obj: named.get(id(obj))  # type: ignore[method-assign]
    pickler.dump(value)
    return out.getvalue()


def _thaw(spec: StageSpec, blob: bytes):
    unpickler = pickle.Unpickler(io.BytesIO(blob))
    unpickler.persistent_load = functools.partial(_resolve, spec)  # type: ignore[method-assign]
    return unpickler.load()


# -- per process caches -----------------------------------------------------------------------
class _PlanView:
    """What stage_specs.engine_spec reads of a Plan, on an executor (no PipelineGraph there)."""

    def __init__(self, plan: StagePlan):
        self.test_stream_driven = plan.test_stream_driven
        self.components = coders_of(plan.components).components


_specs: dict = {}


def _spec(plan: StagePlan, merge_fn=None, side_mapper=None) -> StageSpec:
    """The stage's engine spec, built once per Python worker process (with a custom window merge
    or a user's side WindowFn, once per task: the SDK's calls run on the task's worker)."""
    if merge_fn is None and plan.id in _specs:
        return _specs[plan.id]
    keyed = keyed_stage(plan) if plan.stage.keyed_head else None
    mapped: list = []

    def mapper(side):
        mapped.append(side)
        return side_mapper(side)

    coders = coders_of(plan.components)
    spec = stage_specs.engine_spec(
        _PlanView(plan), coders, plan.stage, keyed, merge_fn, mapper if side_mapper is not None else None
    )
    if merge_fn is None and not mapped:
        if len(_specs) > 256:
            _specs.clear()
        _specs[plan.id] = spec
    return spec
