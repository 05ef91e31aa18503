"""What runs inside Spark's Python workers: fused stages on an in-process SDK worker, and the
grouping step after a shuffle. Everything here is rebuilt from a ShippedStage and cached per
Python worker process."""

from __future__ import annotations

import itertools
import zlib

from pyspark import AccumulatorParam

import reference_runner.spark.failure_inbox as failure_inbox
from reference_runner.engine import grouping, panes
from reference_runner.engine.manager import PLUS_INFINITY
from reference_runner.engine.windows import MIN_TIMESTAMP
from reference_runner.graph.descriptors import StageDescriptor
from reference_runner.runtime import side_snapshots, stage_specs
from reference_runner.runtime.bundles import BundleError, BundleRunner
from reference_runner.spark.sdk_workers import Lease, NoWorker, lease
from reference_runner.spark.shipped import ShippedStage, ShippedStageCache, coders_of
from reference_runner.worker import codecs, merging, window_mapping
from reference_runner.worker.state import SideInputIndex, StateService


class StageFailed(RuntimeError):
    """A bundle failed in the SDK worker (the user's error text included)."""


def sdk_worker(plan: ShippedStage, side_values: dict, state: StateService, warm_worker: bool = False):
    """An SDK worker for one partition of the stage (Lease), its side inputs loaded
    from the broadcast, and the descriptor it runs; ``state``: the service answering its state
    requests (user state too, for a stateful stage); ``warm_worker``: an embedded one may be
    one this Python worker process kept from an earlier task (warm.py)."""
    coders = coders_of(plan.components)
    for side in plan.stage.side_inputs:
        state.side_inputs[(side.transform_id, side.tag)] = SideInputIndex(
            side_values[side.pcoll], coders, side.pcoll, side.multimap
        )
    try:
        leased = lease(plan.user_code, state, plan.job_group, warm_worker)
    except NoWorker as e:
        raise _failing_the_job(plan, str(e)) from None
    described = plan.described(leased.endpoint)
    sides = plan.stage.side_inputs
    if not plan.user_code.embedded and sides and all(s.globally_windowed for s in sides):
        # the job's worker keeps its processors from task to task, and with them the values of
        # globally windowed side inputs: other contents need another processor
        described = side_snapshots.snapshot_variant(described, [side_values[s.pcoll] for s in sides])
    leased.worker.register(described.proto)
    return leased, described


def bundle_runner(plan: ShippedStage, worker, state: StateService, metrics) -> BundleRunner:
    """Bundles of the stage; committed user metrics go to ``metrics.add``, serialized (a
    PartitionRun, or an accumulator of lists), or nowhere if it is None."""

    def report(infos: list, committed: bool) -> None:
        if committed and metrics is not None:
            metrics.add([i.SerializeToString() for i in infos])

    return BundleRunner(worker, state, coders_of(plan.components), report)


class PartitionRun:
    """What one task keeps of one stage's partition until the partition's whole output has been
    handed to Spark: the committed bundles' user metrics and their pending finalizations.

    Spark may compute a partition more than once (a retried task, a persisted partition evicted
    and recomputed, a lost shuffle output): the report is keyed by (stage, partition), and the
    driver's accumulator keeps the latest report of each key (ReportsParam), so a recomputation
    replaces the counts of the earlier run instead of adding to them."""

    def __init__(self, plan: ShippedStage, reports, partition: int):
        self._reports, self._key = reports, (plan.id, partition)
        self._infos: list[bytes] = []
        self._unfinalized: list = []

    def add(self, infos: list[bytes]) -> None:
        """A committed bundle's user metrics (the sink bundle_runner reports to)."""
        self._infos.extend(infos)

    def committed(self, committed) -> None:
        """A committed bundle whose outputs have been yielded: finalized at the end of the task.
        (Until then the SDK keeps the bundle's processor: the next bundle builds another, so a
        partition whose every bundle asks for finalization holds a processor per bundle.)"""
        self._unfinalized.append(committed)

    def close(self) -> None:
        """The task's generator is exhausted: Spark's serializer has taken every output element
        of the partition, so no bundle of it can be lost to a later failure of this same task's
        user code. Only now are its bundles finalized and its metrics reported."""
        if self._reports is not None:
            self._reports.add({self._key: self._infos})
        unfinalized, self._unfinalized = self._unfinalized, []
        for committed in unfinalized:
            committed.finalize()


class ReportsParam(AccumulatorParam):
    """(stage id, partition) -> its serialized user MonitoringInfos; a later report of a
    partition replaces the earlier one (see PartitionRun)."""

    def zero(self, value):
        return {}

    def addInPlace(self, a, b):
        a.update(b)
        return a


def run_sdk_stage(plan: ShippedStage, side_values, bundle_size: int, reports, partition: int, elements):
    """Partition number ``partition`` through the stage, ``bundle_size`` elements per bundle
    (mapPartitionsWithIndex); outputs stream out bundle by bundle, tagged with their
    PCollection's index when the stage has several; ``reports``: a ReportsParam accumulator."""
    # Not with side inputs: the SDK keeps a global window's side input values in the bundle
    # processor, and the same stage of another job may read other values
    state = StateService()
    leased, descriptor = sdk_worker(
        plan, side_values.value if side_values is not None else {}, state, warm_worker=not plan.stage.side_inputs
    )
    task = PartitionRun(plan, reports, partition)
    runner = bundle_runner(plan, leased.worker, state, task)
    outputs = Outputs(plan)
    succeeded = False
    try:
        for chunk in _chunks(elements, bundle_size):
            while chunk:  # a splittable DoFn's deferred restrictions run again, here, until done
                committed = run_bundle(runner, plan, descriptor, chunk)
                chunk = committed.residuals + [element for element, _, _ in committed.deferred]
                yield from outputs.of(committed)
                task.committed(committed)
        task.close()
        succeeded = True
    finally:
        # An embedded worker is kept for the next task only if no DoFn in it has a setup or
        # teardown: those are torn down when their partition is done (a remote one always is)
        leased.release(succeeded)


