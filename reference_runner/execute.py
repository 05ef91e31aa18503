"""The job executor: pipeline proto -> checked, fused stages -> engine <-> SDK worker, bundle by bundle."""
from __future__ import annotations

import collections
import dataclasses
import hashlib
import itertools
import logging
import threading

from apache_beam.metrics import monitoring_infos
from apache_beam.portability.api import beam_runner_api_pb2
from apache_beam.transforms import window as beam_window
from apache_beam.utils import windowed_value
from apache_beam.utils.timestamp import Timestamp

from reference_runner import bundling
from reference_runner.engine import clock, grouping, manager
from reference_runner.graph import fusion, prepare, sdf, trigger_spec, urns, windowing
from reference_runner.graph.pipeline import is_stateful
from reference_runner.metrics import merge_user_metrics
from reference_runner.worker import attempt, codecs, descriptors, merging, sidewindows, warm
from reference_runner.worker.embedded import BundleFailed, EmbeddedWorker
from reference_runner.worker.keyed import KeyedStage, TimerPastExpiration
from reference_runner.worker.state import SideInputIndex, StateService

_LOG = logging.getLogger(__name__)


class JobFailed(RuntimeError):
    pass


class JobCancelled(RuntimeError):
    """Someone cancelled the job; it stopped between two bundles."""


