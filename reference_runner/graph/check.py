"""Reject what the runner cannot run, up front, naming every reason at once."""

from __future__ import annotations

from apache_beam.portability.api import beam_runner_api_pb2

from reference_runner.graph import python_coders, recode, sdks, trigger_spec, urns, windowing
from reference_runner.graph.pipeline import PipelineGraph, is_stateful, test_stream_output


class UnsupportedPipeline(ValueError):
    """The pipeline uses features this runner does not implement (all of them are listed)."""

    def __init__(self, problems: list[str], backend: str = "the reference runner"):
        self.problems = problems
        super().__init__(f"{backend} cannot run this pipeline:\n" + "\n".join(f"  - {p}" for p in problems))


def check(graph: PipelineGraph, environments: bool = True, backend: str = "the reference runner") -> None:
    """``environments``: judge the environments too (the in-process runner embeds them all).
    ``backend``: how the error names the runner refusing the pipeline."""
    problems: list[str] = []
    for requirement in graph.proto.requirements:
        if requirement not in urns.SUPPORTED_REQUIREMENTS:
            problems.append(f"requirement {requirement}")
    for t in graph.transforms:
        problems += _transform_problems(graph, t)
        if environments:
            problems += _foreign_function_problems(graph, t) + _foreign_merge_problems(graph, t)
    for env_id, env in graph.components.environments.items() if environments else ():
        if env.urn not in urns.EMBEDDABLE_ENVIRONMENTS:
            problems.append(f"environment {env_id}: {env.urn}")
    if problems:
        raise UnsupportedPipeline(list(dict.fromkeys(problems)), backend)


def _user_function(t) -> str | None:
    """The URN of a transform's DoFn or CombineFn, None if it has neither."""
    return sdks.user_function(t.proto)


def _foreign_function_problems(graph: PipelineGraph, t) -> list[str]:
    """A backend that embeds the user's code runs it in a Python SDK harness: a DoFn or CombineFn
    of another SDK (Java, Go, TypeScript) cannot run there. Named with the SDK its environment
    declares (its sdk_base capability), when it declares one."""
    fn = _user_function(t)
    if fn is None or fn in urns.PYTHON_USER_FUNCTIONS:
        return []
    env = graph.components.environments.get(t.proto.environment_id)
    sdk = next((c for c in env.capabilities if c.startswith(urns.SDK_BASE_CAPABILITY)), "") if env else ""
    return [
        f"transform '{t.name}': user code of another SDK ({fn}{', ' + sdk if sdk else ''}); this backend runs "
        "user code only in its embedded Python SDK harness (the reference runner's job server runs every SDK)"
    ]


def _foreign_merge_problems(graph: PipelineGraph, t) -> list[str]:
    """A merging WindowFn the runner does not know is merged by the SDK (graph/windowing.py): an
    embedded Python SDK harness merges only Python's."""
    if t.urn != urns.GROUP_BY_KEY:
        return []
    ws = graph.windowing_of(t.main_inputs()[0])
    if not windowing.merged_in_sdk(ws) or ws.window_fn.urn == urns.PICKLED_PYTHON_WINDOW_FN:
        return []
    return [
        f"transform '{t.name}': a merging WindowFn of another SDK ({ws.window_fn.urn}), which that SDK must merge "
        f"({urns.MERGE_WINDOWS}); this backend runs user code only in its embedded Python SDK harness"
    ]


def _transcode_problems(graph: PipelineGraph, t, where: str) -> list[str]:
    """Where the runner cannot re-encode elements itself, an SDK transform does
    (graph/transcode.py): Python's identity DoFn, or a Flatten in another SDK's bundle. The
    identity needs Beam's Python SDK; either needs an environment."""
    components = graph.components
    [source], [target] = t.proto.inputs.values(), t.proto.outputs.values()
    coders = (
        f"from coder {recode.describe(components, components.pcollections[source].coder_id)} to "
        f"{recode.describe(components, components.pcollections[target].coder_id)}"
    )
    env = t.proto.environment_id
    if not env:
        return [
            f"{where}: its elements must be re-encoded {coders}, which the runner cannot do itself, "
            "and the pipeline has no SDK environment to do it"
        ]
    if t.urn == urns.IDENTITY_DOFN and sdks.sdk_of(components, env) != sdks.PYTHON:
        return [
            f"{where}: its elements must be re-encoded {coders} by the SDK ({urns.IDENTITY_DOFN}); only Beam's "
            f"Python SDK offers that transform, and environment {env!r} runs no Python user code"
        ]
    return []


