"""What runs inside Spark's Python workers: fused stages on an in-process SDK worker, and the
grouping step after a shuffle. Everything here is rebuilt from a StagePlan and cached per
Python worker process."""
from __future__ import annotations

import itertools
import zlib

from apache_beam.portability.api import beam_runner_api_pb2

from reference_runner.engine import grouping, panes
from reference_runner.engine.manager import PLUS_INFINITY
from reference_runner.engine.windows import MIN_TIMESTAMP
from reference_runner.graph import trigger_spec
from reference_runner.spark.plan import StagePlan, coders_of
from reference_runner.worker import attempt, codecs, merging, warm
from reference_runner.worker.embedded import EmbeddedWorker
from reference_runner.worker.state import SideInputIndex, StateService

class StageFailed(RuntimeError):
    """A bundle failed in the SDK worker (the user's error text included)."""


def sdk_worker(plan: StagePlan, side_values: dict, state: StateService | None = None,
               warm_worker: bool = False) -> EmbeddedWorker:
    """An SDK worker for one partition of the stage, its side inputs loaded from the broadcast;
    ``state``: the service answering its state requests (user state too, for a stateful stage);
    ``warm_worker``: take one this Python worker process kept from an earlier task (warm.py)."""
    from apache_beam.portability.api import beam_fn_api_pb2
    coders = coders_of(plan.components)
    state = state if state is not None else StateService()
    for side in plan.side_inputs:
        state.side_inputs[(side.transform_id, side.tag)] = SideInputIndex(
            side_values[side.pcoll], coders, side.pcoll, side.multimap)
    worker = warm.acquire(state) if warm_worker else EmbeddedWorker(state)
    worker.register(beam_fn_api_pb2.ProcessBundleDescriptor.FromString(plan.descriptor))
    return worker


def run_sdk_stage(plan: StagePlan, side_values, bundle_size: int, metrics, elements):
    """A partition through the stage, ``bundle_size`` elements per bundle; outputs stream out
    bundle by bundle, tagged with their PCollection's index when the stage has several."""
    # Not with side inputs: the SDK keeps a global window's side input values in the bundle
    # processor, and the same stage of another job may read other values
    worker = sdk_worker(plan, side_values.value if side_values is not None else {},
                        warm_worker=not plan.side_inputs)
    outputs = Outputs(plan)
    succeeded = False
    try:
        yield from _bundles(worker, plan, bundle_size, metrics, elements, outputs)
        succeeded = True
    finally:
        # Kept for the next task only if no DoFn in it has a setup or teardown: those are torn
        # down when their partition is done
        warm.release(worker, succeeded)


def _bundles(worker, plan, bundle_size, metrics, elements, outputs):
    descriptor_id = plan.descriptor_id or plan.id
    for chunk in _chunks(elements, bundle_size):
        while chunk:  # a splittable DoFn's deferred restrictions run again, here, until done
            try:
                result = attempt.run(worker, descriptor_id, plan.input_transform, chunk)
            except attempt.AttemptFailed as e:
                raise StageFailed(f"bundle of stage {plan.id} failed: {e}") from None
            chunk = [r.application.element for r in result.response.residual_roots]
            yield from outputs.of(worker, result, metrics)


class Outputs:
    """What a committed bundle hands back: finalization, metrics, then its output elements,
    tagged with their PCollection's index when the stage has several outputs."""

    def __init__(self, plan: StagePlan):
        coders = coders_of(plan.components)
        self._plan = plan
        self._impls = {t: coders.windowed(p).get_impl() for t, p in plan.output_transforms.items()}
        self._index = {p: i for i, p in enumerate(plan.outputs)}
        self._tagged = len(plan.outputs) > 1

    def of(self, worker, result: attempt.Attempt, metrics):
        if result.response.requires_finalization:
            worker.finalize(result.instruction_id)
        if metrics is not None:
            metrics.add([i.SerializeToString() for i in result.response.monitoring_infos])
        for transform_id, data in result.data.items():
            pcoll = self._plan.output_transforms.get(transform_id)
            if pcoll is None or pcoll not in self._index:
                continue
            for element in codecs.split_elements(self._impls[transform_id], data):
                yield (self._index[pcoll], element) if self._tagged else element


