"""The job a Java test left running on the runner when its JVM was killed (the test outlasted its
time cap), cancelled through the Job API so it does not hold the runner's resources for the tests
after it: Beam's Spark job server, for one, refuses every later job while a stuck one keeps its
SparkContext ("Only one SparkContext should be running in this JVM")."""

from __future__ import annotations

import re

import grpc
from apache_beam.portability.api import beam_job_api_pb2, beam_job_api_pb2_grpc

_DONE = {
    beam_job_api_pb2.JobState.DONE,
    beam_job_api_pb2.JobState.FAILED,
    beam_job_api_pb2.JobState.CANCELLED,
    beam_job_api_pb2.JobState.UPDATED,
    beam_job_api_pb2.JobState.DRAINED,
}
_RPC_TIMEOUT_S = 10.0


def job_name_of(junit_id: str) -> str:
    """The start of the job name Beam's TestPipeline gives a test's pipeline: the test's class (its
    simple name, nested classes included) and method, lowercased, every other character a '0'
    (ParDoTest$BasicTests.testParDo: pardotest0basictests0testpardo-<user>-<time>)."""
    class_name, method = junit_id.rsplit(".", 1)
    simple = class_name.rsplit(".", 1)[-1]
    return re.sub(r"[^a-z0-9]", "0", f"{simple}-{method}".lower())


def cancel(endpoint: str, junit_id: str) -> list[str]:
    """Cancel the test's jobs that have not ended on the Job API server at ``endpoint``; their ids.
    Only jobs named after this test: other tests' jobs on a shared endpoint stay alone. Raises
    grpc.RpcError when the server does not answer."""
    prefix = job_name_of(junit_id) + "-"
    with grpc.insecure_channel(endpoint) as channel:
        stub = beam_job_api_pb2_grpc.JobServiceStub(channel)
        jobs = stub.GetJobs(beam_job_api_pb2.GetJobsRequest(), timeout=_RPC_TIMEOUT_S).job_info
        cancelled = []
        for job in jobs:
            if job.job_name.startswith(prefix) and job.state not in _DONE:
                stub.Cancel(beam_job_api_pb2.CancelJobRequest(job_id=job.job_id), timeout=_RPC_TIMEOUT_S)
                cancelled.append(job.job_id)
        return cancelled