def _transform_problems(graph: PipelineGraph, t) -> list[str]:
    where = f"transform '{t.name}'"
    if t.urn in (urns.IDENTITY_DOFN, urns.SDK_FLATTEN):
        return _transcode_problems(graph, t, where)
    if t.urn == urns.TEST_STREAM:
        return _test_stream_problems(t, where)
    if t.urn not in urns.SDK_TRANSFORMS | urns.RUNNER_TRANSFORMS:
        return [f"{where}: unknown transform {t.urn or '(no URN)'}"]
    problems = []
    payload = t.pardo_payload()
    # A splittable ParDo's parts share its payload: its features are named once, at Process.
    if payload is not None and t.urn not in (urns.SDF_PAIR_WITH_RESTRICTION, urns.SDF_SPLIT_AND_SIZE):
        if is_stateful(t) and payload.restriction_coder_id:
            problems.append(
                f"{where}: splittable DoFn with user state or timers "
                f"({', '.join(sorted([*payload.state_specs, *payload.timer_family_specs]))})"
            )
        elif is_stateful(t):
            problems += _stateful_problems(graph, t, payload, where)
        for tag, side in payload.side_inputs.items():
            if side.access_pattern.urn not in (urns.ITERABLE_SIDE_INPUT, urns.MULTIMAP_SIDE_INPUT):
                problems.append(f"{where}: side input {tag} with access pattern {side.access_pattern.urn}")
    if t.urn == urns.GROUP_BY_KEY:
        problems += _windowing_problems(where, graph.windowing_of(t.main_inputs()[0]))
    return problems


def _test_stream_problems(t, where: str) -> list[str]:
    try:
        payload = beam_runner_api_pb2.TestStreamPayload.FromString(t.proto.spec.payload)
    except Exception:  # noqa: BLE001 - protobuf's DecodeError and friends
        return [f"{where}: TestStream with an unreadable payload"]
    if payload.endpoint.url:
        return [f"{where}: TestStream reading its events from a service ({payload.endpoint.url})"]
    tags = {
        getattr(e, e.WhichOneof("event")).tag
        for e in payload.events
        if e.WhichOneof("event") in ("element_event", "watermark_event")
    }
    unknown = sorted(repr(tag) for tag in tags if test_stream_output(t.proto, tag) is None)
    return [f"{where}: TestStream events for outputs it does not have ({', '.join(unknown)})"] if unknown else []


# The state protocols the runner serves (worker/state.py), which StateSpec.protocol names where
# the SDK sets it: value, bag, combining and Python's set state are reached as bag_user_state; the
# Go and Java SDKs' map, set and multimap state as multimap user state; ordered lists as
# ordered_list_user_state. A spec without a protocol must be of a kind StateSpec defines (value,
# bag, combining, set, map, multimap, ordered list): SDKs reach each of them over one of these.
_STATE_PROTOCOLS = (urns.BAG_USER_STATE, urns.MULTIMAP_USER_STATE, urns.ORDERED_LIST_USER_STATE)


def _stateful_problems(graph: PipelineGraph, t, payload, where: str) -> list[str]:
    # Processing-time timers need no TestStream: the runner owns the clock (engine/clock.py).
    problems = []
    for state_id, spec in sorted(payload.state_specs.items()):
        if spec.protocol.urn and spec.protocol.urn not in _STATE_PROTOCOLS:
            problems.append(f"{where}: state {state_id} over the state protocol {spec.protocol.urn}")
        elif not spec.protocol.urn and spec.WhichOneof("spec") is None:
            problems.append(f"{where}: state {state_id} of a kind this runner does not know (no StateSpec kind)")
    expiry = payload.on_window_expiration_timer_family_spec
    if expiry and expiry not in payload.timer_family_specs:
        problems.append(f"{where}: OnWindowExpiration names an unknown timer family {expiry}")
    problems += _key_problems(graph, t, where)
    return problems


def _key_problems(graph: PipelineGraph, t, where: str) -> list[str]:
    """State and timers are per key: the input must be KV, its key encoding deterministic."""
    [main] = t.main_inputs()
    coder_id = graph.components.pcollections[main].coder_id
    coder_proto = graph.components.coders[coder_id]
    if coder_proto.spec.urn != urns.KV_CODER:
        return [f"{where}: stateful ParDo whose input is not key-value (coder {coder_proto.spec.urn})"]
    # Only Beam's own pickling coders are known not to be; any other the SDK checked when the
    # pipeline was built (the runner never builds a user's coder to ask it).
    key_coder = python_coders.class_name(graph.components.coders[coder_proto.component_coder_ids[0]], graph.components)
    if key_coder in python_coders.NOT_DETERMINISTIC:
        return [f"{where}: stateful ParDo whose key coder {key_coder} is not deterministic"]
    return []


def _windowing_problems(where: str, ws: beam_runner_api_pb2.WindowingStrategy) -> list[str]:
    # (a merging WindowFn the runner does not know is merged by its SDK: graph/windowing.py)
    return [f"{where}: {p}" for p in trigger_spec.problems(ws.trigger)]
