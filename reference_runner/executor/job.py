"""The in-process executor's run loop: a Plan's stages on the engine (ElementManager), bundle by
bundle on one SDK worker (runtime/bundles.py), until every watermark is +inf, the job is
cancelled, or a drain has finished it."""

from __future__ import annotations

import logging

from reference_runner import bundling
from reference_runner.backends import Control
from reference_runner.engine import clock, manager
from reference_runner.graph.descriptors import EMBEDDED_ENDPOINT, StageDescriptor
from reference_runner.graph.plan import Plan, PlannedStage, StageKind
from reference_runner.knobs import Knobs
from reference_runner.runtime import stage_specs
from reference_runner.runtime.bundles import BundleError, BundleRunner
from reference_runner.runtime.keyed_head import KeyedHead
from reference_runner.runtime.side_snapshots import SideSnapshots
from reference_runner.worker import codecs, merging, window_mapping
from reference_runner.worker.state import StateService

_LOG = logging.getLogger(__name__)


class JobFailed(RuntimeError):
    pass


class Job:
    """One pipeline run on an SDK worker.

    The loop reads ``control.token`` between two bundles: a cancelled job stops (JobCancelled);
    a draining one stops reading new input and finishes what it has
    (manager.ElementManager.drain), ``run`` then returns normally and ``drained`` is True."""

    def __init__(
        self,
        plan: Plan,
        knobs: Knobs | None = None,
        control: Control | None = None,
        descriptor_prefix: str = "",
        endpoint: str = EMBEDDED_ENDPOINT,
    ):
        knobs = knobs or Knobs()
        self.plan = plan
        self.control = control or Control()  # where user metrics go as bundles commit
        self.state = StateService()
        self.coders = codecs.Coders(plan.components)
        self.policy = bundling.Replay(knobs.replay) if knobs.replay else bundling.SeededPolicy(knobs)
        self.clock = clock.make(knobs.clock)
        self.trace_path = knobs.trace
        self.descriptor_prefix = descriptor_prefix  # a reused worker may have run other jobs
        self.endpoint = endpoint  # the runner's Fn API address, for a worker out of process
        self.drained = False  # the drain was applied (the job did not end on its own)
        # a wall clock waiting for a timer stops waiting, so that the loop reads the token
        self.control.token.on_cancel(self.clock.interrupt)
        self.control.token.on_drain(self.clock.interrupt)

    def run(self, worker) -> None:
        """Run on ``worker`` (EmbeddedWorker or RemoteWorker, serving this job's StateService),
        which its caller chose, and gives back, once this returns (executor/reference_backend.py)."""
        trace = bundling.Trace(self.trace_path)
        try:
            self._run(worker, trace)
        finally:
            trace.close()

    def _run(self, worker, trace: bundling.Trace) -> None:
        plan, coders = self.plan, self.coders
        keyed = {s.id: KeyedHead.of(s.keyed_head, coders) for s in plan.stages if s.keyed_head}
        described: dict[str, StageDescriptor] = {}
        specs = []
        for stage in plan.stages:
            merge_fn = self._merge_fn(stage, worker)
            side_mapper = window_mapping.mapper_for(
                worker, f"{self.descriptor_prefix}{stage.id}", stage, self.coders, self.endpoint
            )
            specs.append(stage_specs.engine_spec(plan, coders, stage, keyed.get(stage.id), merge_fn, side_mapper))
            if stage.descriptor is not None:
                described[stage.id] = self._instantiate(stage.descriptor, stage.id)
                worker.register(described[stage.id].proto)
        em = manager.ElementManager(
            specs, bundle_policy=self.policy, clock=self.clock, side_decoders=stage_specs.side_decoders(plan, coders)
        )
        em.start(
            {
                p: [stage_specs.impulse_element(coders, p)]
                for s in plan.stages
                if s.kind == StageKind.IMPULSE
                for p in s.outputs
            }
        )
        bundles = BundleRunner(worker, self.state, coders, self._keep_metrics, self.policy, trace)
        sides = SideSnapshots(self.state, coders, worker)
        truncators: dict[str, StageDescriptor] = {}
        by_id = {s.id: s for s in plan.stages}
        while True:
            self.control.token.raise_if_cancelled()
            if self.control.token.draining and not em.draining:
                em.drain()
                self.drained = True
            bundle = em.next_bundle()
            if bundle is None and em.advance_time():  # a TestStream event, or the clock moved
                self._release_expired(em)
                continue
            if bundle is None:
                if em.done():
                    self.policy.finish()
                    return
                raise JobFailed(em.describe_stuck())
            stage = by_id[bundle.stage]
            descriptor = sides.descriptor_for(stage, em, described[stage.id])
            if bundle.truncate:  # drain: the stage's residuals through the SDF's truncation
                if stage.id not in truncators:
                    truncators[stage.id] = self._instantiate(stage.truncation, f"{stage.id}/truncate")
                    worker.register(truncators[stage.id].proto)
                descriptor = truncators[stage.id]
            record = dict(
                bundle=bundle.id,
                input_watermark=manager.format_watermark(em.input_watermark[bundle.stage]),
                output_watermark=manager.format_watermark(em.output_watermark[bundle.stage]),
            )
            try:
                committed = bundles.run(
                    stage,
                    descriptor,
                    bundle.inputs,
                    bundle.timers or (),
                    None if bundle.truncate else keyed.get(stage.id),
                    bundle.truncate,
                    record,
                )
                em.commit(
                    bundle, committed.outputs, committed.residuals, timers=committed.timers, deferred=committed.deferred
                )
                committed.finalize()  # only a committed bundle is finalized
            except BundleError as e:
                raise JobFailed(str(e)) from None
            self._release_expired(em)
            if stage.id in keyed and em.output_watermark[stage.id] >= manager.PLUS_INFINITY:
                self.state.release(keyed[stage.id].transform)  # state expiry: every window is done

    def _instantiate(self, descriptor, stage_id: str) -> StageDescriptor:
        return descriptor.instantiate(f"{self.descriptor_prefix}{stage_id}", self.endpoint, by_content=True)

    def _merge_fn(self, stage: PlannedStage, worker):
        """A custom merging WindowFn's GroupByKey: the SDK merges its windows."""
        if stage.group is None or not stage.group.merge_in_sdk:
            return None
        [main] = stage.inputs
        return merging.WindowMerger(
            worker,
            f"{self.descriptor_prefix}{stage.id}/merge_windows",
            self.plan.graph.windowing_of(main),
            self.plan.components,
            self.coders.window_coder(main),
            self.endpoint,
        )

    def _keep_metrics(self, user_infos: list, committed: bool) -> None:
        # consolidated as bundles commit: a long-running job keeps one entry per metric
        self.control.keep_metrics(self.plan.graph.with_step_names(user_infos), committed)

    def _release_expired(self, em: manager.ElementManager) -> None:
        for transform, window in em.take_expired():
            self.state.release_window(transform, window)
