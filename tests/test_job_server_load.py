"""Our job server as a CI uses it: a long stream of jobs, and the faults a long-lived server meets
(a client killed mid-job, a storm of cancels, a DoFn that never returns, preparations never run).
After each, nothing is lost, the server is up, its next job is DONE and what the job held is freed.
(An SDK worker killed mid-bundle: tests/test_job_server.py.)"""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import apache_beam as beam
import grpc
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.portability.api import beam_job_api_pb2, beam_job_api_pb2_grpc, beam_runner_api_pb2
from apache_beam.testing.util import assert_that, equal_to

from benchmarks.soak import Soak, growth
from reference_runner.jobserver.server import JobServer
from reference_runner.jobserver.service import MAX_PREPARED
from reference_runner.lifecycle import TERMINAL

State = beam_job_api_pb2.JobState


@pytest.fixture(scope="module")
def server():
    running = JobServer(port=0, keep_jobs=20).start()
    yield running
    running.stop()


def _options(server):
    return PipelineOptions(
        [f"--job_endpoint={server.address}", "--runner=PortableRunner", "--environment_type=LOOPBACK"]
    )


def _a_job_is_done(server):
    p = beam.Pipeline(options=_options(server))
    assert_that(p | beam.Create([1, 2, 3]) | beam.Map(lambda x: x * 10), equal_to([10, 20, 30]))
    assert p.run().wait_until_finish() == "DONE"


