"""Streaming on the Spark backend (reference_runner/spark/streaming.py) as users reach it: a
TestStream pipeline through SparkRunner, and unbounded jobs over the Job API of
``reference-runner serve --backend spark``, drained and cancelled while they run. (The
conformance suite runs every streaming case on the ``spark`` target; these cover the job's
life around it.)"""

import apache_beam as beam
import pytest
from apache_beam.metrics import Metrics
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing import test_stream
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms import trigger, window

from spark_fault_stream import run_in_own_process
from test_drain import _job_api, _job_counters, _job_state, _portable, unbounded_counts, wait_for

pytest.importorskip("pyspark")

from reference_runner.spark.spark_runner import SparkRunner  # noqa: E402


def test_a_test_stream_with_early_and_late_panes_runs_on_spark():
    # Early panes by count, the on-time pane at the watermark, then a late pane for the element
    # that arrives behind the watermark but within the allowed lateness; discarding.
    stream = (
        test_stream.TestStream()
        .add_elements([window.TimestampedValue(("k", v), v) for v in (1, 2)])
        .add_elements([window.TimestampedValue(("k", 3), 3)])
        .advance_watermark_to(10)
        .add_elements([window.TimestampedValue(("k", 4), 4)])
        .advance_watermark_to_infinity()
    )
    with beam.Pipeline(runner=SparkRunner(), options=PipelineOptions(["--streaming"])) as p:
        sums = (
            p
            | stream
            | beam.WindowInto(
                window.FixedWindows(10),
                trigger=trigger.AfterWatermark(early=trigger.AfterCount(2), late=trigger.AfterCount(1)),
                accumulation_mode=trigger.AccumulationMode.DISCARDING,
                allowed_lateness=60,
            )
            | beam.CombinePerKey(sum)
            | beam.Map(lambda kv, pane=beam.DoFn.PaneInfoParam: (kv[1], pane.timing))
        )
        # EARLY 1+2; ON_TIME 3; LATE 4; at expiry the final pane, empty (the Python SDK declares
        # ClosingBehavior EMIT_ALWAYS)
        assert_that(sums, equal_to([(3, 0), (3, 1), (4, 2), (0, 2)]))


class _CountBundles(beam.DoFn):
    def start_bundle(self):
        Metrics.counter("seeded", "bundles").inc()

    def process(self, kv):
        yield kv


def _bundles_with_seed(seed, job_server=None):
    """Two TestStream events of 40 elements each through a counting ParDo and a sum per fixed
    window (checked in the pipeline); the bundles the ParDo saw. Through SparkRunner, or with
    --spark_seed through ``job_server``'s Job API."""
    stream = test_stream.TestStream()
    for start in (0, 100):
        stream = stream.add_elements([window.TimestampedValue(("k", i), i) for i in range(start, start + 40)])
        stream = stream.advance_watermark_to(start + 100)
    stream = stream.advance_watermark_to_infinity()
    if job_server is None:
        p = beam.Pipeline(runner=SparkRunner(seed=seed), options=PipelineOptions(["--streaming"]))
    else:
        p = beam.Pipeline(options=_portable(job_server, "--streaming", *([f"--spark_seed={seed}"] if seed else [])))
    sums = (
        p
        | stream
        | beam.ParDo(_CountBundles())
        | beam.WindowInto(window.FixedWindows(100))
        | beam.CombinePerKey(sum)
        | beam.Map(lambda kv, w=beam.DoFn.WindowParam: (int(w.start), kv[1]))
    )
    assert_that(sums, equal_to([(0, sum(range(40))), (100, sum(range(100, 140)))]))
    result = p.run()
    result.wait_until_finish()
    [bundles] = result.metrics().query(MetricsFilter().with_name("bundles"))["counters"]
    return bundles.committed


def test_a_seed_cuts_events_into_micro_batches_and_bundles_without_changing_the_result():
    # Unseeded, each event is one micro-batch: a bundle per partition (local[2]: two). Seeded,
    # an event's elements arrive over several passes in bundles of seeded sizes; the same seed
    # gives the same boundaries, and every result is the same (checked in each pipeline).
    whole = _bundles_with_seed(None)
    assert whole <= 4
    seeded = _bundles_with_seed(7)
    assert seeded > whole
    assert _bundles_with_seed(7) == seeded


