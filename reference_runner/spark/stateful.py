"""Stateful ParDo on a Spark executor: one shuffled partition, sorted by (key, timestamp).

The stage's input is shuffled on the encoded key and sorted by key, then timestamp, within
each partition (so time-sorted input comes for free). The partition runs through one SDK
worker whose StateService keeps the user state; keys are handled in chunks: the elements of
a chunk's keys go in bundles of about ``bundle_size`` elements (a key may span bundles), and
once the chunk's last key is complete its timers fire, since in batch the watermark then is
+inf: the earliest timer of every key of the chunk in one bundle, again and again (a callback
may set or clear timers, even earlier ones), OnWindowExpiration timers (one per key and
window) among them, then processing-time timers as the chunk's virtual clock reaches them.
Then the chunk's state is dropped: only one chunk of keys is in memory.
"""

from __future__ import annotations

import itertools
import zlib

from reference_runner.engine.clock import VirtualClock
from reference_runner.engine.keyed import arm_expiry, decode
from reference_runner.engine.manager import PLUS_INFINITY
from reference_runner.engine.timers import TimerStore
from reference_runner.engine.userstate import UserStateStore
from reference_runner.runtime.bundles import BundleRunner
from reference_runner.runtime.keyed_head import KeyedHead
from reference_runner.spark.shipped import ShippedStage, ShippedStageCache, coders_of
from reference_runner.spark.tasks import Outputs, PartitionRun, bundle_runner, run_bundle, sdk_worker
from reference_runner.worker.state import StateService


def sort_key(plan: ShippedStage, element: bytes) -> tuple[tuple[bytes, int], bytes]:
    """((encoded key, timestamp), element): what the shuffle partitions on and sorts by."""
    key, timestamp, _ = keyed_stage(plan).key_of(element)
    return (key, timestamp), element


def partition_of(key_and_time: tuple[bytes, int]) -> int:
    """Every element of a key in one partition, whatever its timestamp (crc32: the same in
    every process, unlike hash())."""
    return zlib.crc32(key_and_time[0])


def run_stateful_stage(plan: ShippedStage, side_values, bundle_size: int, reports, partition: int, pairs):
    """Sorted partition number ``partition`` of ((key, timestamp), element) pairs -> the stage's
    outputs, streamed; metrics and finalization as tasks.run_sdk_stage's."""
    state = StateService()
    leased, descriptor = sdk_worker(plan, side_values.value if side_values is not None else {}, state)
    task = PartitionRun(plan, reports, partition)
    run = _KeyedRun(plan, bundle_runner(plan, leased.worker, state, task), descriptor, task)
    succeeded = False
    try:
        pending, in_chunk = [], 0
        for _, group in itertools.groupby(pairs, key=lambda kv: kv[0][0]):
            for _, element in group:
                pending.append(element)
                if len(pending) >= bundle_size:
                    yield from run.elements(pending)
                    in_chunk, pending = in_chunk + len(pending), []
            if in_chunk + len(pending) >= bundle_size:  # the key is complete: close the chunk
                yield from run.elements(pending)
                yield from run.end_of_chunk()
                in_chunk, pending = 0, []
        yield from run.elements(pending)
        yield from run.end_of_chunk()
        task.close()
        succeeded = True
    finally:
        leased.release(succeeded)


class _KeyedRun:
    """Bundles of one partition of a stateful stage; state and timers of the current chunk."""

    def __init__(self, plan: ShippedStage, runner: BundleRunner, descriptor, task: PartitionRun):
        self._plan, self._runner, self._descriptor, self._task = plan, runner, descriptor, task
        self._keyed = keyed_stage(plan)
        self._spec = self._keyed.spec()
        self._timers = TimerStore()
        self._now = VirtualClock().now()  # the chunk's processing time
        self._outputs = Outputs(plan)

    def elements(self, elements: list[bytes]):
        if elements:
            yield from self._bundle(elements, ())
            # OnWindowExpiration: a runner timer per key and window the elements reached, as
            # the reference runner's engine arms them
            if self._spec.expiry_family is not None:
                arm_expiry(self._spec, self._timers, decode(self._spec, elements))

    def end_of_chunk(self):
        """Every key of the chunk is complete: fire its timers, then forget its state. Nothing
        else is left to do for these keys, so processing time (virtual, one clock per chunk)
        jumps to each pending processing-time timer in turn, as the reference runner's does."""
        self._now = VirtualClock().now()
        while True:
            due, self._now = self._timers.take_next(PLUS_INFINITY, self._now)
            if not due:
                break
            yield from self._bundle([], due)
        self._runner.state.user = UserStateStore()
        self._now = VirtualClock().now()

    def _bundle(self, elements: list[bytes], timers):
        committed = run_bundle(self._runner, self._plan, self._descriptor, elements, timers, self._keyed)
        # (a bundle of timers only runs once the watermark is +inf)
        self._timers.apply(committed.timers, None if elements else PLUS_INFINITY, self._now)
        yield from self._outputs.of(committed)
        self._task.committed(committed)


_keyed_stages = ShippedStageCache(lambda plan: KeyedHead.of(plan.stage.keyed_head, coders_of(plan.components)))


def keyed_stage(plan: ShippedStage) -> KeyedHead:
    """The stage's KeyedHead, rebuilt from the plan once per Python worker process (and job)."""
    return _keyed_stages(plan)
