"""A Plan's stages as Spark's executors get them: picklable, named uniquely across jobs.

The driver prepares the pipeline with the shared front end (graph/plan.py) and wraps each
PlannedStage with the pipeline's serialized components and its stage's instantiated descriptor;
executors rebuild coders and SDK workers from that, once per Python worker process (PySpark
reuses its workers), never the driver's objects.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from apache_beam.portability.api import beam_runner_api_pb2

from reference_runner.graph.plan import Plan, PlannedStage, StageKind
from reference_runner.worker import codecs


@dataclass
class StagePlan:
    id: str  # the stage's id prefixed with the job's: Python workers outlive a job
    stage: PlannedStage  # every fact about the stage (kind, inputs, side inputs, grouping ...)
    components: bytes  # the pipeline's Components, serialized
    descriptor: bytes = b""  # SDK stage: its ProcessBundleDescriptor, serialized ...
    descriptor_id: str = ""  # ... and its id: a digest of its content for a stateless stage, so that
    # the same stage of a later job finds the bundle processors a warm executor worker already built
    streaming: bool = False  # the pipeline has TestStreams (the engine's streaming behaviour)

    @property
    def kind(self) -> StageKind:
        return self.stage.kind

    @property
    def inputs(self) -> list[str]:
        return self.stage.inputs

    @property
    def outputs(self) -> list[str]:
        return self.stage.outputs


def plan(prepared: Plan, job_id: str) -> list[StagePlan]:
    components = prepared.components.SerializeToString()
    plans = []
    for stage in prepared.stages:
        p = StagePlan(f"{job_id}/{stage.id}", stage, components, streaming=prepared.streaming)
        if stage.descriptor is not None:
            stateless = not stage.keyed_head
            described = stage.descriptor.instantiate(stage.id if stateless else p.id, by_content=stateless)
            p.descriptor, p.descriptor_id = described.proto.SerializeToString(), described.proto.id
        plans.append(p)
    return plans


@functools.lru_cache(maxsize=64)
def coders_of(components: bytes) -> codecs.Coders:
    """Coders rebuilt from serialized components, once per process and pipeline."""
    return codecs.Coders(beam_runner_api_pb2.Components.FromString(components))


class PerStage:
    """What a Python worker rebuilds from a stage's plan, kept for the ``size`` stages it used
    last: PySpark reuses its workers across jobs, and stage ids carry their job's, so an
    unbounded cache would grow with every job a long-lived cluster runs."""

    def __init__(self, build: Callable[[StagePlan], object], size: int = 64):
        self._build, self._size = build, size
        self._kept: OrderedDict[str, object] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, plan: StagePlan):
        with self._lock:
            value = self._kept.get(plan.id)
            if value is not None:
                self._kept.move_to_end(plan.id)
                return value
        value = self._build(plan)
        with self._lock:
            self._kept[plan.id] = value
            while len(self._kept) > self._size:
                self._kept.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._kept)