class Job:
    """One pipeline run on the embedded SDK worker.

    ``cancel()`` stops it between two bundles (JobCancelled). ``drain()`` makes it stop reading
    new input and finish what it has (manager.ElementManager.drain): ``run`` then returns
    normally and ``drained`` is True."""

    def __init__(self, proto: beam_runner_api_pb2.Pipeline, fuse: bool = True, lift: bool = True,
                 schedule: bundling.Schedule | None = None, trace: str | None = None,
                 replay: str | None = None, job_id: str = "", endpoint: str = "embedded"):
        self.prepared = _prepare(proto, fuse, lift, environments=endpoint == "embedded")
        self.graph, self.stages, self.coders = self.prepared.graph, self.prepared.stages, self.prepared.coders
        self.streaming = self.prepared.streaming
        self.unbounded = self.prepared.unbounded  # may run until drained or cancelled
        self.state = StateService()
        self._side_versions: dict[tuple[str, str], int] = {}  # (transform, tag) -> version indexed
        self._side_digests: dict[tuple[str, str], bytes] = {}  # (transform, tag) -> digest of its contents
        self._variants: dict[str, descriptors.StageDescriptor] = {}  # registered, by descriptor id
        self._global_sides: dict[str, bool] = {}  # stage id -> all its side inputs globally windowed
        self.policy = bundling.Replay(replay) if replay else (schedule or bundling.Schedule()).policy()
        self.clock = clock.make((schedule or bundling.Schedule()).clock)
        self.trace_path = trace
        self.job_id = job_id        # prefixes descriptor ids: a reused worker may have run other jobs
        self.endpoint = endpoint    # the runner's Fn API address, for a worker out of process
        # User metrics (all a result or the job server reports), consolidated as bundles commit
        # so that a long-running job keeps one entry per metric, not one per bundle.
        self.monitoring_infos: list = []   # of committed attempts
        self.failed_attempt_infos: list = []  # what failed attempts reported before failing
        self._cancelled = threading.Event()
        self._drain = threading.Event()
        self.drained = False          # the drain was applied (the job did not end on its own)
        self._truncators: dict = {}   # SDF stage id -> descriptor of its truncation (drain)

    def cancel(self) -> None:
        self._cancelled.set()
        self.clock.interrupt()  # a wall clock waiting for a timer stops waiting

    def drain(self) -> None:
        self._drain.set()
        self.clock.interrupt()

    def run(self, worker=None) -> None:
        """Run on ``worker`` (EmbeddedWorker or RemoteWorker, serving this job's StateService;
        stopped at the end), or on a warm embedded worker (worker/warm.py)."""
        trace = bundling.Trace(self.trace_path)
        warm_worker = worker is None
        worker, succeeded = (warm.acquire(self.state) if warm_worker else worker), False
        try:
            self._run(worker, trace)
            succeeded = True
        finally:
            trace.close()
            if warm_worker:
                warm.release(worker, succeeded)
            else:
                worker.stop()

    def _run(self, worker: EmbeddedWorker, trace: bundling.Trace) -> None:
        specs, described = [], {}
        keyed = {s.id: KeyedStage.heading(s, self.coders) for s in self.stages
                 if s.kind == "sdk" and any(is_stateful(t) for t in s.transforms)}
        for stage in self.stages:
            specs.append(manager.StageSpec(stage.id, _engine_kind(stage.kind), list(stage.inputs),
                                           list(stage.outputs), sorted({p for p, _, _ in stage.side_inputs}),
                                           self._grouping(stage, worker) if stage.kind == "group" else None,
                                           self._conversions(stage) if stage.kind == "flatten" else {},
                                           keyed[stage.id].spec() if stage.id in keyed else None,
                                           self._stream_events(stage) if stage.kind == "test_stream" else [],
                                           self._side_window_needs(stage)))
            if stage.kind == "sdk":
                described[stage.id] = self.prepared.describe(stage, self.job_id, self.endpoint)
                worker.register(described[stage.id].proto)
        em = manager.ElementManager(specs, bundle_policy=self.policy, clock=self.clock,
                                    side_decoders=self._side_decoders())
        em.start({p: [self._impulse_element(p)] for s in self.stages if s.kind == "impulse" for p in s.outputs})
        by_id = {s.id: s for s in self.stages}
        while True:
            if self._cancelled.is_set():
                raise JobCancelled("the job was cancelled")
            if self._drain.is_set() and not em.draining:
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
            descriptor = self._materialize_side_inputs(stage, em, described[stage.id], worker)
            if bundle.truncate:
                self._run_bundle(worker, trace, em, bundle, stage, self._truncator(stage, worker), None)
            else:
                self._run_bundle(worker, trace, em, bundle, stage, descriptor, keyed.get(stage.id))
            self._release_expired(em)
            if stage.id in keyed and em.output_watermark[stage.id] >= manager.PLUS_INFINITY:
                self.state.release(keyed[stage.id].transform)  # state expiry: every window is done

    def _truncator(self, stage: fusion.Stage, worker) -> descriptors.StageDescriptor:
        """The descriptor that truncates the residuals of SDF stage ``stage`` (drain)."""
        if stage.id not in self._truncators:
            truncation, components = sdf.truncation_stage(stage, self.graph.components)
            described = descriptors.build(truncation, components, f"{self.job_id}{truncation.id}",
                                          self.endpoint, by_content=True)
            worker.register(described.proto)
            self._truncators[stage.id] = described
        return self._truncators[stage.id]

    def _release_expired(self, em: manager.ElementManager) -> None:
        for transform, window in em.take_expired():
            self.state.release_window(transform, window)

    def _stream_events(self, stage: fusion.Stage) -> list:
        """A TestStream's events as engine data: elements encoded as the output's windowed values
        (global window, no pane), times in micros."""
        [t] = stage.transforms
        payload = beam_runner_api_pb2.TestStreamPayload.FromString(t.proto.spec.payload)
        events = []
        for event in payload.events:
            kind = event.WhichOneof("event")
            if kind == "element_event":
                pcoll = t.proto.outputs[event.element_event.tag]
                impl = self.coders.windowed(pcoll).get_impl()
                read = self.coders.outer_reader(payload.coder_id)  # (graph/transcode.py: the output has its coder)
                elements = []
                for e in event.element_event.elements:
                    value = read(e.encoded_element)
                    elements.append(codecs.encode_nested(impl, windowed_value.WindowedValue(
                        value, Timestamp(micros=e.timestamp * 1000), (beam_window.GlobalWindow(),))))
                events.append((manager.ELEMENTS, pcoll, elements))
            elif kind == "watermark_event":
                events.append((manager.WATERMARK, t.proto.outputs[event.watermark_event.tag],
                               event.watermark_event.new_watermark * 1000))
            else:
                events.append((manager.PROCESSING_TIME, None, event.processing_time_event.advance_duration * 1000))
        return events

    def _run_bundle(self, worker, trace, em, bundle, stage, described_stage, keyed) -> None:
        """Attempt the bundle until one attempt succeeds; only that attempt's effects (outputs,
        state writes, timers set, residuals, metrics, finalization) are kept. A truncation
        bundle (drain) runs ``described_stage``, the stage's truncation, and is not split."""
        splittable = stage.transforms[0].urn in urns.STAGE_ROOTS
        kind = {"truncate": True} if bundle.truncate else {}
        watermarks = {"input_watermark": manager.format_watermark(em.input_watermark[bundle.stage]),
                      "output_watermark": manager.format_watermark(em.output_watermark[bundle.stage])}
        size = len(bundle.inputs)
        for attempt_number in itertools.count():
            split = None if bundle.truncate else self.policy.split(bundle.stage, size, splittable)
            fault_at = self.policy.fault(bundle.stage, size, attempt_number)
            record = dict(bundle=bundle.id, stage=bundle.stage, attempt=attempt_number, elements=size,
                          timers=len(bundle.timers or ()), split=split.to_json() if split else None,
                          fault_at=fault_at, **watermarks, **kind)
            try:
                result = attempt.run(worker, described_stage.proto.id, described_stage.input_transform,
                                     bundle.inputs, split, fault_at, KeyedStage.timer_streams(bundle.timers or ()))
                timers = keyed.decode_timers(result.timers) if keyed else []
            except attempt.AttemptFailed as failure:
                self.state.discard(failure.instruction_id)
                self._keep_user_metrics(self.failed_attempt_infos, failure.metrics)
                trace.record(**record, outcome="failed", first_residual=None)
                if not failure.injected:
                    raise JobFailed(f"bundle {bundle.id} of stage {bundle.stage} failed: {failure}") from None
                continue
            except TimerPastExpiration as e:
                self.state.discard(result.instruction_id)
                raise JobFailed(f"bundle {bundle.id} of stage {bundle.stage} failed: {e}") from None
            outputs = {}
            for transform_id, pcoll in described_stage.output_transforms.items():
                # (truncation gives back restrictions encoded as its input, the stage's)
                impl = self.coders.windowed(stage.inputs[0] if bundle.truncate else pcoll).get_impl()
                outputs[pcoll] = codecs.split_elements(impl, result.data.get(transform_id, b""))
            # What the bundle handed back: restrictions split off or deferred (splittable DoFns),
            # then the elements a channel split left unread.
            residuals = _residual_inputs(stage, result.split_residuals)
            residuals += bundle.inputs[result.first_residual:] if result.first_residual is not None else []
            deferred = _deferred(stage, result.response.residual_roots)
            if bundle.truncate:  # the restrictions truncation left are the stage's input again
                residuals, outputs = [e for elements in outputs.values() for e in elements], {}
            self._keep_user_metrics(self.monitoring_infos, result.response.monitoring_infos)
            trace.record(**record, outcome="committed", first_residual=result.first_residual,
                         restrictions_split_off=len(result.split_residuals))
            self.state.commit(result.instruction_id)
            em.commit(bundle, outputs, residuals, timers=timers, deferred=deferred)
            if result.response.requires_finalization:  # only a committed bundle is finalized
                try:
                    worker.finalize(result.instruction_id)
                except BundleFailed as e:
                    raise JobFailed(f"finalizing bundle {bundle.id} of stage {stage.id} failed: {e}") from None
            return

    def _keep_user_metrics(self, kept: list, infos) -> None:
        user = self.graph.with_step_names([i for i in infos if monitoring_infos.is_user_monitoring_info(i)])
        if user:
            kept[:] = merge_user_metrics(kept + user)

    def _materialize_side_inputs(self, stage: fusion.Stage, em: manager.ElementManager,
                                 described: descriptors.StageDescriptor, worker) -> descriptors.StageDescriptor:
        """Index the stage's side inputs as the bundle about to run sees them: once per job in
        batch; in streaming again whenever new panes or elements arrived since. Returns the
        descriptor to run the bundle with.

        The SDK's DoFn invoker keeps the values of globally windowed side inputs for the life of
        its bundle processor (apache/beam PR #31013: unless the worker runs with the experiment
        disable_global_windowed_args_caching), and workers reuse processors across bundles and,
        warm, across jobs. So a stage reading only globally windowed side inputs (the invoker
        reads windowed ones again for every element) runs under a descriptor id naming a digest
        of their contents: new contents, a new processor that reads them."""
        if not stage.side_inputs:
            return described
        global_sides = self._globally_windowed_sides(stage)
        for pcoll, transform_id, tag in stage.side_inputs:
            if self._side_versions.get((transform_id, tag)) == em.side_input_version(pcoll):
                continue  # indexed already, contents unchanged: no snapshot taken
            version, contents = em.side_input(pcoll)
            payload = self.graph.by_id[transform_id].pardo_payload()
            multimap = payload.side_inputs[tag].access_pattern.urn == urns.MULTIMAP_SIDE_INPUT
            self.state.side_inputs[(transform_id, tag)] = SideInputIndex(contents, self.coders, pcoll, multimap)
            self._side_versions[(transform_id, tag)] = version
            if global_sides:
                self._side_digests[(transform_id, tag)] = _digest(contents)
        if not global_sides:
            return described
        digest = hashlib.sha1(b"".join(self._side_digests[(t, tag)] for _, t, tag in stage.side_inputs)).hexdigest()
        variant_id = f"{described.proto.id}~{digest[:16]}"
        variant = self._variants.get(variant_id)
        if variant is None:
            proto = type(described.proto)()
            proto.CopyFrom(described.proto)
            proto.id = variant_id
            variant = self._variants[variant_id] = dataclasses.replace(described, proto=proto)
            worker.register(proto)
        return variant

    def _globally_windowed_sides(self, stage: fusion.Stage) -> bool:
        """Asked before every bundle of a side-input reader; answered once per stage."""
        known = self._global_sides.get(stage.id)
        if known is None:
            components = self.graph.components
            known = self._global_sides[stage.id] = all(
                components.windowing_strategies[components.pcollections[p].windowing_strategy_id].window_fn.urn
                == urns.GLOBAL_WINDOWS for p, _, _ in stage.side_inputs)
        return known

    def _side_window_needs(self, stage: fusion.Stage):
        """Streaming: how the engine finds the side windows a main-input element waits for."""
        if not (self.streaming and stage.kind == "sdk" and stage.side_inputs):
            return None
        return sidewindows.side_window_needs(self.graph.components, self.coders, stage.inputs[0],
                                             sorted({p for p, _, _ in stage.side_inputs}))

    def _side_decoders(self) -> dict:
        """The side inputs the engine keeps per window, pane by pane (engine/sideinputs.py): all of
        them in streaming; in batch those with a trigger (their producer may fire several panes
        per window, and a reader sees the latest), the rest are read whole."""
        sides = {p for s in self.stages for p, _, _ in s.side_inputs}
        if not self.streaming:
            sides = {p for p in sides if sidewindows.triggered(self.graph.windowing_of(p))}
        return {p: sidewindows.pane_decoder(self.coders, p) for p in sorted(sides)}

    def _grouping(self, stage: fusion.Stage, worker: EmbeddedWorker) -> grouping.Grouping:
        [main] = stage.inputs
        [out] = stage.outputs
        ws = self.graph.windowing_of(main)
        trigger = None  # batch: one pane per window when the watermark passes its end
        if self.streaming or trigger_spec.fires_panes_in_batch(ws.trigger):
            trigger = trigger_spec.from_proto(ws.trigger)
        return grouping.Grouping(
            codecs.GroupCodec(self.coders.windowed(main), self.coders.windowed(out)),
            merging=windowing.merging(ws),
            merge_fn=merging.WindowMerger(worker, f"{self.job_id}{stage.id}/merge_windows", ws,
                                          self.graph.components, self.coders.window_coder(main),
                                          self.endpoint) if windowing.merged_in_sdk(ws) else None,
            timestamp_combiner=windowing.timestamp_combiner(ws),
            allowed_lateness=ws.allowed_lateness * 1000, trigger=trigger,
            accumulating=ws.accumulation_mode == beam_runner_api_pb2.AccumulationMode.ACCUMULATING)

    def _conversions(self, stage: fusion.Stage) -> dict:
        """Flatten inputs whose element coder differs from the output's are re-encoded (and the
        runner's own KEYS_TO_BYTES / KEYS_FROM_BYTES re-key, as one-input Flattens)."""
        [out] = stage.outputs
        pcolls = self.graph.components.pcollections
        out_coder = self.coders.windowed(out)
        conversions = {}
        rekey = {urns.KEYS_TO_BYTES: codecs.KeysToBytes, urns.KEYS_FROM_BYTES: codecs.KeysFromBytes}
        convert = rekey.get(stage.transforms[0].urn, codecs.Transcoder)
        for pcoll in stage.inputs:
            if pcolls[pcoll].coder_id == pcolls[out].coder_id:
                continue
            conversions[pcoll] = convert(self.coders.windowed(pcoll), out_coder)
        return conversions

    def _impulse_element(self, pcoll: str) -> bytes:
        wv = windowed_value.WindowedValue(b"", windowed_value.MIN_TIMESTAMP, (beam_window.GlobalWindow(),))
        return codecs.encode_nested(self.coders.windowed(pcoll).get_impl(), wv)


