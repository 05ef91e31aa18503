"""The front end's answer: a submitted pipeline -> a Plan, the stages a backend runs and every
fact it needs to run them.

``build_plan`` normalizes and checks the pipeline (graph/front_end.py: one list of passes, one
capability check, both following the backend's Profile), fuses it (graph/fusion.py) and derives,
once, what each stage needs at run time: its kind, its descriptor, its side inputs and how they
are read, how a GroupByKey groups, how a Flatten converts, the stateful ParDo heading a keyed
stage. The in-process executor, the Spark backend and the job server's Prepare all start here.

A PlannedStage is plain, picklable data (protos travel serialized): Spark ships it to its
executors as it is.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import threading
from dataclasses import dataclass, field

from apache_beam.portability.api import beam_runner_api_pb2

from reference_runner.engine import triggers
from reference_runner.engine.spec import StageKind
from reference_runner.graph import descriptors, front_end, fusion, recode, sdf, sdks, trigger_spec, urns, windowing
from reference_runner.graph.pipeline import PipelineGraph, is_stateful


@dataclass(frozen=True)
class SideInput:
    pcoll: str
    transform_id: str  # the ParDo reading it ...
    tag: str  # ... under this tag
    multimap: bool  # access pattern: multimap (else iterable)
    globally_windowed: bool
    # readers see each window's latest pane (streaming, or in batch a producer that fires
    # several panes per window); otherwise the whole PCollection once its producer finished
    by_pane: bool
    # read by pane, are the panes its elements carry its own, fired under its windowing strategy
    # (_own_panes)? If not, they are ignored: each side window shows all its elements and is
    # ready only once the side watermark has passed it.
    own_panes: bool
    # the SDK's function from a main window to the side window read (SideInput.window_mapping_fn,
    # a serialized FunctionSpec): what the runner asks the SDK to map with, for a WindowFn it
    # does not know (runtime/sidewindows.py)
    window_mapping_fn: bytes = b""


@dataclass(frozen=True)
class GroupSpec:
    """How a GroupByKey groups, as plain data (engine/grouping.py builds its Grouping from it)."""

    merging: bool  # merging windows (sessions, or a custom merging WindowFn)
    merge_in_sdk: bool  # a custom merging WindowFn: the SDK merges the windows
    timestamp_combiner: str
    allowed_lateness: int  # micros
    trigger: triggers.Trigger | None  # the trigger to run (engine/triggers.py); None: one pane per window at its end
    accumulating: bool
    empty_on_time: bool = True  # the on-time pane is emitted even when empty (OnTimeBehavior)
    empty_final: bool = True  # the final pane is emitted even when empty (ClosingBehavior)


@dataclass
class Descriptor:
    """A fused stage's ProcessBundleDescriptor, serialized, before a backend names it and points it
    at its Fn API endpoint (``instantiate``)."""

    proto: bytes
    input_transform: str
    output_transforms: dict[str, str]  # transform id -> PCollection it carries to the runner

    # The last few instances, shared read-only: a pipeline run again and again in one process
    # (tests, the suite) names its descriptors the same way every time. Not pickled.
    _instances: dict = field(default_factory=dict, repr=False, compare=False)

    def instantiate(
        self, descriptor_id: str, endpoint: str = descriptors.EMBEDDED_ENDPOINT, by_content: bool = False
    ) -> descriptors.StageDescriptor:
        key = (descriptor_id, endpoint, by_content)
        instance = self._instances.get(key)
        if instance is None:
            instance = descriptors.instantiate(
                self.proto, self.input_transform, self.output_transforms, descriptor_id, endpoint, by_content
            )
            if len(self._instances) >= 4:
                self._instances.pop(next(iter(self._instances)))
            self._instances[key] = instance
        return instance

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_instances": {}}


@dataclass
class PlannedStage:
    id: str
    kind: StageKind
    inputs: list[str]
    outputs: list[str]
    transforms: list[str]  # transform ids, in order
    side_inputs: list[SideInput] = field(default_factory=list)
    # SDK stages
    descriptor: Descriptor | None = None
    splittable: bool = False  # it processes splittable restrictions
    truncation: Descriptor | None = None  # splittable: its residuals' truncation, for drain
    keyed_head: str = ""  # the stateful ParDo heading it: input keyed, state and timers
    # every output is a lifted combine's partial accumulators (combine_per_key_precombine): as
    # many as its bundles' distinct keys, however many elements come in
    precombined: bool = False
    # GroupByKey
    group: GroupSpec | None = None
    # Flatten: how an input with another coder is re-encoded (transcode, keys_to_bytes, keys_from_bytes)
    conversion: str = "transcode"
    converted: list[str] = field(default_factory=list)  # the inputs it re-encodes (graph/recode.py)
    redistribute: bool = False  # a Reshuffle (backends that run it themselves)
    test_stream: str = ""  # TestStream: its transform id
    events_nested: bool = False  # TestStream: its events are encoded in the nested context (graph/sdks.py)

    @property
    def side_pcolls(self) -> list[str]:
        return sorted({s.pcoll for s in self.side_inputs})


@dataclass
class Plan:
    graph: PipelineGraph  # the normalized pipeline (the driver's; not shipped)
    stages: list[PlannedStage]
    profile: front_end.Profile
    # TestStreams feed it: input arrives over time, so triggers run, side inputs are read per
    # window as they grow and keyed state expires per window (the engine's behaviour follows)
    test_stream_driven: bool
    unbounded: bool  # may run until drained or cancelled

    @property
    def components(self) -> beam_runner_api_pb2.Components:
        return self.graph.components

    def with_environments(self, environments) -> Plan:
        """This Plan with the pipeline's environments as given (the job server's artifact staging
        rewrites their dependencies after the Plan was made); everything else is shared."""
        if all(self.components.environments.get(k) == env for k, env in environments.items()):
            return self
        proto = beam_runner_api_pb2.Pipeline()
        proto.CopyFrom(self.graph.proto)
        for env_id, env in environments.items():
            proto.components.environments[env_id].CopyFrom(env)
        return dataclasses.replace(self, graph=PipelineGraph(proto))


_CONVERSIONS = {urns.KEYS_TO_BYTES: "keys_to_bytes", urns.KEYS_FROM_BYTES: "keys_from_bytes"}


def build_plan(
    proto: beam_runner_api_pb2.Pipeline,
    profile: front_end.Profile,
    fuse: bool = True,
    lift: bool = True,
    environments: bool = False,
) -> Plan:
    """The Plan of ``proto`` for a backend of ``profile``; UnsupportedPipeline names every problem.
    The same pipeline and options give the same (shared, read-only) Plan: the last 32 are kept, so
    a user running one small pipeline again and again pays for the front end once."""
    key = (hashlib.sha1(proto.SerializeToString(deterministic=True)).digest(), profile, fuse, lift, environments)
    with _lock:
        plan = _plans.get(key)
        if plan is not None:
            _plans.move_to_end(key)
            return plan
    plan = _plan(front_end.checked_graph(proto, profile, lift=lift, environments=environments), profile, fuse)
    with _lock:
        _plans[key] = plan
        while len(_plans) > 32:
            _plans.popitem(last=False)
    return plan


_plans: collections.OrderedDict = collections.OrderedDict()
_lock = threading.Lock()


def _plan(graph: PipelineGraph, profile: front_end.Profile, fuse: bool) -> Plan:
    test_stream_driven = any(t.urn == urns.TEST_STREAM for t in graph.transforms)
    unbounded = test_stream_driven or any(
        p.is_bounded == beam_runner_api_pb2.IsBounded.UNBOUNDED for p in graph.components.pcollections.values()
    )
    stages = [_stage(graph, s, test_stream_driven) for s in fusion.fuse(graph, enabled=fuse)]
    return Plan(graph, stages, profile, test_stream_driven, unbounded)


def _stage(graph: PipelineGraph, stage: fusion.FusedStage, test_stream_driven: bool) -> PlannedStage:
    planned = PlannedStage(
        stage.id, stage.kind, list(stage.inputs), list(stage.outputs), [t.id for t in stage.transforms]
    )
    head = stage.transforms[0]
    if planned.kind == StageKind.SDK:
        planned.descriptor = _descriptor(stage, graph.components)
        planned.splittable = head.urn in urns.STAGE_ROOTS
        if head.urn == urns.SDF_PROCESS_SIZED:
            planned.truncation = _descriptor(*sdf.truncation_stage(stage, graph.components))
        planned.keyed_head = next((t.id for t in stage.transforms if is_stateful(t)), "")
        producers = {pcoll: t.urn for t in stage.transforms for pcoll in t.outputs()}
        planned.precombined = bool(stage.outputs) and all(
            producers.get(pcoll) == urns.COMBINE_PRECOMBINE for pcoll in stage.outputs
        )
        planned.side_inputs = [
            _side_input(graph, pcoll, transform_id, tag, test_stream_driven)
            for pcoll, transform_id, tag in stage.side_inputs
        ]
    elif planned.kind == StageKind.GROUP:
        planned.group = _group(graph.windowing_of(stage.inputs[0]), test_stream_driven)
    elif planned.kind == StageKind.FLATTEN:
        planned.conversion = _CONVERSIONS.get(head.urn, "transcode")
        [out] = stage.outputs
        coder_of = {p: graph.components.pcollections[p].coder_id for p in [*stage.inputs, out]}
        rekeys = planned.conversion != "transcode"  # changes every element, whatever the coders
        planned.converted = [
            p for p in stage.inputs if rekeys or not recode.same_encoding(graph.components, coder_of[p], coder_of[out])
        ]
        planned.redistribute = head.urn == urns.RESHUFFLE
    elif planned.kind == StageKind.TEST_STREAM:
        planned.test_stream = head.id
        planned.events_nested = sdks.test_stream_events_nested(graph.components, head.proto)
    return planned


def _descriptor(stage: fusion.FusedStage, components) -> Descriptor:
    built = descriptors.build(stage, components, stage.id, descriptors.ENDPOINT_PLACEHOLDER)
    return Descriptor(built.proto.SerializeToString(), built.input_transform, dict(built.output_transforms))


def _side_input(graph: PipelineGraph, pcoll: str, transform_id: str, tag: str, test_stream_driven: bool) -> SideInput:
    payload = graph.by_id[transform_id].pardo_payload()
    assert payload is not None, f"{transform_id} reads side inputs, so it is a ParDo"
    side = payload.side_inputs[tag]
    access = side.access_pattern.urn
    ws = graph.windowing_of(pcoll)
    return SideInput(
        pcoll,
        transform_id,
        tag,
        multimap=access == urns.MULTIMAP_SIDE_INPUT,
        globally_windowed=ws.window_fn.urn == urns.GLOBAL_WINDOWS,
        by_pane=test_stream_driven or trigger_spec.fires_panes_in_batch(ws.trigger),
        own_panes=_own_panes(graph, pcoll),
        window_mapping_fn=side.window_mapping_fn.SerializeToString(deterministic=True),
    )


def _own_panes(graph: PipelineGraph, pcoll: str) -> bool:
    """Were the panes the elements of ``pcoll`` carry fired under its own windowing strategy? A
    GroupByKey fires them; the steps after it keep them (a ParDo's outputs; the Java and Go SDKs'
    WindowInto too, Python's resets them). Where the windowing changes on the way (a WindowInto
    between the GroupByKey and ``pcoll``), they number firings of windows ``pcoll`` does not have,
    so they say nothing of its windows: Go's passert re-windows a triggered result into the
    global window and reads it as a side input."""
    own = graph.windowing_of(pcoll)
    todo, seen = [pcoll], set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        if graph.windowing_of(p) != own:
            return False
        producer = graph.by_id.get(graph.producer.get(p, ""))
        if producer is not None and producer.urn != urns.GROUP_BY_KEY:
            todo += producer.main_inputs()
    return True


def _group(ws: beam_runner_api_pb2.WindowingStrategy, test_stream_driven: bool) -> GroupSpec:
    # batch: the default trigger and Always fire one pane per window at its end (the engine's
    # untriggered buffer); anything else runs as the trigger says, as in streaming
    runs_trigger = test_stream_driven or trigger_spec.fires_panes_in_batch(ws.trigger)
    return GroupSpec(
        merging=windowing.merging(ws),
        merge_in_sdk=windowing.merged_in_sdk(ws),
        timestamp_combiner=windowing.timestamp_combiner(ws),
        allowed_lateness=ws.allowed_lateness * 1000,
        trigger=trigger_spec.from_proto(ws.trigger) if runs_trigger else None,
        accumulating=ws.accumulation_mode == beam_runner_api_pb2.AccumulationMode.ACCUMULATING,
        empty_on_time=windowing.empty_on_time_pane(ws),
        empty_final=windowing.empty_final_pane(ws),
    )
