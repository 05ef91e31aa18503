"""One bundle, from its input to what a backend commits: the attempt (worker/attempt.py), retried
while the schedule injects faults, the outputs split into elements, the work handed back
(channel-split remainder, split-off and self-checkpointed restrictions), timers decoded, user
state committed or discarded, user metrics reported. The in-process executor and the Spark
tasks both run their bundles here.

A bundle that requires finalization is finalized by ``Committed.finalize()``, which the backend
calls once it has committed the outputs: a bundle whose outputs are lost must not be finalized.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

from apache_beam.metrics import monitoring_infos
from apache_beam.portability.api import beam_runner_api_pb2

from reference_runner.graph.descriptors import StageDescriptor
from reference_runner.graph.plan import PlannedStage
from reference_runner.runtime.keyed_head import KeyedHead, TimerPastExpiration
from reference_runner.worker import attempt, codecs
from reference_runner.worker.embedded import BundleFailed
from reference_runner.worker.state import StateService


class BundleError(RuntimeError):
    """A bundle failed for a reason of the user's or the pipeline's (not an injected fault).
    ``worker_lost``: its SDK worker died or stopped answering, which another worker may not
    repeat; otherwise the failure is deterministic: the same bundle fails the same way again."""

    def __init__(self, message: str, worker_lost: bool = False):
        super().__init__(message)
        self.worker_lost = worker_lost


@dataclass
class Committed:
    """What a successful attempt produced."""

    outputs: dict[str, list[bytes]]  # PCollection -> encoded elements
    residuals: list[bytes]  # input to run again: unread elements, split-off restrictions
    deferred: list[tuple[bytes, int | None, int]]  # self-checkpoints: (element, watermark hold, resume delay)
    timers: list = field(default_factory=list)  # engine TimerUpdates the bundle made, in order
    _finalize: Callable[[], None] | None = None

    def finalize(self) -> None:
        """Call once the outputs are committed (the SDK's bundle finalization, if it asked)."""
        if self._finalize is not None:
            finalize, self._finalize = self._finalize, None
            finalize()


#: (user MonitoringInfos, committed) -> None: committed attempts once each, failed ones as attempted
MetricsSink = Callable[[list, bool], None]


class BundleRunner:
    """Runs bundles on one SDK worker whose state requests ``state`` answers.

    ``policy``: the schedule's split and fault decisions (bundling.py), None for neither;
    ``trace``: where every attempt is recorded (bundling.Trace), or None."""

    def __init__(
        self, worker, state: StateService, coders: codecs.Coders, metrics: MetricsSink, policy=None, trace=None
    ):
        self.worker, self.state, self.coders = worker, state, coders
        self._metrics, self._policy, self._trace = metrics, policy, trace
        self._impls: dict[str, object] = {}
        self._declared: set[str] = set()  # stateful ParDos whose state specs the state service knows

    def run(
        self,
        stage: PlannedStage,
        descriptor: StageDescriptor,
        inputs: list[bytes],
        timers=(),
        keyed: KeyedHead | None = None,
        truncate: bool = False,
        record: dict | None = None,
    ) -> Committed:
        """Attempt the bundle until an attempt succeeds; only that attempt's effects are kept.
        ``timers``: due engine Timers to fire after the elements; ``truncate``: the bundle runs
        the stage's truncation (drain): what comes back is the stage's input again, not split;
        ``record``: what the trace notes for every attempt besides the decisions."""
        size = len(inputs)
        if stage.keyed_head and stage.keyed_head not in self._declared:
            self._declared.add(stage.keyed_head)
            head = self.coders.components.transforms[stage.keyed_head]
            self.state.declare_states(
                stage.keyed_head, beam_runner_api_pb2.ParDoPayload.FromString(head.spec.payload), self.coders
            )
        for attempt_number in itertools.count():
            split = fault_at = None
            if self._policy is not None:
                split = None if truncate else self._policy.split(stage.id, size, stage.splittable)
                fault_at = self._policy.fault(stage.id, size, attempt_number)
            noted = dict(
                record or {},
                stage=stage.id,
                attempt=attempt_number,
                elements=size,
                timers=len(timers),
                split=split.to_json() if split else None,
                fault_at=fault_at,
            )
            if truncate:
                noted["truncate"] = True
            try:
                result = attempt.run(
                    self.worker,
                    descriptor.proto.id,
                    descriptor.input_transform,
                    inputs,
                    split,
                    fault_at,
                    KeyedHead.timer_streams(timers),
                )
            except attempt.AttemptFailed as failure:
                self.state.discard(failure.instruction_id)
                self._report(failure.metrics, committed=False)
                self._note(noted, outcome="failed", first_residual=None)
                if not failure.injected:
                    raise BundleError(f"{_name(noted)} failed: {failure}", failure.worker_lost) from None
                continue
            try:
                updates = keyed.decode_timers(result.timers) if keyed else []
            except TimerPastExpiration as e:
                self.state.discard(result.instruction_id)
                raise BundleError(f"{_name(noted)} failed: {e}") from None
            committed = self._committed(stage, descriptor, inputs, result, truncate)
            committed.timers = updates
            self._report(result.response.monitoring_infos, committed=True)
            self._note(
                noted,
                outcome="committed",
                first_residual=result.first_residual,
                restrictions_split_off=len(result.split_residuals),
            )
            self.state.commit(result.instruction_id)
            if result.response.requires_finalization:
                committed._finalize = functools.partial(self._finalize, result.instruction_id, noted)
            return committed
        raise AssertionError("unreachable: itertools.count() never ends")

    def _committed(
        self,
        stage: PlannedStage,
        descriptor: StageDescriptor,
        inputs: list[bytes],
        result: attempt.Attempt,
        truncate: bool,
    ) -> Committed:
        outputs = {}
        for transform_id, pcoll in descriptor.output_transforms.items():
            # (truncation gives back restrictions encoded as its input, the stage's)
            impl = self._impl(stage.inputs[0] if truncate else pcoll)
            outputs[pcoll] = codecs.split_elements(impl, result.data.get(transform_id, b""))
        # Handed back: restrictions split off (splittable DoFns), then elements a channel split left unread.
        residuals = residual_inputs(stage, result.split_residuals)
        if result.first_residual is not None:
            residuals += inputs[result.first_residual :]
        deferred = deferred_work(stage, result.response.residual_roots)
        if truncate:  # the restrictions truncation left are the stage's input again
            residuals, outputs = [e for elements in outputs.values() for e in elements], {}
        return Committed(outputs, residuals, deferred)

    def _impl(self, pcoll: str):
        impl = self._impls.get(pcoll)
        if impl is None:
            impl = self._impls[pcoll] = self.coders.windowed(pcoll).get_impl()
        return impl

    def _report(self, infos, committed: bool) -> None:
        user = [i for i in infos if monitoring_infos.is_user_monitoring_info(i)]
        if user:
            self._metrics(user, committed)

    def _note(self, noted: dict, **outcome) -> None:
        if self._trace is not None:
            self._trace.record(**noted, **outcome)

    def _finalize(self, instruction_id: str, noted: dict) -> None:
        try:
            self.worker.finalize(instruction_id)
        except BundleFailed as e:
            raise BundleError(f"finalizing {_name(noted)} failed: {e}") from None


def _name(noted: dict) -> str:
    bundle = f"bundle {noted['bundle']} " if "bundle" in noted else "a bundle "
    return f"{bundle}of stage {noted['stage']}"


def deferred_work(stage: PlannedStage, residual_roots) -> list[tuple[bytes, int | None, int]]:
    """Self-checkpoints (residual roots) as (element, watermark hold, resume delay) in micros.

    The hold is the least output watermark the SDK reported for the residual (its watermark
    estimator's); without one the stage's output watermark stays where it is until the work
    is done, the batch behaviour."""
    deferred = []
    for element, residual in zip(residual_inputs(stage, residual_roots), residual_roots, strict=True):
        marks = [codecs.proto_micros(w) for w in residual.application.output_watermarks.values()]
        deferred.append((element, min(marks) if marks else None, codecs.proto_micros(residual.requested_time_delay)))
    return deferred


def residual_inputs(stage: PlannedStage, residual_roots) -> list[bytes]:
    """Residual restrictions a bundle handed back (split off or self-checkpointed), as new
    input of its stage.

    The SDK encodes a residual's element with the windowed-value coder of the input PCollection
    of the transform that deferred it, which is exactly our DATA_INPUT wire coder for that
    PCollection (graph/descriptors.py), so the bytes are stage input as they are. Only a stage's
    root transform (process_sized_element_and_restrictions always is one) can defer work.
    """
    residuals = []
    root = stage.transforms[0]
    for residual in residual_roots:
        application = residual.application
        if application.transform_id != root:
            raise BundleError(
                f"stage {stage.id}: residual for {application.transform_id}/"
                f"{application.input_id}, which is not the stage's input"
            )
        residuals.append(application.element)
    return residuals