class _Prepared:
    """A pipeline through the front end (lifted, SDF-expanded, checked, fused) and its stages'
    descriptors; identical pipelines share one (see _prepare)."""

    def __init__(self, proto, fuse: bool, lift: bool, environments: bool):
        self.graph = prepare.prepare(proto, prepare.REFERENCE, lift=lift, environments=environments)
        proto = self.graph.proto
        self.stages = fusion.fuse(self.graph, enabled=fuse)
        self.coders = codecs.Coders(proto.components)
        self.streaming = any(t.urn == urns.TEST_STREAM for t in self.graph.transforms)
        self.unbounded = self.streaming or any(
            p.is_bounded == beam_runner_api_pb2.IsBounded.UNBOUNDED for p in proto.components.pcollections.values())
        self._described: dict = {}

    def describe(self, stage: fusion.Stage, job_id: str, endpoint: str) -> descriptors.StageDescriptor:
        key = (stage.id, job_id, endpoint)
        described = self._described.get(key)
        if described is None:
            described = descriptors.build(stage, self.graph.components, f"{job_id}{stage.id}", endpoint,
                                          by_content=True)
            if not job_id:  # job ids are unique: only the in-process runner's are worth keeping
                self._described[key] = described
        return described


_prepared: collections.OrderedDict = collections.OrderedDict()
_prepared_lock = threading.Lock()


