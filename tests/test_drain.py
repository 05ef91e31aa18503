"""Draining an unbounded pipeline: the job stops reading new input, truncates what its
splittable DoFns had left to do (their truncate), finishes everything else (windows fire,
final panes) and ends DRAINED, with nothing it had already read lost. Unbounded pipelines run
in the background (``run()`` returns a running result); bounded ones finish inside ``run()``."""

import time

import apache_beam as beam
import pytest
from apache_beam.io.restriction_trackers import OffsetRange, OffsetRestrictionTracker
from apache_beam.io.watermark_estimators import ManualWatermarkEstimator
from apache_beam.metrics import Metrics
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.runner import PipelineState
from apache_beam.testing import test_stream
from apache_beam.transforms import window
from apache_beam.utils.timestamp import Duration, Timestamp

from reference_runner import ReferenceRunner

WINDOWS: list = []  # (window start in s, count), as windows fire
CHUNK = 100  # elements per self-checkpoint


class _UnboundedTracker(OffsetRestrictionTracker):
    def is_bounded(self):
        return False


class _Endless(beam.transforms.core.RestrictionProvider):
    """Offsets without end: the SDK's default truncate gives nothing back for them."""

    def initial_restriction(self, element):
        return OffsetRange(0, 2**60)

    def create_tracker(self, restriction):
        return _UnboundedTracker(restriction)

    def restriction_size(self, element, restriction):
        return restriction.size()

    def truncate(self, element, restriction):
        Metrics.counter("drain", "truncated").inc()
        return super().truncate(element, restriction)


@beam.DoFn.unbounded_per_element()
class _Source(beam.DoFn):
    """Element i at i ms, CHUNK per self-checkpoint, forever; the watermark follows."""

    def __init__(self, resume_delay: float = 0):
        self.resume_delay = resume_delay

    def process(
        self,
        element,
        tracker=beam.DoFn.RestrictionParam(_Endless()),
        estimator=beam.DoFn.WatermarkEstimatorParam(ManualWatermarkEstimator.default_provider()),
    ):
        read = Metrics.counter("drain", "read")
        position = tracker.current_restriction().start
        while position < tracker.current_restriction().start + CHUNK and tracker.try_claim(position):
            read.inc()
            yield window.TimestampedValue(("k", 1), Timestamp(micros=position * 1000))
            position += 1
        estimator.set_watermark(Timestamp(micros=position * 1000))
        tracker.defer_remainder(Duration(seconds=self.resume_delay) if self.resume_delay else None)


class _Seen(beam.DoFn):
    def process(self, x):
        Metrics.counter("drain", "seen").inc()
        yield x


