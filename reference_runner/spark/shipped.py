"""A Plan's stages as Spark's executors get them: picklable, named uniquely across jobs.

The driver prepares the pipeline with the shared front end (graph/plan.py) and wraps each
PlannedStage with the pipeline's serialized components and where its user code runs;
executors rebuild coders, descriptors (pointed at their own Fn API server when the user code
runs on the environment's workers) and SDK workers from that, once per Python worker process
(PySpark reuses its workers) or per task, never the driver's objects.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from apache_beam.portability.api import beam_runner_api_pb2

from reference_runner.engine.spec import StageKind
from reference_runner.graph import subset
from reference_runner.graph.descriptors import StageDescriptor
from reference_runner.graph.plan import Plan, PlannedStage
from reference_runner.spark.user_code import EMBEDDED_CODE, UserCode
from reference_runner.worker import codecs

PRECOMBINED_BUNDLES = 100


@dataclass
class ShippedStage:
    id: str  # the stage's id prefixed with the job's: Python workers outlive a job
    job_group: str  # the run's Spark job group (spark/spark_backend.py): names the run on the executors
    stage: PlannedStage  # every fact about the stage (kind, inputs, side inputs, grouping ...)
    components: bytes  # the pipeline's Components, serialized
    test_stream_driven: bool = False  # the pipeline has TestStreams (Plan.test_stream_driven)
    user_code: UserCode = EMBEDDED_CODE  # where its user code runs (the embedded harness, or the environment's workers)
    failures: str = ""  # the driver's failure inbox, told of a deterministic bundle failure (failure_inbox.py)

    def described(self, endpoint: str) -> StageDescriptor:
        """The SDK stage's descriptor, its data and state ports naming ``endpoint`` (the Fn API
        server its worker talks to; "embedded" in process)."""
        assert self.stage.descriptor is not None
        stateless = not self.stage.keyed_head  # named by content: warm workers reuse its processors
        named = self.stage.id if stateless else self.id
        return self.stage.descriptor.instantiate(named, endpoint, by_content=stateless)

    def bundle_size(self, bundle_size: int) -> int:
        """Elements per bundle of this stage, given --spark_bundle_size. A stage whose outputs are
        a lifted combine's partial accumulators emits one per key of each bundle: with bundles of
        1000 elements a word count shuffled 25 times what a hand-written reduceByKey does, and the
        key-by-key work on both sides of the shuffle was most of the runner's cost. Its bundles are
        PRECOMBINED_BUNDLES times larger (its output is bounded by its distinct keys, not its input)."""
        return bundle_size * PRECOMBINED_BUNDLES if self.stage.precombined else bundle_size

    @property
    def kind(self) -> StageKind:
        return self.stage.kind

    @property
    def inputs(self) -> list[str]:
        return self.stage.inputs

    @property
    def outputs(self) -> list[str]:
        return self.stage.outputs


def stage_plans(
    prepared: Plan, job_group: str, user_code: UserCode = EMBEDDED_CODE, failures: str = ""
) -> list[ShippedStage]:
    return [
        ShippedStage(
            f"{job_group}/{s.id}",
            job_group,
            s,
            _components(prepared, s),
            prepared.test_stream_driven,
            user_code,
            failures,
        )
        for s in prepared.stages
    ]


def _components(prepared: Plan, stage: PlannedStage) -> bytes:
    """What of the pipeline's Components the stage's tasks read: each Spark stage's command
    pickles its ShippedStages, so with the whole pipeline's every stage would grow with it."""
    components = prepared.components
    transforms = {t: components.transforms[t] for t in stage.transforms if t in components.transforms}
    pcollections = [*stage.inputs, *stage.outputs, *(side.pcoll for side in stage.side_inputs)]
    return subset.needed(components, transforms, pcollections).SerializeToString(deterministic=True)


@functools.lru_cache(maxsize=256)
def coders_of(components: bytes) -> codecs.Coders:
    """Coders rebuilt from serialized components, once per process and stage."""
    return codecs.Coders(beam_runner_api_pb2.Components.FromString(components))


class ShippedStageCache:
    """What a Python worker rebuilds from a stage's plan, kept for the ``size`` stages it used
    last: PySpark reuses its workers across jobs, and stage ids carry their job's, so an
    unbounded cache would grow with every job a long-lived cluster runs."""

    def __init__(self, build: Callable[[ShippedStage], object], size: int = 64):
        self._build, self._size = build, size
        self._kept: OrderedDict[str, object] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, plan: ShippedStage):
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
