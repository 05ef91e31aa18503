"""Our job server (reference_runner.jobserver) on loopback, driven by Beam's PortableRunner and by
raw gRPC requests, hostile ones included."""

import os
import sys
import time
from concurrent import futures

import apache_beam as beam
import grpc
import pytest
from apache_beam.metrics import Metrics
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.portability.api import (
    beam_artifact_api_pb2,
    beam_artifact_api_pb2_grpc,
    beam_job_api_pb2,
    beam_job_api_pb2_grpc,
    beam_runner_api_pb2,
)
from apache_beam.testing.util import assert_that, equal_to
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reference_runner.jobserver.server import JobServer
from unsupported import UNKNOWN_URN, UnknownPrimitive


@pytest.fixture(scope="module")
def server():
    # generous: on a loaded 2-core machine twenty workers booting at once take a while
    running = JobServer(port=0, worker_timeout=240, bundle_timeout=240).start()
    yield running
    running.stop()


def _options(server, *extra):
    return PipelineOptions(
        [f"--job_endpoint={server.address}", "--runner=PortableRunner", "--environment_type=LOOPBACK", *extra]
    )


class _Count(beam.DoFn):
    def __init__(self):
        self.seen = Metrics.counter("jobserver", "seen")

    def process(self, x):
        self.seen.inc()
        yield x % 2, x


def _keyed_sums(p):
    return (
        p
        | beam.Create(range(10))
        | beam.ParDo(_Count())
        | beam.GroupByKey()
        | beam.MapTuple(lambda k, vs: (k, sum(vs)))
    )


def test_a_loopback_job_runs_and_reports_metrics(server):
    p = beam.Pipeline(options=_options(server))
    assert_that(_keyed_sums(p), equal_to([(0, 20), (1, 25)]))
    result = p.run()
    assert result.wait_until_finish() == "DONE"
    [counter] = result.metrics().query(MetricsFilter().with_name("seen"))["counters"]
    assert counter.committed == 10 and counter.attempted == 10
    texts = [
        m.message_response.message_text
        for m in _stub(server).GetMessageStream(beam_job_api_pb2.JobMessagesRequest(job_id=result._job_id), timeout=10)
        if m.HasField("message_response")
    ]
    assert any(t.startswith("running on external worker") for t in texts), texts


def test_schedule_options_reach_the_runner(server):
    p = beam.Pipeline(
        options=_options(server, "--reference_bundle_size=1", "--reference_faults=0.3", "--reference_seed=3")
    )
    assert_that(_keyed_sums(p), equal_to([(0, 20), (1, 25)]))
    result = p.run()
    result.wait_until_finish()
    [counter] = result.metrics().query(MetricsFilter().with_name("seen"))["counters"]
    # retries change nothing committed; attempted counts what failed attempts did too (in-process
    # runs pin the exact figures: tests/test_reference_schedules.py)
    assert counter.committed == 10 and counter.attempted >= 10


def test_the_users_error_reaches_the_client(server):
    def explode(x):
        raise ValueError(f"bad element {x}")

    p = beam.Pipeline(options=_options(server))
    _ = p | beam.Create([7]) | beam.Map(explode)
    with pytest.raises(Exception, match="bad element 7"):
        p.run().wait_until_finish()


def test_unsupported_pipeline_is_refused_at_prepare_naming_the_feature(server):
    p = beam.Pipeline(options=_options(server))
    _ = p | beam.Create([("k", 1)]) | UnknownPrimitive()
    with pytest.raises(Exception, match=f"unknown transform {UNKNOWN_URN}"):
        p.run().wait_until_finish()


def test_a_long_refusal_is_cut_to_fit_a_clients_headers(server):
    # Java's gRPC client refuses response headers over 10 KiB, and the error's details travel in
    # one: 300 unknown transforms would name them all in some 20 KB
    p = beam.Pipeline()
    pcoll = p | beam.Create([("k", 1)])
    for i in range(300):
        pcoll = pcoll | f"Unknown{i}" >> UnknownPrimitive()
    with pytest.raises(grpc.RpcError) as info:
        _stub(server).Prepare(
            beam_job_api_pb2.PrepareJobRequest(job_name="long", pipeline=p.to_runner_api()), timeout=30
        )
    assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED
    details = info.value.details()
    assert f"unknown transform {UNKNOWN_URN}" in details and "Unknown0" in details
    assert len(details) < 4200 and details.endswith("more characters (the job server's log has them all)")


