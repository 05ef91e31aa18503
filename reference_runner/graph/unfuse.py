"""Pipelines the SDK fused before submitting: executable stages back into their transforms.

With ``--experiments=pre_optimize=all`` Beam's Python SDK fuses the pipeline itself and submits
beam:runner:executable_stage:v1 transforms, each carrying its transforms (ids local to the
stage, e.g. transform_0) and the components they use (PCollections inside the stage exist only
there). The runner fuses by its own rules (graph/fusion.py), so each stage becomes a composite
again: its transforms join the pipeline under ids prefixed by the stage's, and the stage's
components join the pipeline's (their ids are the pipeline's own, so they agree).
"""

from __future__ import annotations

from apache_beam.portability.api import beam_runner_api_pb2

from reference_runner.graph import copy_on_write, urns

_COMPONENT_KINDS = ("pcollections", "coders", "windowing_strategies", "environments")


def expand_executable_stages(proto: beam_runner_api_pb2.Pipeline) -> beam_runner_api_pb2.Pipeline:
    """A copy of ``proto`` without executable stages (the input is not changed)."""
    stages = [tid for tid, t in proto.components.transforms.items() if t.spec.urn == urns.EXECUTABLE_STAGE]
    return copy_on_write.edit_each(proto, stages, _expand)


def _expand(proto: beam_runner_api_pb2.Pipeline, stage_id: str) -> None:
    components = proto.components
    stage = components.transforms[stage_id]
    payload = beam_runner_api_pb2.ExecutableStagePayload.FromString(stage.spec.payload)
    inner = payload.components
    for kind in _COMPONENT_KINDS:
        mine = getattr(components, kind)
        for key, value in getattr(inner, kind).items():
            if key not in mine:
                mine[key].CopyFrom(value)
    del stage.subtransforms[:]
    for local_id in payload.transforms:
        transform_id = f"{stage_id}/{local_id}"
        transform = components.transforms[transform_id]
        transform.CopyFrom(inner.transforms[local_id])
        del transform.subtransforms[:]
        stage.subtransforms.append(transform_id)
    stage.spec.Clear()  # a composite now: the graph finds its transforms as leaves
