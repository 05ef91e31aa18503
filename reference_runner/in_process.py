"""A pipeline run in this process on a backend (ReferenceRunner, SparkRunner), as Beam's
PipelineResult, through the same job lifecycle the job server runs its jobs with
(lifecycle.JobRecord).

A bounded pipeline runs to completion inside ``run()``, its errors raised from there. An
unbounded one (TestStream, unbounded PCollections, or ``--streaming``) may never end by itself:
it runs on a thread of its own and ``run()`` returns a result to wait for, cancel or drain.
"""

from __future__ import annotations

from apache_beam.portability.api import beam_job_api_pb2, beam_runner_api_pb2
from apache_beam.runners.portability.portable_runner import PortableMetrics
from apache_beam.runners.runner import PipelineResult, PipelineState

from reference_runner.backends import Backend
from reference_runner.lifecycle import JobRecord

_JobState = beam_job_api_pb2.JobState
# the lifecycle's steps before and around running that Beam's in-process results do not show
_SHOWN_AS_RUNNING = {_JobState.STARTING, _JobState.CANCELLING}


def run_on(backend: Backend, proto: beam_runner_api_pb2.Pipeline, streaming: bool = False) -> PipelineResult:
    """Run ``proto`` on ``backend``: a bounded pipeline to its end, here; an unbounded one (or
    any, given Beam's ``streaming`` option) on a thread of its own, returning a running result."""
    plan = backend.plan(proto)  # raises for unsupported pipelines, before anything runs
    job = JobRecord("", "", backend, plan)  # no job id: descriptor ids stay the plan's own
    if plan.unbounded or streaming:
        job.start()
        return InProcessResult(job)
    job.run()
    if job.error is not None:
        raise job.error
    return InProcessResult(job)


class InProcessResult(PipelineResult):
    """The job's state as Beam names it: RUNNING (from the moment ``run()`` returned; DRAINING
    once asked to drain), then DONE, FAILED, CANCELLED or DRAINED. ``wait_until_finish``
    re-raises the job's failure."""

    def __init__(self, job: JobRecord):
        super().__init__(PipelineState.RUNNING)
        self._job = job

    @property
    def state(self):
        state = self._job.state
        if state in _SHOWN_AS_RUNNING:
            return PipelineState.RUNNING
        return getattr(PipelineState, _JobState.Enum.Name(state))

    def wait_until_finish(self, duration=None):
        """Wait ``duration`` milliseconds (None: until the end). The final state, or None if
        the job is still running."""
        if not self._job.wait(None if duration is None else duration / 1000):
            return None
        if self._job.error is not None:
            raise self._job.error
        return self.state

    def cancel(self):
        self._job.cancel()
        self._job.wait()
        return self.state

    def drain(self):
        """Stop reading new input, truncate splittable DoFns' remaining work, finish the rest
        (windows, triggers' final panes, event-time timers) and end DRAINED; wait for that.
        A job that ended already keeps its state."""
        self._job.drain()
        self._job.wait()
        return self.state

    def metrics(self):
        return PortableMetrics(beam_job_api_pb2.GetJobMetricsResponse(metrics=self._job.metrics()))


__all__ = ["InProcessResult", "run_on"]