def _stub(server):
    return beam_job_api_pb2_grpc.JobServiceStub(grpc.insecure_channel(server.address))


@pytest.mark.parametrize(
    "call, request_",
    [
        ("GetState", beam_job_api_pb2.GetJobStateRequest(job_id="nope")),
        ("GetPipeline", beam_job_api_pb2.GetJobPipelineRequest(job_id="nope")),
        ("Cancel", beam_job_api_pb2.CancelJobRequest(job_id="nope")),
        ("Drain", beam_job_api_pb2.DrainJobRequest(job_id="nope")),
        ("GetJobMetrics", beam_job_api_pb2.GetJobMetricsRequest(job_id="nope")),
        ("Run", beam_job_api_pb2.RunJobRequest(preparation_id="nope")),
    ],
)
def test_unknown_ids_get_not_found(server, call, request_):
    with pytest.raises(grpc.RpcError) as info:
        getattr(_stub(server), call)(request_, timeout=10)
    assert info.value.code() == grpc.StatusCode.NOT_FOUND


def test_describe_pipeline_options_lists_every_reference_knob(server):
    names = {
        o.name
        for o in _stub(server)
        .DescribePipelineOptions(beam_job_api_pb2.DescribePipelineOptionsRequest(), timeout=10)
        .options
    }
    assert {
        "reference_seed",
        "reference_bundle_size",
        "reference_splits",
        "reference_faults",
        "reference_fuse",
        "reference_clock",
    } <= names


def _prepare_with_artifact(server, staged_name: str) -> str:
    pipeline = beam_runner_api_pb2.Pipeline()
    env = pipeline.components.environments["env"]
    env.urn = "beam:env:embedded_python:v1"
    env.dependencies.add(
        type_urn="beam:artifact:type:embedded:v1",
        type_payload=beam_runner_api_pb2.EmbeddedFilePayload(data=b"x").SerializeToString(),
        role_urn="beam:artifact:role:staging_to:v1",
        role_payload=beam_runner_api_pb2.ArtifactStagingToRolePayload(staged_name=staged_name).SerializeToString(),
    )
    return (
        _stub(server)
        .Prepare(beam_job_api_pb2.PrepareJobRequest(pipeline=pipeline, job_name="a"), timeout=10)
        .staging_session_token
    )


def _offer(server, token, payload=b"x"):
    """Play the client's side of artifact staging for one artifact; returns the server's requests."""
    import queue

    answers = queue.Queue()
    answers.put(beam_artifact_api_pb2.ArtifactResponseWrapper(staging_token=token))

    def messages():
        while (item := answers.get()) is not None:
            yield item

    requests = []
    stub = beam_artifact_api_pb2_grpc.ArtifactStagingServiceStub(grpc.insecure_channel(server.address))
    try:
        for request in stub.ReverseArtifactRetrievalService(messages(), timeout=10):
            requests.append(request)
            if request.HasField("resolve_artifact"):
                answers.put(
                    beam_artifact_api_pb2.ArtifactResponseWrapper(
                        resolve_artifact_response=beam_artifact_api_pb2.ResolveArtifactsResponse(
                            replacements=request.resolve_artifact.artifacts
                        )
                    )
                )
            else:
                answers.put(
                    beam_artifact_api_pb2.ArtifactResponseWrapper(
                        get_artifact_response=beam_artifact_api_pb2.GetArtifactResponse(data=payload), is_last=True
                    )
                )
    finally:
        answers.put(None)
    return requests


def test_artifacts_are_staged_inside_the_staging_directory(server):
    token = _prepare_with_artifact(server, "requirements.txt")
    assert [r.WhichOneof("request") for r in _offer(server, token)] == ["resolve_artifact", "get_artifact"]
    staged = [
        os.path.join(root, f)
        for root, _, files in os.walk(server.staging_dir)
        for f in files
        if f.endswith("requirements.txt")
    ]
    assert staged and all(open(f, "rb").read() == b"x" for f in staged)


def test_an_environment_without_dependencies_is_still_resolved(server):
    # the conversation always has an exchange, as with Beam's own staging service: ended at once,
    # it sometimes went unseen by the TypeScript SDK's client, which waited after "Staging artifacts"
    pipeline = beam_runner_api_pb2.Pipeline()
    pipeline.components.environments["env"].urn = "beam:env:embedded_python:v1"
    token = (
        _stub(server)
        .Prepare(beam_job_api_pb2.PrepareJobRequest(pipeline=pipeline, job_name="a"), timeout=10)
        .staging_session_token
    )
    requests = _offer(server, token)
    assert [r.WhichOneof("request") for r in requests] == ["resolve_artifact"]
    assert not requests[0].resolve_artifact.artifacts


