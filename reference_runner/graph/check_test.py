import apache_beam as beam
import pytest
from apache_beam.portability.api import beam_runner_api_pb2
from apache_beam.transforms import window

from reference_runner.graph.check import UnsupportedPipeline
from reference_runner.graph.front_end import SPARK, checked_graph


def _with_a_java_dofn():
    p = beam.Pipeline()
    _ = p | beam.Create([1]) | "JavaFn" >> beam.Map(str)
    proto = p.to_runner_api()
    [t] = [t for t in proto.components.transforms.values() if t.unique_name == "JavaFn"]
    payload = beam_runner_api_pb2.ParDoPayload.FromString(t.spec.payload)
    payload.do_fn.urn = "beam:dofn:javasdk:0.1"
    t.spec.payload = payload.SerializeToString()
    return proto


def test_a_backend_that_embeds_user_code_refuses_another_sdks_dofn_by_name():
    with pytest.raises(
        UnsupportedPipeline, match=r"transform 'JavaFn': user code of another SDK \(beam:dofn:javasdk:0.1"
    ):
        checked_graph(_with_a_java_dofn(), SPARK, environments=True)


def test_a_backend_with_the_environments_own_workers_takes_it():
    checked_graph(_with_a_java_dofn(), SPARK, environments=False)  # (the job server's workers run it)


class _WithSetState(beam.DoFn):
    SEEN = beam.transforms.userstate.SetStateSpec("seen", beam.coders.StrUtf8Coder())

    def process(self, kv, seen=beam.DoFn.StateParam(SEEN)):
        yield kv


def _with_set_state(dofn_urn: str | None):
    p = beam.Pipeline()
    _ = p | beam.Create([("k", "v")]) | "Stateful" >> beam.ParDo(_WithSetState())
    proto = p.to_runner_api()
    if dofn_urn:
        [t] = [t for t in proto.components.transforms.values() if t.unique_name == "Stateful"]
        payload = beam_runner_api_pb2.ParDoPayload.FromString(t.spec.payload)
        payload.do_fn.urn = dofn_urn
        t.spec.payload = payload.SerializeToString()
    return proto


def test_set_state_of_any_sdk_is_taken():
    # the Go and Java SDKs keep a set in multimap state, Python in bag state: the runner serves both
    checked_graph(_with_set_state("beam:go:transform:dofn:v1"), SPARK, environments=False)
    checked_graph(_with_set_state(None), SPARK, environments=False)


def _with_state_spec(edit):
    proto = _with_set_state(None)
    [t] = [t for t in proto.components.transforms.values() if t.unique_name == "Stateful"]
    payload = beam_runner_api_pb2.ParDoPayload.FromString(t.spec.payload)
    edit(payload.state_specs["seen"])
    t.spec.payload = payload.SerializeToString()
    return proto


def test_map_and_multimap_state_are_taken():
    coder = next(iter(_with_set_state(None).components.coders))

    def as_map(spec):
        spec.map_spec.key_coder_id = spec.map_spec.value_coder_id = coder
        spec.protocol.urn = "beam:user_state:multimap:v1"

    def as_multimap(spec):
        spec.multimap_spec.key_coder_id = spec.multimap_spec.value_coder_id = coder

    checked_graph(_with_state_spec(as_map), SPARK, environments=False)
    checked_graph(_with_state_spec(as_multimap), SPARK, environments=False)


def test_state_over_a_protocol_the_runner_does_not_serve_is_refused_naming_it():
    def unknown_protocol(spec):
        spec.protocol.urn = "beam:user_state:fancy:v1"

    with pytest.raises(
        UnsupportedPipeline, match=r"'Stateful': state seen over the state protocol beam:user_state:fancy:v1"
    ):
        checked_graph(_with_state_spec(unknown_protocol), SPARK, environments=False)

    def no_kind(spec):
        spec.Clear()

    with pytest.raises(UnsupportedPipeline, match=r"'Stateful': state seen of a kind this runner does not know"):
        checked_graph(_with_state_spec(no_kind), SPARK, environments=False)


def _flatten_of_ints_and_strs_as_if_go_wrote_it():
    p = beam.Pipeline()
    _ = (p | "Ints" >> beam.Create([1]), p | "Strs" >> beam.Create(["a"])) | beam.Flatten()
    proto = p.to_runner_api()
    for t in proto.components.transforms.values():
        payload = t.spec.urn == "beam:transform:pardo:v1" and beam_runner_api_pb2.ParDoPayload.FromString(
            t.spec.payload
        )
        if payload:
            payload.do_fn.urn = "beam:go:transform:dofn:v1"  # as if Go had written every DoFn
            t.spec.payload = payload.SerializeToString()
    for env in proto.components.environments.values():
        env.capabilities.append("beam:version:sdk_base:go:apache/beam_go_sdk:2.77.0")
    return proto


def test_a_re_encoding_of_opaque_coders_in_another_sdk_runs_as_a_flatten_in_its_bundle():
    # ints and strs into a pickled coder: the runner reads neither side, so the SDK re-encodes;
    # Python's identity DoFn is Python's only, every SDK harness runs a Flatten in a bundle
    from reference_runner.graph import urns
    from reference_runner.graph.front_end import REFERENCE

    proto = _flatten_of_ints_and_strs_as_if_go_wrote_it()
    [env] = proto.components.environments
    graph = checked_graph(proto, REFERENCE, environments=False)
    transcodes = [t for t in graph.transforms if t.urn == urns.SDK_FLATTEN]
    assert len(transcodes) == 2 and all(t.proto.environment_id == env for t in transcodes)
    assert urns.IDENTITY_DOFN not in {t.urn for t in graph.transforms}


def test_a_re_encoding_with_no_sdk_environment_to_do_it_is_refused_naming_the_coders():
    from reference_runner.graph.front_end import REFERENCE

    proto = _flatten_of_ints_and_strs_as_if_go_wrote_it()
    proto.components.ClearField("environments")
    for t in proto.components.transforms.values():
        t.environment_id = ""
    with pytest.raises(
        UnsupportedPipeline,
        match=r"Flatten/Transcode/\w+': its elements must be re-encoded from coder \S+ \(beam:coder:varint:v1\) to "
        r"\S+ \(beam:coder:pickled_python:v1\), which the runner cannot do itself",
    ):
        checked_graph(proto, REFERENCE, environments=False)


def _grouped_in_a_java_merging_window_fn():
    """Sessions, relabelled as a Java WindowFn the runner does not know (it still needs merging)."""
    p = beam.Pipeline()
    _ = p | beam.Create([("k", 1)]) | beam.WindowInto(window.Sessions(10)) | "Group" >> beam.GroupByKey()
    proto = p.to_runner_api()
    for ws in proto.components.windowing_strategies.values():
        if ws.merge_status == beam_runner_api_pb2.MergeStatus.NEEDS_MERGE:
            ws.window_fn.urn = "beam:window_fn:serialized_java:v1"
    return proto


def test_a_merging_window_fn_the_runner_does_not_know_is_taken_for_its_sdk_to_merge():
    checked_graph(_grouped_in_a_java_merging_window_fn(), SPARK, environments=False)


def test_a_backend_that_embeds_user_code_refuses_another_sdks_merging_window_fn_by_name():
    with pytest.raises(
        UnsupportedPipeline,
        match=r"'Group': a merging WindowFn of another SDK \(beam:window_fn:serialized_java:v1\).*merge_windows",
    ):
        checked_graph(_grouped_in_a_java_merging_window_fn(), SPARK, environments=True)
