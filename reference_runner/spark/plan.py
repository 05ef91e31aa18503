"""What Spark executors need to run a pipeline's stages, as plain picklable data.

The driver checks and fuses the pipeline with the reference runner's front end and writes one
StagePlan per stage; executors rebuild coders and SDK workers from it, once per Python worker
process (PySpark reuses its workers), never the driver's objects.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

from apache_beam.portability.api import beam_runner_api_pb2

from reference_runner.engine import grouping
from reference_runner.graph import fusion, trigger_spec, urns, windowing
from reference_runner.graph.pipeline import PipelineGraph, is_stateful
from reference_runner.worker import codecs, descriptors


@dataclass
class SideInput:
    pcoll: str
    transform_id: str
    tag: str
    multimap: bool


@dataclass
class StagePlan:
    id: str
    kind: str                            # sdk, impulse, flatten, group
    inputs: list[str]
    outputs: list[str]
    components: bytes                    # the pipeline's Components, serialized
    descriptor: bytes = b""              # sdk: the ProcessBundleDescriptor, serialized
    # sdk: its id; a digest of its content for a stateless stage, so that the same stage of a
    # later job finds the bundle processors a warm executor worker already built (tasks.py)
    descriptor_id: str = ""
    input_transform: str = ""
    output_transforms: dict = field(default_factory=dict)   # transform id -> PCollection
    side_inputs: list[SideInput] = field(default_factory=list)
    splittable: bool = False             # sdk: the stage processes splittable restrictions
    # sdk: the stateful ParDo heading the stage (its input is shuffled and sorted by key and time)
    stateful_transform: str = ""
    # flatten: how inputs with another coder are re-encoded (transcode, keys_to_bytes, keys_from_bytes)
    conversion: str = "transcode"
    redistribute: bool = False           # flatten: a Reshuffle, spread evenly over the partitions
    # group: how the GroupByKey groups
    merging: bool = False
    merge_in_sdk: bool = False           # a custom merging WindowFn: the SDK merges the windows
    timestamp_combiner: str = grouping.END_OF_WINDOW
    allowed_lateness: int = 0
    trigger: bytes = b""                 # a trigger that fires panes in batch (Runner API proto), else empty
    accumulating: bool = False


def plan(graph: PipelineGraph, stages: list[fusion.Stage], job_id: str) -> list[StagePlan]:
    """``job_id`` makes stage ids unique across jobs: Spark's Python workers outlive a job."""
    components = graph.components.SerializeToString()
    plans = []
    for stage in stages:
        p = StagePlan(f"{job_id}/{stage.id}", stage.kind, list(stage.inputs), list(stage.outputs), components)
        if stage.kind == "sdk":
            p.stateful_transform = next((t.id for t in stage.transforms if is_stateful(t)), "")
            stateless = not p.stateful_transform
            described = descriptors.build(stage, graph.components, stage.id if stateless else p.id,
                                          by_content=stateless)
            p.descriptor = described.proto.SerializeToString()
            p.descriptor_id = described.proto.id
            p.input_transform = described.input_transform
            p.output_transforms = dict(described.output_transforms)
            p.splittable = stage.transforms[0].urn in urns.STAGE_ROOTS
            for pcoll, transform_id, tag in stage.side_inputs:
                access = graph.by_id[transform_id].pardo_payload().side_inputs[tag].access_pattern.urn
                p.side_inputs.append(SideInput(pcoll, transform_id, tag, access == urns.MULTIMAP_SIDE_INPUT))
        elif stage.kind == "flatten":
            p.conversion = {urns.KEYS_TO_BYTES: "keys_to_bytes", urns.KEYS_FROM_BYTES: "keys_from_bytes"}.get(
                stage.transforms[0].urn, "transcode")
            p.redistribute = stage.transforms[0].urn == urns.RESHUFFLE
        elif stage.kind == "group":
            ws = graph.windowing_of(stage.inputs[0])
            p.merge_in_sdk = windowing.merged_in_sdk(ws)
            p.merging = windowing.merging(ws)
            p.timestamp_combiner = windowing.timestamp_combiner(ws)
            p.allowed_lateness = ws.allowed_lateness * 1000
            if trigger_spec.fires_panes_in_batch(ws.trigger):
                p.trigger = ws.trigger.SerializeToString()
                p.accumulating = ws.accumulation_mode == beam_runner_api_pb2.AccumulationMode.ACCUMULATING
        plans.append(p)
    return plans


@functools.lru_cache(maxsize=64)
def coders_of(components: bytes) -> codecs.Coders:
    """Coders rebuilt from serialized components, once per process and pipeline."""
    return codecs.Coders(beam_runner_api_pb2.Components.FromString(components))
