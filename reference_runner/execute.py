"""The job executor: pipeline proto -> checked, fused stages -> engine <-> SDK worker, bundle by bundle."""
from __future__ import annotations

import logging

from apache_beam.portability.api import beam_runner_api_pb2
from apache_beam.transforms import window as beam_window
from apache_beam.utils import windowed_value

from reference_runner.engine import grouping, manager
from reference_runner.graph import check, fusion, lifting, sdf, urns
from reference_runner.graph.pipeline import PipelineGraph
from reference_runner.worker import codecs, descriptors, merging
from reference_runner.worker.embedded import BundleFailed, EmbeddedWorker
from reference_runner.worker.state import SideInputIndex, StateService

_LOG = logging.getLogger(__name__)

_COMBINERS = {beam_runner_api_pb2.OutputTime.END_OF_WINDOW: grouping.END_OF_WINDOW,
              beam_runner_api_pb2.OutputTime.EARLIEST_IN_PANE: grouping.EARLIEST,
              beam_runner_api_pb2.OutputTime.LATEST_IN_PANE: grouping.LATEST}


class JobFailed(RuntimeError):
    pass


class Job:
    """One pipeline run on the embedded SDK worker."""

    def __init__(self, proto: beam_runner_api_pb2.Pipeline, fuse: bool = True, lift: bool = True):
        proto = sdf.expand(lifting.lift(proto) if lift else proto)
        self.graph = PipelineGraph(proto)
        check.check(self.graph)
        self.stages = fusion.fuse(self.graph, enabled=fuse)
        self.coders = codecs.Coders(proto.components)
        self.state = StateService()
        self.monitoring_infos: list = []

    def run(self) -> None:
        worker = EmbeddedWorker(self.state)
        try:
            self._run(worker)
        finally:
            worker.stop()

    def _run(self, worker: EmbeddedWorker) -> None:
        specs, described = [], {}
        for stage in self.stages:
            specs.append(manager.StageSpec(stage.id, _engine_kind(stage.kind), list(stage.inputs),
                                           list(stage.outputs), sorted({p for p, _, _ in stage.side_inputs}),
                                           self._grouping(stage, worker) if stage.kind == "group" else None,
                                           self._conversions(stage) if stage.kind == "flatten" else {}))
            if stage.kind == "sdk":
                described[stage.id] = descriptors.build(stage, self.graph.components)
                worker.register(described[stage.id].proto)
        em = manager.ElementManager(specs)
        em.start({p: [self._impulse_element(p)] for s in self.stages if s.kind == "impulse" for p in s.outputs})
        by_id = {s.id: s for s in self.stages}
        while True:
            bundle = em.next_bundle()
            if bundle is None:
                if em.done():
                    return
                raise JobFailed(em.describe_stuck())
            stage = by_id[bundle.stage]
            self._materialize_side_inputs(stage, em)
            described_stage = described[stage.id]
            instruction_id = f"{bundle.id}-attempt{bundle.attempt}"
            try:
                raw, response = worker.process_bundle(stage.id, described_stage.input_transform,
                                                      b"".join(bundle.inputs), instruction_id)
            except BundleFailed as e:
                raise JobFailed(f"bundle {bundle.id} of stage {stage.id} failed: {e}") from None
            outputs = {}
            for transform_id, pcoll in described_stage.output_transforms.items():
                impl = self.coders.windowed(pcoll).get_impl()
                outputs[pcoll] = codecs.split_elements(impl, bytes(raw.get(transform_id, b"")))
            self.monitoring_infos.extend(self._with_step_names(response.monitoring_infos))
            em.commit(bundle, outputs, _residual_inputs(stage, response))
            if response.requires_finalization:  # only a committed bundle is finalized
                try:
                    worker.finalize_bundle(instruction_id)
                except BundleFailed as e:
                    raise JobFailed(f"finalizing bundle {bundle.id} of stage {stage.id} failed: {e}") from None

    def _with_step_names(self, infos) -> list:
        """Metrics name their step by the transform's unique name, as users wrote it."""
        labelled = []
        for info in infos:
            transform_id = info.labels.get("PTRANSFORM")
            if transform_id in self.graph.by_id:
                info = type(info).FromString(info.SerializeToString())
                info.labels["PTRANSFORM"] = self.graph.by_id[transform_id].name
            labelled.append(info)
        return labelled

    def _materialize_side_inputs(self, stage: fusion.Stage, em: manager.ElementManager) -> None:
        for pcoll, transform_id, tag in stage.side_inputs:
            if (transform_id, tag) in self.state.side_inputs:
                continue
            payload = self.graph.by_id[transform_id].pardo_payload()
            multimap = payload.side_inputs[tag].access_pattern.urn == urns.MULTIMAP_SIDE_INPUT
            self.state.side_inputs[(transform_id, tag)] = SideInputIndex(
                em.materialized.get(pcoll, []), self.coders, pcoll, multimap)

    def _grouping(self, stage: fusion.Stage, worker: EmbeddedWorker) -> grouping.Grouping:
        [main] = stage.inputs
        [out] = stage.outputs
        ws = self.graph.windowing_of(main)
        custom_merging = ws.merge_status == beam_runner_api_pb2.MergeStatus.NEEDS_MERGE \
            and ws.window_fn.urn != urns.SESSION_WINDOWS
        return grouping.Grouping(
            codecs.GroupCodec(self.coders.windowed(main), self.coders.windowed(out)),
            merging=ws.window_fn.urn == urns.SESSION_WINDOWS or custom_merging,
            merge_fn=merging.WindowMerger(worker, f"{stage.id}/merge_windows", ws, self.graph.components,
                                          self.coders.window_coder(main)) if custom_merging else None,
            timestamp_combiner=_COMBINERS.get(ws.output_time, grouping.END_OF_WINDOW),
            allowed_lateness=ws.allowed_lateness * 1000)

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


def _residual_inputs(stage: fusion.Stage, response) -> list[bytes]:
    """Residual restrictions a bundle handed back (self-checkpoints), as new input of its stage.

    The SDK encodes a residual's element with the windowed-value coder of the input PCollection
    of the transform that deferred it, which is exactly our DATA_INPUT wire coder for that
    PCollection (descriptors.py), so the bytes are stage input as they are. Only a stage's root
    transform (process_sized_element_and_restrictions always is one) can defer work. In batch a
    residual's output watermark needs no hold of its own: the stage stays busy while it is
    pending, which holds the stage's watermark; requested resume delays are ignored because
    nothing else can happen while we wait.
    """
    residuals = []
    root = stage.transforms[0]
    for residual in response.residual_roots:
        application = residual.application
        if application.transform_id != root.id or root.proto.inputs.get(application.input_id) != stage.inputs[0]:
            raise JobFailed(f"stage {stage.id}: residual for {application.transform_id}/{application.input_id}, "
                            f"which is not the stage's input")
        residuals.append(application.element)
    return residuals


def _engine_kind(kind: str) -> str:
    return {"sdk": manager.SDK, "flatten": manager.FLATTEN, "group": manager.GROUP,
            "impulse": manager.IMPULSE}[kind]
