"""The reference engine as a Backend (backends.py): a Plan's stages on one SDK worker, either a
warm one embedded in this process (in-process runs, where the runner embeds every environment's
user code and so judges the environments at plan time) or one of the job's environment from a
WorkerPool (the job server's). Which one is decided here, once (``_user_code_worker``); the
run loop (executor/job.py) runs on the worker it is given."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from apache_beam.portability.api import beam_runner_api_pb2

from reference_runner.backends import Control, JobCancelled, Outcome
from reference_runner.executor.job import Job
from reference_runner.graph import plan as planning
from reference_runner.graph.descriptors import EMBEDDED_ENDPOINT
from reference_runner.graph.front_end import REFERENCE
from reference_runner.knobs import Knobs
from reference_runner.worker import warm
from reference_runner.worker.pool import WorkerPool, environment_of


class ReferenceBackend:
    """``pool`` and ``fn_endpoint`` (its Fn API server's address) for workers of the job's
    environment; neither for a warm embedded worker."""

    profile = REFERENCE

    def __init__(self, knobs: Knobs | None = None, pool: WorkerPool | None = None, fn_endpoint: str | None = None):
        if (pool is None) != (fn_endpoint is None):
            raise ValueError("a worker pool comes with the address of its Fn API server")
        self.knobs = knobs or Knobs()
        self.pool = pool
        self.fn_endpoint = fn_endpoint

    @property
    def embeds_user_code(self) -> bool:
        return self.pool is None

    def plan(self, proto: beam_runner_api_pb2.Pipeline) -> planning.Plan:
        return planning.build_plan(
            proto, self.profile, fuse=self.knobs.fuse, lift=self.knobs.lift, environments=self.embeds_user_code
        )

    def run(self, plan: planning.Plan, control: Control) -> Outcome:
        # a reused worker may have run other jobs: the job server's job id keeps descriptor ids apart
        prefix = f"{control.job_id}/" if control.job_id else ""
        job = Job(plan, self.knobs, control, prefix, self.fn_endpoint or EMBEDDED_ENDPOINT)
        with self._user_code_worker(plan, job, control) as worker:
            job.run(worker)
        return Outcome(job.drained)

    @contextlib.contextmanager
    def _user_code_worker(self, plan: planning.Plan, job: Job, control: Control) -> Iterator:
        """The SDK worker that runs the job's user code, serving its state, given back when the
        job's run ends."""
        if self.pool is None:  # in process: a warm embedded worker, kept warm if the job succeeded
            worker, succeeded = warm.acquire(job.state), False
            try:
                yield worker
                succeeded = True
            finally:
                warm.release(worker, succeeded)
            return
        env = environment_of(plan.components)
        worker, lease = self.pool.acquire(env, job.state, control.worker_log)
        control.message(f"running on {_describe(env)}; {len(plan.stages)} stages")
        stop_waiting = getattr(worker, "cancelled", None)  # a remote worker's wait for a bundle
        if stop_waiting is not None:  # a cancel abandons the running bundle (the worker is stopped)
            control.token.on_cancel(stop_waiting.set)
        healthy = False
        try:
            yield worker
            healthy = True
        except JobCancelled:
            healthy = control.token.cancelled
            raise
        finally:
            # Stopped, and released (or replaced by a spare if healthy) before the job reports
            # its end, so that DoFn teardown has run by then.
            worker.stop()
            self.pool.release(lease, env, healthy)


def _describe(env: beam_runner_api_pb2.Environment) -> str:
    return env.urn.replace("beam:env:", "").replace(":v1", "") + " worker"
