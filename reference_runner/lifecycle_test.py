"""One job's lifecycle (lifecycle.JobRecord) on the real reference backend: the states a job goes
through, cancel before it started, and a failure kept for the caller."""

import apache_beam as beam
from apache_beam.portability.api import beam_job_api_pb2

from reference_runner.executor.reference_backend import ReferenceBackend
from reference_runner.lifecycle import JobRecord

State = beam_job_api_pb2.JobState
_SEEN: list = []


def _job(fn) -> JobRecord:
    p = beam.Pipeline()
    _ = p | beam.Create([1, 2, 3]) | beam.Map(fn)
    backend = ReferenceBackend()
    return JobRecord("job-1", "lifecycle", backend, backend.plan(p.to_runner_api()))


def _states(job: JobRecord) -> list:
    return [e.state_response.state for e in job.events if e.HasField("state_response")]


def test_a_job_goes_starting_running_done():
    job = _job(_SEEN.append)
    job.run()
    assert _states(job) == [State.STARTING, State.RUNNING, State.DONE]
    assert job.error is None and job.backend is None and job.plan is None  # let go of once ended


def test_a_job_cancelled_before_it_started_never_runs():
    _SEEN.clear()
    job = _job(_SEEN.append)
    job.cancel()
    job.run()
    assert _states(job) == [State.STARTING, State.CANCELLING, State.CANCELLED]
    assert _SEEN == []


def _fail(x):
    raise ValueError(f"lifecycle-boom-{x}")


def test_a_failed_job_keeps_its_error_and_says_it():
    job = _job(_fail)
    job.start()
    assert job.wait(120)
    assert job.state == State.FAILED
    assert "lifecycle-boom" in str(job.error)
    errors = [
        e.message_response.message_text
        for e in job.events
        if e.HasField("message_response")
        and e.message_response.importance == beam_job_api_pb2.JobMessage.JOB_MESSAGE_ERROR
    ]
    assert len(errors) == 1 and "lifecycle-boom" in errors[0]


_RUNNING: list = []  # the job a DoFn cancels from inside its first bundle
_AFTER_THE_CANCEL: list = []


def _cancel_the_job(x):
    if _RUNNING:  # once
        _RUNNING.pop().cancel()
    return x


def test_a_cancel_while_running_reaches_the_run_loop_between_bundles():
    _AFTER_THE_CANCEL.clear()
    p = beam.Pipeline()
    _ = (
        p
        | beam.Create([1, 2, 3])
        | beam.Map(_cancel_the_job)
        | beam.Reshuffle()  # a stage of its own: another bundle, which the loop never starts
        | beam.Map(_AFTER_THE_CANCEL.append)
    )
    backend = ReferenceBackend()
    job = JobRecord("job-2", "cancelled-while-running", backend, backend.plan(p.to_runner_api()))
    _RUNNING[:] = [job]
    job.run()
    assert _states(job) == [State.STARTING, State.RUNNING, State.CANCELLING, State.CANCELLED]
    assert _AFTER_THE_CANCEL == []
    assert job.error is None  # a cancel is the run's end, not its failure