def _wait_for(condition, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"{what} within {seconds} s"
        time.sleep(0.05)


def _nothing_held(server):
    """No job running, no worker connected or kept by the pool (spares are off for LOOPBACK)."""
    _wait_for(lambda: all(j.state in TERMINAL for j in list(server.jobs.jobs.values())), 30, "every job ended")
    _wait_for(lambda: not server.fn._connections, 30, "every SDK worker let go")
    assert not server.pool._all and not server.pool._idle


def test_resources_stay_bounded_over_hundreds_of_jobs():
    # `reference-runner serve` in a process of its own, 300 tiny LOOPBACK jobs one after another
    # (benchmarks/soak.py). Before this was fixed the server grew by 0.9 MiB a job, and asking each
    # finished LOOPBACK pool for a spare worker sent it into a runaway of gigabytes.
    result = Soak("reference", clients=1, jobs=300, interval=0.25, timeout=120).run()
    assert result["not_done_count"] == 0, result["not_done"]
    grew = {field: growth(result["samples"], 50, field) for field in ("rss_mib", "threads", "fds")}
    # generous bounds on resources between job 50 and job 300, not timings
    assert grew["rss_mib"] < 60, grew  # (+26 MiB here; +6005 MiB on the previous main)
    assert grew["threads"] < 32, grew  # (gRPC's thread pools grow to the concurrency they met)
    assert grew["fds"] < 32, grew


_CLIENT = textwrap.dedent(
    """
    import sys, time
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    def stall(x):
        time.sleep(3600)
        return x

    options = PipelineOptions(
        ["--job_endpoint=" + sys.argv[1], "--runner=PortableRunner", "--environment_type=LOOPBACK"]
    )
    p = beam.Pipeline(options=options)
    _ = p | beam.Create([1]) | beam.Map(stall)
    result = p.run()
    print(result._job_id, flush=True)
    time.sleep(3600)
    """
)


@pytest.mark.timeout(180)
def test_a_client_killed_mid_job_fails_its_job_naming_the_lost_worker(server):
    client = subprocess.Popen(
        [sys.executable, "-c", _CLIENT, server.address], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        job_id = client.stdout.readline().strip()
        job = server.jobs.jobs[job_id]
        _wait_for(lambda: job.state == State.RUNNING and server.fn._connections, 60, "the job running")
        time.sleep(0.5)  # inside the stalled bundle
        killed_at = time.monotonic()
        os.killpg(client.pid, signal.SIGKILL)  # the client and its LOOPBACK worker with it
        _wait_for(lambda: job.state in TERMINAL, 60, "the job ended")
    finally:
        os.killpg(client.pid, signal.SIGKILL) if client.poll() is None else None
        client.wait()
    assert job.state == State.FAILED
    errors = [e.message_response.message_text for e in job.events if e.HasField("message_response")]
    assert any("SDK worker" in text and ("disconnected" in text or "closed" in text) for text in errors), errors
    print(f"failed {time.monotonic() - killed_at:.1f} s after the client was killed")
    _nothing_held(server)
    _a_job_is_done(server)


def test_a_storm_of_cancels_cancels_every_job_and_loses_nothing(server):
    release = threading.Event()

    def stall(x):
        release.wait(60)  # (the LOOPBACK worker runs in this process: let it go at the end)
        return x

    results = []
    for n in range(6):
        p = beam.Pipeline(options=_options(server))
        _ = p | f"Create{n}" >> beam.Create([n]) | beam.Map(stall)
        results.append(p.run())
    stub = beam_job_api_pb2_grpc.JobServiceStub(grpc.insecure_channel(server.address))
    try:
        _wait_for(lambda: all(server.jobs.jobs[r._job_id].state == State.RUNNING for r in results), 120, "all running")

        def storm():
            for _ in range(20):
                for r in results:
                    stub.Cancel(beam_job_api_pb2.CancelJobRequest(job_id=r._job_id), timeout=10)

        threads = [threading.Thread(target=storm) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        _wait_for(
            lambda: all(server.jobs.jobs[r._job_id].state == State.CANCELLED for r in results), 30, "all cancelled"
        )
    finally:
        release.set()
    for r in results:  # one CANCELLING, then one CANCELLED, however many cancels came
        states = [e.state_response.state for e in server.jobs.jobs[r._job_id].events if e.HasField("state_response")]
        assert states[-2:] == [State.CANCELLING, State.CANCELLED], states
    _nothing_held(server)
    _a_job_is_done(server)


def test_a_dofn_that_never_returns_is_cancelled_after_the_case_timeout(server):
    forever = threading.Event()

    def block(x):
        forever.wait()  # until this test ends
        return x

    p = beam.Pipeline(options=_options(server))
    _ = p | beam.Create([1]) | beam.Map(block)
    result = p.run()
    try:
        job = server.jobs.jobs[result._job_id]
        _wait_for(lambda: job.state == State.RUNNING and server.fn._connections, 60, "the job running")
        # what a case does when its time runs out (conformance/authoring/case_runner.py): stop waiting, cancel
        result.wait_until_finish(duration=1000)
        assert job.state == State.RUNNING  # (the DoFn never returns)
        result.cancel()
        _wait_for(lambda: job.state == State.CANCELLED, 15, "cancelled")
    finally:
        forever.set()
    _nothing_held(server)
    _a_job_is_done(server)


def test_preparations_never_run_are_bounded_and_their_files_removed(tmp_path):
    running = JobServer(port=0, staging_dir=str(tmp_path)).start()
    try:
        stub = beam_job_api_pb2_grpc.JobServiceStub(grpc.insecure_channel(running.address))
        pipeline = beam_runner_api_pb2.Pipeline()
        tokens = []
        for n in range(MAX_PREPARED + 30):
            tokens.append(
                stub.Prepare(beam_job_api_pb2.PrepareJobRequest(pipeline=pipeline, job_name=f"p{n}"), timeout=10)
            )
            os.makedirs(tmp_path / tokens[-1].staging_session_token)  # as if it had staged a file

        assert len(running.jobs._prepared) == MAX_PREPARED
        assert len(os.listdir(tmp_path)) <= MAX_PREPARED
        with pytest.raises(grpc.RpcError) as refused:  # the oldest is forgotten, with a clear answer
            stub.Run(beam_job_api_pb2.RunJobRequest(preparation_id=tokens[0].preparation_id), timeout=10)
        assert refused.value.code() == grpc.StatusCode.NOT_FOUND
        _a_job_is_done(running)
    finally:
        running.stop()


def test_ended_jobs_are_kept_up_to_the_limit_and_then_forgotten_with_their_files(server):
    for _ in range(3):
        _a_job_is_done(server)
    ended = [j for j in server.jobs.jobs.values() if j.state in TERMINAL]
    assert len(ended) <= server.jobs.keep_finished + 1
    stub = beam_job_api_pb2_grpc.JobServiceStub(grpc.insecure_channel(server.address))
    latest = ended[-1]
    assert stub.GetState(beam_job_api_pb2.GetJobStateRequest(job_id=latest.job_id), timeout=10).state == State.DONE
    token = latest.control.token
    # its engine and worker let go (nothing is woken by a cancel or drain of it any more)
    assert latest.backend is None and not token._cancel._wakes and not token._drain._wakes