def _chunks(iterator, size: int):
    iterator = iter(iterator)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


# -- GroupByKey ---------------------------------------------------------------------------
def key_of(plan: StagePlan, element: bytes) -> tuple[bytes, bytes]:
    """(encoded key, element): what the shuffle partitions and sorts on."""
    return _codec(plan).split(element)[0], element


def partition_of(key: bytes) -> int:
    """The same partition for the same key bytes in every process (unlike hash())."""
    return zlib.crc32(key)


def group_partition(plan: StagePlan, pairs):
    """A shuffled, key-sorted partition -> GroupByKey output, one key in memory at a time.
    Sessions are merged per key here; a custom merging WindowFn's windows by the SDK, per key.
    A triggered GroupByKey fires its panes as the reference runner's does in batch: the key's
    elements arrive one by one in shuffle order while the watermark is at -inf, each evaluated
    by the trigger, then the watermark jumps to +inf (on-time and final panes). The front end
    refuses processing-time triggers in batch (graph/check.py): nothing drives that clock here."""
    worker = EmbeddedWorker(StateService()) if plan.merge_in_sdk else None
    try:
        trigger = trigger_spec.from_proto(beam_runner_api_pb2.Trigger.FromString(plan.trigger)) if plan.trigger else None
        spec = grouping.Grouping(_codec(plan), merging=plan.merging, timestamp_combiner=plan.timestamp_combiner,
                                 allowed_lateness=plan.allowed_lateness,
                                 merge_fn=_window_merger(plan, worker) if worker else None,
                                 trigger=trigger, accumulating=plan.accumulating)
        for _, group in itertools.groupby(pairs, key=lambda kv: kv[0]):
            try:
                yield from _group_one_key(spec, [element for _, element in group])
            except merging.MergeFailed as e:
                raise StageFailed(f"GroupByKey {plan.id}: {e}") from None
    finally:
        if worker is not None:
            worker.stop()


def _group_one_key(spec: grouping.Grouping, elements: list) -> list:
    if spec.trigger is None:
        buffer = grouping.GroupBuffer(spec)
        buffer.add(elements)
        return buffer.fire(PLUS_INFINITY)  # bounded input: every window is complete
    triggered = panes.TriggeredBuffer(spec)
    return triggered.add(elements, MIN_TIMESTAMP, 0) + triggered.on_watermark(PLUS_INFINITY, 0)


def _window_merger(plan: StagePlan, worker: EmbeddedWorker) -> merging.WindowMerger:
    """The SDK's merge_windows transform for the GroupByKey's WindowFn, on ``worker``."""
    coders = coders_of(plan.components)
    components = coders.components
    [main] = plan.inputs
    ws = components.windowing_strategies[components.pcollections[main].windowing_strategy_id]
    return merging.WindowMerger(worker, f"{plan.id}/merge_windows", ws, components, coders.window_coder(main))


_codecs: dict = {}


def _codec(plan: StagePlan) -> codecs.GroupCodec:
    codec = _codecs.get(plan.id)
    if codec is None:
        coders = coders_of(plan.components)
        codec = _codecs[plan.id] = codecs.GroupCodec(coders.windowed(plan.inputs[0]), coders.windowed(plan.outputs[0]))
    return codec


# -- Flatten --------------------------------------------------------------------------------
_CONVERSIONS = {"transcode": codecs.Transcoder, "keys_to_bytes": codecs.KeysToBytes,
                "keys_from_bytes": codecs.KeysFromBytes}


def transcode(components: bytes, conversion: str, source: str, target: str, elements):
    coders = coders_of(components)
    convert = _CONVERSIONS[conversion](coders.windowed(source), coders.windowed(target))
    return (convert(e) for e in elements)