def _prepare(proto, fuse: bool, lift: bool, environments: bool) -> _Prepared:
    """The front end's work for ``proto``, done once per distinct pipeline and options (the
    last 32 are kept): a user running the same small pipeline again and again (tests, the
    conformance suite) pays for translation, checking and fusion only once."""
    key = (hashlib.sha1(proto.SerializeToString(deterministic=True)).digest(), fuse, lift, environments)
    with _prepared_lock:
        prepared = _prepared.get(key)
        if prepared is not None:
            _prepared.move_to_end(key)
            return prepared
    prepared = _Prepared(proto, fuse, lift, environments)  # raises for unsupported pipelines
    with _prepared_lock:
        _prepared[key] = prepared
        while len(_prepared) > 32:
            _prepared.popitem(last=False)
    return prepared


def _digest(contents) -> bytes:
    """Of a side input's contents as em.side_input gives them (a list, or window -> list)."""
    h = hashlib.sha1()
    groups = [(w, contents[w]) for w in sorted(contents)] if isinstance(contents, dict) else [(b"", contents)]
    for window, elements in groups:
        h.update(len(window).to_bytes(4, "big") + window + len(elements).to_bytes(4, "big"))
        for e in elements:
            h.update(len(e).to_bytes(4, "big"))
            h.update(e)
    return h.digest()


