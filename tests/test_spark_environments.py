"""The Spark backend honours the job's environment: over ``reference-runner serve --backend spark``
a LOOPBACK pipeline's user code runs in the submitting process, as on every portable runner,
and not in Spark's own Python workers. Its DoFn comes from a module only the client can import
(the job server, started elsewhere, cannot), records where it ran and reads the client's module
state; the job's messages say where the user code ran."""

import os
from concurrent import futures

import apache_beam as beam
import grpc
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.portability.api import beam_job_api_pb2, beam_job_api_pb2_grpc
from apache_beam.testing.util import assert_that, equal_to

from user_modules import job_server_elsewhere, user_module

pytest.importorskip("pyspark")

SOURCE = """
    import os

    import apache_beam as beam

    SEEN_HERE = []  # module state of the submitting process


    class WhereAmI(beam.DoFn):
        def process(self, element):
            SEEN_HERE.append(element)
            yield element, os.getpid()
"""


def test_loopback_user_code_runs_in_the_submitting_process_on_spark(tmp_path):
    module = user_module(tmp_path, "where_am_i", SOURCE)
    with job_server_elsewhere(tmp_path, "--backend", "spark") as endpoint:
        options = PipelineOptions(
            ["--runner=PortableRunner", f"--job_endpoint={endpoint}", "--environment_type=LOOPBACK"]
        )
        with beam.Pipeline(options=options) as p:
            ran = (
                p
                | beam.Create(list(range(12)))
                | beam.Reshuffle()  # two stages, several partitions: several Spark tasks
                | beam.ParDo(module.WhereAmI())
            )
            assert_that(ran, equal_to([(i, os.getpid()) for i in range(12)]))
        messages = _messages(endpoint)
    assert sorted(module.SEEN_HERE) == list(range(12))
    assert any("user code on the environment's own workers (EXTERNAL pool at" in m for m in messages), messages


def _messages(endpoint: str) -> list[str]:
    with grpc.insecure_channel(endpoint) as channel:
        stub = beam_job_api_pb2_grpc.JobServiceStub(channel)
        [job] = stub.GetJobs(beam_job_api_pb2.GetJobsRequest()).job_info
        stream = stub.GetMessageStream(beam_job_api_pb2.JobMessagesRequest(job_id=job.job_id), timeout=30)
        return [e.message_response.message_text for e in stream if e.HasField("message_response")]


FAILING_SOURCE = """
    import apache_beam as beam

    ATTEMPTS = []  # in the submitting process, where LOOPBACK runs the DoFn


    class FailsAtFive(beam.DoFn):
        def process(self, element):
            if element == 5:
                ATTEMPTS.append(element)
                raise ValueError("five is not allowed here")
            yield element
"""


def test_a_loopback_job_whose_dofn_raises_fails_at_once_and_the_job_beside_it_finishes(tmp_path):
    # The job server's master is local[2,4]: Spark would run the failing task four times. The
    # DoFn raises on every attempt, so the job fails on the first, with the DoFn's error, while
    # another job runs beside it on the same SparkContext.
    module = user_module(tmp_path, "fails_at_five", FAILING_SOURCE)
    with job_server_elsewhere(tmp_path, "--backend", "spark") as endpoint:

        def failing(p):
            _ = p | beam.Create(list(range(12))) | beam.Reshuffle() | beam.ParDo(module.FailsAtFive())

        def good(p):
            doubled = p | "Good" >> beam.Create(list(range(40))) | beam.Reshuffle() | beam.Map(lambda x: 2 * x)
            assert_that(doubled, equal_to([2 * x for x in range(40)]))

        with futures.ThreadPoolExecutor(2) as pool:
            failed = pool.submit(_loopback_job, endpoint, failing)
            finished = pool.submit(_loopback_job, endpoint, good)
            with pytest.raises(RuntimeError, match="ValueError: five is not allowed here"):
                failed.result()
            finished.result()
    assert module.ATTEMPTS == [5]


def _loopback_job(endpoint: str, build) -> None:
    options = PipelineOptions(["--runner=PortableRunner", f"--job_endpoint={endpoint}", "--environment_type=LOOPBACK"])
    with beam.Pipeline(options=options) as p:
        build(p)
