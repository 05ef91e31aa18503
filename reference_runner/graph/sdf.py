"""Splittable DoFn expansion: a ParDo with a restriction coder -> the SDK's three SDF parts.

    element -> pair_with_restriction -> KV(element, KV(restriction, watermark estimator state))
            -> split_and_size_restrictions -> KV(that, size as a double)
            -> process_sized_element_and_restrictions -> the ParDo's own outputs

The ParDo becomes a composite whose subtransforms are the three parts, so PipelineGraph
finds them as leaves. process_sized_element_and_restrictions always starts a stage of its
own (see fusion): its input then arrives from the runner, which can reschedule residual
restrictions (self-checkpoints) as new input of that stage.
"""

from __future__ import annotations

from apache_beam.portability.api import beam_runner_api_pb2

from reference_runner.engine.spec import StageKind
from reference_runner.graph import copy_on_write, urns


def expand(proto: beam_runner_api_pb2.Pipeline) -> beam_runner_api_pb2.Pipeline:
    """A copy of ``proto`` with every splittable ParDo expanded (the input is not changed)."""
    splittable = [tid for tid, t in proto.components.transforms.items() if _is_splittable(t)]
    return copy_on_write.edit_each(proto, splittable, _expand_one)


def _is_splittable(t: beam_runner_api_pb2.PTransform) -> bool:
    if t.spec.urn != urns.PAR_DO or t.subtransforms:
        return False
    return bool(beam_runner_api_pb2.ParDoPayload.FromString(t.spec.payload).restriction_coder_id)


def _expand_one(proto: beam_runner_api_pb2.Pipeline, tid: str) -> None:
    components = proto.components
    sdf = components.transforms[tid]
    payload = beam_runner_api_pb2.ParDoPayload.FromString(sdf.spec.payload)
    side_tags = set(payload.side_inputs)
    [(main_tag, main)] = [(tag, p) for tag, p in sdf.inputs.items() if tag not in side_tags]
    main_pcoll = components.pcollections[main]

    paired_coder = _add_coder(
        components, f"{tid}/paired", urns.KV_CODER, [main_pcoll.coder_id, payload.restriction_coder_id]
    )
    double_coder = _add_coder(components, "reference/double", urns.DOUBLE_CODER, [])
    sized_coder = _add_coder(components, f"{tid}/sized", urns.KV_CODER, [paired_coder, double_coder])
    paired = _add_pcollection(components, f"{tid}/paired", main_pcoll, paired_coder)
    sized = _add_pcollection(components, f"{tid}/sized", main_pcoll, sized_coder)

    side = {tag: p for tag, p in sdf.inputs.items() if tag in side_tags}
    parts = [
        (urns.SDF_PAIR_WITH_RESTRICTION, "PairWithRestriction", main, {"out": paired}),
        (urns.SDF_SPLIT_AND_SIZE, "SplitAndSizeRestrictions", paired, {"out": sized}),
        (urns.SDF_PROCESS_SIZED, "Process", sized, dict(sdf.outputs)),
    ]
    sub_ids = []
    for urn, name, input_pcoll, outputs in parts:
        sub_id = f"{tid}/{name}"
        sub = components.transforms[sub_id]
        sub.unique_name = f"{sdf.unique_name}/{name}"
        sub.spec.urn = urn
        # Every part gets the whole ParDoPayload: the SDK builds each part's DoFn from it,
        # and side inputs named there must be inputs of the part.
        sub.spec.payload = sdf.spec.payload
        sub.environment_id = sdf.environment_id
        sub.inputs[main_tag] = input_pcoll
        for tag, p in side.items():
            sub.inputs[tag] = p
        for tag, p in outputs.items():
            sub.outputs[tag] = p
        sub_ids.append(sub_id)
    # The ParDo stays as a composite over its parts (same inputs and outputs, no spec of its own).
    sdf.subtransforms.extend(sub_ids)


def _add_coder(components, coder_id: str, urn: str, parts: list[str]) -> str:
    if coder_id not in components.coders:
        coder = components.coders[coder_id]
        coder.spec.urn = urn
        coder.component_coder_ids.extend(parts)
    return coder_id


def _add_pcollection(components, pcoll_id: str, like: beam_runner_api_pb2.PCollection, coder_id: str) -> str:
    pcoll = components.pcollections[pcoll_id]
    pcoll.unique_name = pcoll_id
    pcoll.coder_id = coder_id
    pcoll.windowing_strategy_id = like.windowing_strategy_id
    pcoll.is_bounded = like.is_bounded
    return pcoll_id


def truncation_stage(stage, components: beam_runner_api_pb2.Components):
    """Drain: a stage of its own that runs an SDF's residuals (sized restrictions, the input of
    its process_sized_element_and_restrictions stage ``stage``) through the SDK's truncate
    (sdf_truncate_sized_restrictions), which hands back finite restrictions of the same shape,
    or nothing. Built on demand, outside the pipeline's graph: only a draining job needs it.
    Returns (the fusion.Stage, the components it refers to)."""
    from reference_runner.graph.fusion import Stage
    from reference_runner.graph.pipeline import Transform

    root = stage.transforms[0]
    [main] = stage.inputs
    extended = beam_runner_api_pb2.Components()
    extended.CopyFrom(components)
    truncated = _add_pcollection(
        extended, f"{root.id}/truncated", components.pcollections[main], components.pcollections[main].coder_id
    )
    proto = beam_runner_api_pb2.PTransform()
    proto.CopyFrom(root.proto)
    proto.spec.urn = urns.SDF_TRUNCATE_SIZED
    proto.unique_name = f"{root.proto.unique_name}/Truncate"
    proto.outputs.clear()
    proto.outputs["out"] = truncated
    # Same transform id as the process part: its side inputs are found under the same names.
    side_inputs = [s for s in stage.side_inputs if s[1] == root.id]
    return Stage(
        f"{stage.id}/truncate", StageKind.SDK, [Transform(root.id, proto)], [main], side_inputs, [truncated]
    ), extended