def _deferred(stage: fusion.Stage, residual_roots) -> list[tuple[bytes, int | None, int]]:
    """Self-checkpoints (residual roots) as (element, watermark hold, resume delay) in micros.

    The hold is the least output watermark the SDK reported for the residual (its watermark
    estimator's); without one the stage's output watermark stays where it is until the work
    is done, the batch behaviour."""
    deferred = []
    for element, residual in zip(_residual_inputs(stage, residual_roots), residual_roots):
        marks = [w.seconds * 1_000_000 + w.nanos // 1000 for w in residual.application.output_watermarks.values()]
        delay = residual.requested_time_delay
        deferred.append((element, min(marks) if marks else None, delay.seconds * 1_000_000 + delay.nanos // 1000))
    return deferred


def _residual_inputs(stage: fusion.Stage, residual_roots) -> list[bytes]:
    """Residual restrictions a bundle handed back (split off or self-checkpointed), as new
    input of its stage.

    The SDK encodes a residual's element with the windowed-value coder of the input PCollection
    of the transform that deferred it, which is exactly our DATA_INPUT wire coder for that
    PCollection (descriptors.py), so the bytes are stage input as they are. Only a stage's root
    transform (process_sized_element_and_restrictions always is one) can defer work.
    """
    residuals = []
    root = stage.transforms[0]
    for residual in residual_roots:
        application = residual.application
        if application.transform_id != root.id or root.proto.inputs.get(application.input_id) != stage.inputs[0]:
            raise JobFailed(f"stage {stage.id}: residual for {application.transform_id}/{application.input_id}, "
                            f"which is not the stage's input")
        residuals.append(application.element)
    return residuals


def _engine_kind(kind: str) -> str:
    return {"sdk": manager.SDK, "flatten": manager.FLATTEN, "group": manager.GROUP,
            "impulse": manager.IMPULSE, "test_stream": manager.TEST_STREAM}[kind]