def test_the_front_end_runs_once_per_job_even_when_staging_rewrites_the_environment(server, monkeypatch):
    """Prepare plans the job and Run runs that Plan: the capability check (the front end's last
    step) runs once for one submitted job, although staging rewrote the environment in between
    (which made a plan made again from the staged pipeline miss the plan cache)."""
    import uuid

    from reference_runner.graph import check

    calls = []
    real_check = check.check
    monkeypatch.setattr(check, "check", lambda *args, **kw: calls.append(1) or real_check(*args, **kw))
    p = beam.Pipeline()
    _ = p | beam.Create([1, 2, 3]) | f"Unique{uuid.uuid4().hex}" >> beam.Map(lambda x: x * 2)  # no plan cached
    pipeline = p.to_runner_api()
    for env in pipeline.components.environments.values():
        env.urn = "beam:env:embedded_python:v1"
        env.ClearField("payload")
        env.dependencies.add(
            type_urn="beam:artifact:type:embedded:v1",
            type_payload=beam_runner_api_pb2.EmbeddedFilePayload(data=b"x").SerializeToString(),
            role_urn="beam:artifact:role:staging_to:v1",
            role_payload=beam_runner_api_pb2.ArtifactStagingToRolePayload(staged_name="x.txt").SerializeToString(),
        )
    stub = _stub(server)
    prepared = stub.Prepare(beam_job_api_pb2.PrepareJobRequest(pipeline=pipeline, job_name="once"), timeout=60)
    _offer(server, prepared.staging_session_token)
    job_id = stub.Run(beam_job_api_pb2.RunJobRequest(preparation_id=prepared.preparation_id), timeout=60).job_id
    deadline = time.monotonic() + 120
    while (state := stub.GetState(beam_job_api_pb2.GetJobStateRequest(job_id=job_id)).state) not in (
        beam_job_api_pb2.JobState.DONE,
        beam_job_api_pb2.JobState.FAILED,
    ):
        assert time.monotonic() < deadline, "the job did not end"
        time.sleep(0.05)
    assert state == beam_job_api_pb2.JobState.DONE
    ran = stub.GetPipeline(beam_job_api_pb2.GetJobPipelineRequest(job_id=job_id)).pipeline
    staged = [a.type_urn for env in ran.components.environments.values() for a in env.dependencies]
    assert staged and all(urn == "beam:artifact:type:file:v1" for urn in staged)  # staging did rewrite it
    assert len(calls) == 1


@pytest.mark.parametrize("name", ["../../escape.txt", "/etc/passwd", "..", "a/b", "", "x" * 300])
def test_hostile_artifact_names_are_refused(server, name):
    token = _prepare_with_artifact(server, name)
    with pytest.raises(grpc.RpcError) as info:
        _offer(server, token)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert not os.path.exists(os.path.join(os.path.dirname(server.staging_dir), "escape.txt"))


_METHODS = [
    "Prepare",
    "Run",
    "GetJobs",
    "GetState",
    "GetPipeline",
    "Cancel",
    "Drain",
    "GetJobMetrics",
    "DescribePipelineOptions",
]


_URNS = [
    "beam:transform:pardo:v1",
    "beam:transform:group_by_key:v1",
    "beam:transform:impulse:v1",
    "beam:transform:flatten:v1",
    "beam:transform:teststream:v1",
    "urn:made:up",
    "",
]
_NAMES = st.text(alphabet="abc./-_\x00", max_size=8)