class _Record(beam.DoFn):
    def process(self, kv, w=beam.DoFn.WindowParam):
        Metrics.counter("drain", "windows").inc()
        Metrics.counter("drain", "counted").inc(kv[1])
        WINDOWS.append((w.start.micros // 1_000_000, kv[1]))
        yield kv


def unbounded_counts(p, resume_delay: float = 0):
    return (
        p
        | beam.Create(["source"])
        | beam.ParDo(_Source(resume_delay))
        | beam.WindowInto(window.FixedWindows(1))
        | beam.CombinePerKey(sum)
        | beam.ParDo(_Record())
    )


def counters(metrics_of) -> dict:
    return {
        c.key.metric.name: c.committed
        for c in metrics_of().query(MetricsFilter())["counters"]
        if c.key.metric.namespace == "drain"
    }


def wait_for(condition, what: str, limit: float = 120):
    """Poll until ``condition()``: a guard against a hang, not a timing assertion."""
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.05)


def check_drained(found: dict, windows: list) -> None:
    read = found["read"]
    assert found.get("truncated", 0) >= 1, found  # the source's truncate ran
    assert found["counted"] == read, found  # every element read was counted, once
    starts = sorted(start for start, _ in windows)
    assert starts == list(range(len(starts))), starts  # every window fired once, none skipped
    full, rest = divmod(read, 1000)
    expected = [1000] * full + ([rest] if rest else [])
    assert [count for _, count in sorted(windows)] == expected  # the last window's final pane too


@pytest.mark.parametrize(
    "knobs",
    [dict(clock="virtual"), dict(clock="wall"), dict(bundle_size="random", splits="random", faults=0.2, seed=3)],
)
def test_drain_truncates_the_source_and_fires_every_window(knobs):
    # (with faults: retried attempts, truncation ones included, change nothing committed)
    WINDOWS.clear()
    p = beam.Pipeline(runner=ReferenceRunner(**knobs), options=PipelineOptions(["--streaming"]))
    unbounded_counts(p)
    result = p.run()
    assert result.state == PipelineState.RUNNING
    wait_for(lambda: counters(result.metrics).get("windows", 0) >= 2, "windows to fire while running")
    assert result.drain() == PipelineState.DRAINED
    assert result.state == PipelineState.DRAINED
    assert result.wait_until_finish() == PipelineState.DRAINED
    check_drained(counters(result.metrics), WINDOWS)


def test_drain_does_not_wait_for_a_far_off_resume_on_the_wall_clock():
    # The source asks to resume in an hour; the wall clock waits for that, drain interrupts it.
    WINDOWS.clear()
    p = beam.Pipeline(runner=ReferenceRunner(clock="wall"), options=PipelineOptions(["--streaming"]))
    unbounded_counts(p, resume_delay=3600)
    result = p.run()
    wait_for(lambda: counters(result.metrics).get("read", 0) >= CHUNK, "the first chunk")
    assert result.drain() == PipelineState.DRAINED
    check_drained(counters(result.metrics), WINDOWS)


def test_drain_stops_a_test_stream_and_fires_what_it_had():
    # A TestStream that would go on to add more elements after a long processing-time wait (on
    # the wall clock): drained during the wait, its remaining events are dropped, its watermark
    # goes to +infinity and the window fires with what was read.
    WINDOWS.clear()
    stream = (
        test_stream.TestStream()
        .add_elements([window.TimestampedValue(("k", 1), t) for t in (0.1, 0.2, 1.5)])
        .advance_processing_time(3600)
        .add_elements([window.TimestampedValue(("k", 1), 0.3)])
    )
    p = beam.Pipeline(runner=ReferenceRunner(clock="wall"))
    _ = (
        p
        | stream
        | beam.ParDo(_Seen())
        | beam.WindowInto(window.FixedWindows(1))
        | beam.CombinePerKey(sum)
        | beam.ParDo(_Record())
    )
    result = p.run()
    wait_for(lambda: counters(result.metrics).get("seen") == 3, "the first elements")
    assert result.drain() == PipelineState.DRAINED
    assert sorted(WINDOWS) == [(0, 2), (1, 1)]


def test_cancel_stops_an_unbounded_job():
    p = beam.Pipeline(runner=ReferenceRunner(), options=PipelineOptions(["--streaming"]))
    unbounded_counts(p)
    result = p.run()
    wait_for(lambda: counters(result.metrics).get("read", 0) > 0, "the source to read")
    assert result.cancel() == PipelineState.CANCELLED
    assert result.wait_until_finish() == PipelineState.CANCELLED


def test_a_failing_unbounded_job_fails_in_wait_until_finish():
    def explode(x):
        raise ValueError("bad element")

    p = beam.Pipeline(runner=ReferenceRunner(), options=PipelineOptions(["--streaming"]))
    _ = p | beam.Create([1]) | beam.Map(explode)
    result = p.run()  # started in the background: the failure comes from waiting
    with pytest.raises(Exception, match="bad element"):
        result.wait_until_finish()
    assert result.state == PipelineState.FAILED


def test_draining_a_finished_bounded_job_keeps_its_state():
    p = beam.Pipeline(runner=ReferenceRunner())
    _ = p | beam.Create([1, 2]) | beam.Map(lambda x: x)
    result = p.run()  # bounded: done inside run()
    assert result.state == PipelineState.DONE
    assert result.drain() == PipelineState.DONE


# --------------------------------------------------------------------------- over the Job API


@pytest.fixture(scope="module")
def server():
    from reference_runner.jobserver.server import JobServer

    running = JobServer(port=0, worker_timeout=240, bundle_timeout=240).start()
    yield running
    running.stop()


def _job_api(server):
    import grpc
    from apache_beam.portability.api import beam_job_api_pb2_grpc

    return beam_job_api_pb2_grpc.JobServiceStub(grpc.insecure_channel(server.address))


def _portable(server, *extra) -> PipelineOptions:
    return PipelineOptions(
        [f"--job_endpoint={server.address}", "--runner=PortableRunner", "--environment_type=LOOPBACK", *extra]
    )


def _job_counters(stub, job_id: str) -> dict:
    from apache_beam.portability.api import beam_job_api_pb2
    from apache_beam.runners.portability.portable_runner import PortableMetrics

    response = stub.GetJobMetrics(beam_job_api_pb2.GetJobMetricsRequest(job_id=job_id), timeout=10)
    return counters(lambda: PortableMetrics(response))


def _job_state(stub, job_id: str):
    from apache_beam.portability.api import beam_job_api_pb2

    return stub.GetState(beam_job_api_pb2.GetJobStateRequest(job_id=job_id), timeout=10).state


def test_drain_over_the_job_api(server):
    from apache_beam.portability.api import beam_job_api_pb2

    State = beam_job_api_pb2.JobState
    WINDOWS.clear()
    p = beam.Pipeline(options=_portable(server, "--streaming"))
    unbounded_counts(p)
    job_id = p.run()._job_id
    stub = _job_api(server)
    wait_for(lambda: _job_counters(stub, job_id).get("windows", 0) >= 2, "windows to fire while running")
    assert _job_state(stub, job_id) == State.RUNNING
    answer = stub.Drain(beam_job_api_pb2.DrainJobRequest(job_id=job_id), timeout=10)
    assert answer.state in (State.DRAINING, State.DRAINED)
    wait_for(lambda: _job_state(stub, job_id) == State.DRAINED, "the job to drain")
    states = [
        e.state_response.state
        for e in stub.GetMessageStream(beam_job_api_pb2.JobMessagesRequest(job_id=job_id), timeout=10)
        if e.HasField("state_response")
    ]
    assert states[-3:] == [State.RUNNING, State.DRAINING, State.DRAINED]
    check_drained(_job_counters(stub, job_id), WINDOWS)


def test_draining_a_finished_job_over_the_job_api_keeps_its_state(server):
    from apache_beam.portability.api import beam_job_api_pb2

    p = beam.Pipeline(options=_portable(server))
    _ = p | beam.Create([1, 2]) | beam.Map(lambda x: x)
    result = p.run()
    assert result.wait_until_finish() == "DONE"
    answer = _job_api(server).Drain(beam_job_api_pb2.DrainJobRequest(job_id=result._job_id), timeout=10)
    assert answer.state == beam_job_api_pb2.JobState.DONE


def test_the_clock_knob_reaches_the_job_server(server):
    # On the wall clock a TestStream's processing-time advance of 1 s takes at least 1 s.
    stream = test_stream.TestStream().add_elements([1]).advance_processing_time(1).add_elements([2])
    p = beam.Pipeline(options=_portable(server, "--reference_clock=wall"))
    _ = p | stream | beam.Map(lambda x: x)
    started = time.monotonic()
    assert p.run().wait_until_finish() == "DONE"
    assert time.monotonic() - started >= 1