@pytest.fixture(scope="module")
def spark_server():
    from reference_runner.jobserver.server import JobServer

    running = JobServer(port=0, backend="spark").start()
    yield running
    running.stop()


def test_a_jobs_spark_seed_reaches_the_job_server(spark_server):
    # --spark_seed is a pipeline option of the job: over the Job API it cuts the same micro-batches
    # and bundles as through SparkRunner in process.
    assert _bundles_with_seed(None, spark_server) <= 4
    assert _bundles_with_seed(7, spark_server) == _bundles_with_seed(7)


def test_a_bad_per_job_spark_option_is_refused_at_prepare_naming_it(spark_server):
    import grpc
    from apache_beam.portability.api import beam_job_api_pb2
    from google.protobuf import struct_pb2

    p = beam.Pipeline()
    _ = p | beam.Create([1]) | beam.Map(str)
    for option, value in (("spark_bundle_size", 0), ("spark_seed", "seven")):
        options = struct_pb2.Struct()
        options.update({f"beam:option:{option}:v1": value})
        request = beam_job_api_pb2.PrepareJobRequest(pipeline=p.to_runner_api(), job_name="p", pipeline_options=options)
        with pytest.raises(grpc.RpcError) as info:
            _job_api(spark_server).Prepare(request, timeout=60)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert f"{option} must be" in info.value.details(), info.value.details()


def _start_unbounded_job(server):
    """The drain tests' unbounded counting pipeline, submitted: (Job API stub, job id)."""
    p = beam.Pipeline(options=_portable(server, "--streaming"))
    unbounded_counts(p)
    return _job_api(server), p.run()._job_id


def test_an_unbounded_job_on_spark_drains_over_the_job_api(spark_server):
    from apache_beam.portability.api import beam_job_api_pb2

    State = beam_job_api_pb2.JobState
    stub, job_id = _start_unbounded_job(spark_server)
    wait_for(lambda: _job_counters(stub, job_id).get("windows", 0) >= 2, "windows to fire while running", 300)
    assert _job_state(stub, job_id) == State.RUNNING
    stub.Drain(beam_job_api_pb2.DrainJobRequest(job_id=job_id), timeout=10)
    wait_for(lambda: _job_state(stub, job_id) == State.DRAINED, "the job to drain", 300)
    states = [
        e.state_response.state
        for e in stub.GetMessageStream(beam_job_api_pb2.JobMessagesRequest(job_id=job_id), timeout=10)
        if e.HasField("state_response")
    ]
    assert states[-3:] == [State.RUNNING, State.DRAINING, State.DRAINED]
    found = _job_counters(stub, job_id)
    # (the windows' contents are counted by Spark's workers: the committed counters tell them)
    assert found.get("truncated", 0) >= 1, found  # the source's truncate ran
    assert found["counted"] == found["read"], found  # every element read was counted, once
    assert found["windows"] == -(-found["read"] // 1000), found  # a window per 1000 elements, the last partial


def test_an_unbounded_job_on_spark_is_cancelled_over_the_job_api(spark_server):
    from apache_beam.portability.api import beam_job_api_pb2

    State = beam_job_api_pb2.JobState
    stub, job_id = _start_unbounded_job(spark_server)
    wait_for(lambda: _job_counters(stub, job_id).get("read", 0) > 0, "the source to read", 300)
    stub.Cancel(beam_job_api_pb2.CancelJobRequest(job_id=job_id), timeout=10)
    wait_for(lambda: _job_state(stub, job_id) == State.CANCELLED, "the job to be cancelled", 300)


def test_a_task_failing_once_in_a_stream_changes_nothing_committed(tmp_path):
    # local[2,4]: four attempts per task. The Python worker running a DoFn dies at one element,
    # once; Spark runs the task again: the output is the model's (checked in the pipeline) and the
    # committed counter counts each element once (the failed attempt's reports never reach the
    # driver). Its own process: one SparkSession per process.
    run_in_own_process("local[2,4]", "task", tmp_path)