@st.composite
def _hostile_pipeline(draw) -> bytes:
    """A PrepareJobRequest whose pipeline is structurally valid protobuf but semantically anything:
    unknown URNs, missing PCollections, coders and environments, garbage payloads, cycles."""
    request = beam_job_api_pb2.PrepareJobRequest(job_name=draw(_NAMES))
    components = request.pipeline.components
    pcolls = draw(st.lists(_NAMES, max_size=4))
    for name in pcolls:
        components.pcollections[name].coder_id = draw(_NAMES)
        components.pcollections[name].windowing_strategy_id = draw(_NAMES)
    for n in range(draw(st.integers(0, 4))):
        transform = components.transforms[f"t{n}"]
        transform.spec.urn = draw(st.sampled_from(_URNS))
        transform.spec.payload = draw(st.binary(max_size=20))
        transform.environment_id = draw(_NAMES)
        for tag in draw(st.lists(_NAMES, max_size=2)):
            transform.inputs[tag] = draw(st.sampled_from(pcolls + ["missing"]))
        for tag in draw(st.lists(_NAMES, max_size=2)):
            transform.outputs[tag] = draw(st.sampled_from(pcolls + ["missing"]))
        if draw(st.booleans()):
            transform.subtransforms.append(draw(st.sampled_from([f"t{n}", "nope"])))
    request.pipeline.root_transform_ids.extend(draw(st.lists(st.sampled_from(["t0", "t1", "zz"]), max_size=2)))
    request.pipeline.requirements.extend(draw(st.lists(st.sampled_from(["beam:requirement:x", ""]), max_size=1)))
    return request.SerializeToString()