def run_bundle(runner: BundleRunner, plan: ShippedStage, descriptor: StageDescriptor, elements, timers=(), keyed=None):
    try:
        return runner.run(plan.stage, descriptor, elements, timers, keyed)
    except BundleError as e:
        raise stage_failed(plan, e) from None


def stage_failed(plan: ShippedStage, error: BundleError) -> StageFailed:
    """What a task raises for a failed bundle. A deterministic failure is first told to the
    driver, which fails the job at once instead of letting Spark run the task again
    (failure_inbox.py); a lost worker is left to Spark's retries."""
    return StageFailed(str(error)) if error.worker_lost else _failing_the_job(plan, str(error))


def _failing_the_job(plan: ShippedStage, message: str) -> StageFailed:
    """What a task raises for a failure no other attempt would cure, once the driver knows."""
    failure_inbox.report(plan.failures, plan.job_group, message)
    return StageFailed(message)


class Outputs:
    """A committed bundle's output elements, tagged with their PCollection's index when the stage
    has several outputs."""

    def __init__(self, plan: ShippedStage):
        self._index = {p: i for i, p in enumerate(plan.outputs)}
        self._tagged = len(plan.outputs) > 1

    def of(self, committed):
        for pcoll, elements in committed.outputs.items():
            index = self._index.get(pcoll)
            if index is None:
                continue
            if self._tagged:
                yield from ((index, element) for element in elements)
            else:
                yield from elements


def _chunks(iterator, size: int):
    iterator = iter(iterator)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


# -- GroupByKey ---------------------------------------------------------------------------
def key_of(plan: ShippedStage, element: bytes) -> tuple[bytes, bytes]:
    """(encoded key, element): what the shuffle partitions and sorts on."""
    return _codec(plan).key_bytes(element), element


def partition_of(key: bytes) -> int:
    """The same partition for the same key bytes in every process (unlike hash())."""
    return zlib.crc32(key)


def group_partition(plan: ShippedStage, pairs):
    """A shuffled, key-sorted partition -> GroupByKey output, one key in memory at a time.
    Sessions are merged per key here; a custom merging WindowFn's windows by the SDK, per key.
    A triggered GroupByKey fires its panes as the reference runner's does in batch: the key's
    elements arrive one by one in shuffle order while the watermark is at -inf, each evaluated
    by the trigger, then the watermark jumps to +inf (on-time and final panes). A pipeline whose
    trigger waits for processing time runs as micro-batches instead (streaming.runs_as_micro_batches):
    nothing drives that clock here."""
    group = plan.stage.group
    merger = lease(plan.user_code, StateService(), plan.job_group) if group.merge_in_sdk else None
    try:
        spec = stage_specs.grouping_of(group, _codec(plan), window_merger(plan, merger) if merger else None)
        for _, key_group in itertools.groupby(pairs, key=lambda kv: kv[0]):
            try:
                # (the key's encoded elements are decoded as the shuffle reads them, not listed
                # first: only the decoded values, which its one output element holds, stay)
                yield from _group_one_key(spec, (element for _, element in key_group))
            except merging.MergeFailed as e:
                raise StageFailed(f"GroupByKey {plan.id}: {e}") from None
    finally:
        if merger is not None:
            merger.release(True)


def _group_one_key(spec: grouping.Grouping, elements) -> list:
    if spec.trigger is None:
        buffer = grouping.GroupBuffer(spec)
        buffer.add(elements)
        return buffer.fire(PLUS_INFINITY)  # bounded input: every window is complete
    triggered = panes.TriggeredBuffer(spec)
    return triggered.add(elements, MIN_TIMESTAMP, 0) + triggered.on_watermark(PLUS_INFINITY, 0)


def window_merger(plan: ShippedStage, leased: Lease) -> merging.WindowMerger:
    """The SDK's merge_windows transform for the GroupByKey's WindowFn, on the leased worker."""
    coders = coders_of(plan.components)
    components = coders.components
    [main] = plan.inputs
    ws = components.windowing_strategies[components.pcollections[main].windowing_strategy_id]
    return merging.WindowMerger(
        leased.worker, f"{plan.id}/merge_windows", ws, components, coders.window_coder(main), leased.endpoint
    )


def side_mapper(plan: ShippedStage, leased: Lease):
    """A side input of a user's WindowFn -> the SDK's mapping of main windows to its windows, on
    the leased worker (streaming)."""
    return window_mapping.mapper_for(leased.worker, plan.id, plan.stage, coders_of(plan.components), leased.endpoint)


_codecs = ShippedStageCache(lambda plan: stage_specs.group_codec(coders_of(plan.components), plan.stage))


def _codec(plan: ShippedStage) -> codecs.GroupCodec:
    return _codecs(plan)


# -- Flatten --------------------------------------------------------------------------------
def transcode(plan: ShippedStage, source: str, elements):
    """A Flatten input whose coder differs from the output's, re-encoded."""
    convert = stage_specs.conversions(coders_of(plan.components), plan.stage)[source]
    return (convert(e) for e in elements)