@settings(max_examples=1000, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(
    call=st.one_of(
        st.tuples(st.sampled_from(_METHODS), st.binary(max_size=300)),
        st.tuples(st.just("Prepare"), _hostile_pipeline()),
    )
)
def test_fuzz_malformed_requests_never_take_the_server_down(server, call):
    method, body = call
    channel = _fuzz_channel(server)
    call = channel.unary_unary(
        f"/org.apache.beam.model.job_management.v1.JobService/{method}",
        request_serializer=lambda b: b,
        response_deserializer=lambda b: b,
    )
    try:
        call(body, timeout=10)
    except grpc.RpcError as e:
        assert e.code() != grpc.StatusCode.UNKNOWN or "Exception" not in (e.details() or ""), e.details()


_CHANNELS = {}


def _fuzz_channel(server):
    if server.address not in _CHANNELS:
        _CHANNELS[server.address] = grpc.insecure_channel(server.address)
    return _CHANNELS[server.address]


def test_after_the_fuzzing_a_valid_job_still_succeeds(server):
    test_a_loopback_job_runs_and_reports_metrics(server)


@pytest.mark.timeout(120)  # a hang, not a clear failure, is what this guards against
def test_a_worker_killed_mid_bundle_fails_the_job_clearly(server, worker_pool):
    _, address = worker_pool
    options = PipelineOptions(
        [
            f"--job_endpoint={server.address}",
            "--runner=PortableRunner",
            "--environment_type=EXTERNAL",
            f"--environment_config={address}",
        ]
    )

    def die_on_three(x):  # nested, so it travels by value to the worker process
        if x == 3:
            os._exit(1)  # the worker process disappears in the middle of a bundle
        return x

    p = beam.Pipeline(options=options)
    _ = p | beam.Create(range(6)) | beam.Map(die_on_three)
    with pytest.raises(Exception, match="SDK worker .* (disconnected|closed)"):
        p.run().wait_until_finish()
    test_a_loopback_job_runs_and_reports_metrics(server)  # the server is still up


def test_twenty_concurrent_jobs_all_correct(server, worker_pool):
    _, address = worker_pool
    options = [
        f"--job_endpoint={server.address}",
        "--runner=PortableRunner",
        "--environment_type=EXTERNAL",
        f"--environment_config={address}",
    ]

    def job(n):
        p = beam.Pipeline(options=PipelineOptions(options))
        out = p | f"Create{n}" >> beam.Create([(n, i) for i in range(5)]) | beam.CombinePerKey(sum)
        assert_that(out, equal_to([(n, 10)]))
        return p.run().wait_until_finish()

    with futures.ThreadPoolExecutor(20) as pool:
        states = list(pool.map(job, range(20)))
    assert states == ["DONE"] * 20


def test_cancel_stops_a_busy_job_promptly(server):
    def sleep_long(x):
        time.sleep(60)
        return x

    p = beam.Pipeline(options=_options(server))
    _ = p | beam.Create([1]) | beam.Map(sleep_long)
    result = p.run()
    stub = _stub(server)

    def state():
        return stub.GetState(beam_job_api_pb2.GetJobStateRequest(job_id=result._job_id), timeout=10).state

    deadline = time.time() + 30
    while state() != beam_job_api_pb2.JobState.RUNNING and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # inside the sleeping bundle now
    cancelled_at = time.time()
    stub.Cancel(beam_job_api_pb2.CancelJobRequest(job_id=result._job_id), timeout=10)
    while state() != beam_job_api_pb2.JobState.CANCELLED and time.time() - cancelled_at < 10:
        time.sleep(0.05)
    # the sleeping bundle has 60 s to go: CANCELLED within the 10 s polled above means it was abandoned
    assert state() == beam_job_api_pb2.JobState.CANCELLED


def test_a_process_environment_starts_its_command(server, tmp_path):
    boot = tmp_path / "boot.sh"
    boot.write_text(f'#!/bin/sh\nexec {sys.executable} -m reference_runner.worker.boot "$@"\n')
    boot.chmod(0o755)
    options = PipelineOptions(
        [
            f"--job_endpoint={server.address}",
            "--runner=PortableRunner",
            "--environment_type=PROCESS",
            f'--environment_config={{"command": "{boot}"}}',
        ]
    )
    p = beam.Pipeline(options=options)
    assert_that(p | beam.Create(["a", "b", "a"]) | beam.combiners.Count.PerElement(), equal_to([("a", 2), ("b", 1)]))
    assert p.run().wait_until_finish() == "DONE"


def test_an_unknown_backend_is_refused_at_once_naming_the_known_ones():
    with pytest.raises(ValueError, match=r"^unknown backend 'flink': the job server serves reference and spark$"):
        JobServer(port=0, backend="flink")


def test_the_job_server_takes_its_settings_by_name():
    with pytest.raises(TypeError):
        JobServer("127.0.0.1", 0)  # ten positional settings were too easy to shift by one


def test_the_command_line_offers_every_backend_of_the_table():
    from reference_runner.jobserver.__main__ import build_parser
    from reference_runner.jobserver.served_backends import BACKENDS

    serve = build_parser()._subparsers._group_actions[0].choices["serve"]
    [backend] = [a for a in serve._actions if a.dest == "backend"]
    assert backend.choices == list(BACKENDS) == ["reference", "spark"]
    assert backend.default == "reference"
    assert all(kind.help in backend.help for kind in BACKENDS.values())
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--backend", "flink"])


def test_an_oversized_pipeline_is_refused():
    small = JobServer(port=0, max_pipeline_bytes=2000).start()
    try:
        p = beam.Pipeline(options=_options(small))
        _ = p | beam.Create(["x" * 5000]) | beam.Map(len)
        with pytest.raises(Exception, match="over the limit"):
            p.run().wait_until_finish()
    finally:
        small.stop()


def test_staged_artifacts_are_served_back_and_nothing_else(server):
    token = _prepare_with_artifact(server, "served.txt")
    _offer(server, token, payload=b"payload")
    [path] = [
        os.path.join(root, f)
        for root, _, files in os.walk(server.staging_dir)
        for f in files
        if f.endswith("served.txt")
    ]
    stub = beam_artifact_api_pb2_grpc.ArtifactRetrievalServiceStub(grpc.insecure_channel(server.address))

    def fetch(file_path):
        artifact = beam_runner_api_pb2.ArtifactInformation(
            type_urn="beam:artifact:type:file:v1",
            type_payload=beam_runner_api_pb2.ArtifactFilePayload(path=file_path).SerializeToString(),
        )
        return b"".join(
            r.data for r in stub.GetArtifact(beam_artifact_api_pb2.GetArtifactRequest(artifact=artifact), timeout=10)
        )

    assert fetch(path) == b"payload"
    for outside in ("/etc/passwd", os.path.join(server.staging_dir, "..", "x"), __file__):
        with pytest.raises(grpc.RpcError) as info:
            fetch(outside)
        assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED


def _prepare(server, pipeline, **options) -> beam_job_api_pb2.PrepareJobResponse:
    from google.protobuf import struct_pb2

    struct = struct_pb2.Struct()
    struct.update({f"beam:option:reference_{name}:v1": value for name, value in options.items()})
    return _stub(server).Prepare(
        beam_job_api_pb2.PrepareJobRequest(pipeline=pipeline, job_name="p", pipeline_options=struct), timeout=60
    )


def test_prepare_reads_the_jobs_knobs_and_names_a_bad_one(server):
    p = beam.Pipeline()
    _ = p | beam.Create([1]) | beam.Map(str)
    assert _prepare(server, p.to_runner_api(), lift="false", seed=7, bundle_size=2).preparation_id
    with pytest.raises(grpc.RpcError) as info:
        _prepare(server, p.to_runner_api(), bundle_size=0)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "bundle_size must be" in info.value.details()
