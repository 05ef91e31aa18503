"""The reference engine as a Backend (backends.py): a Plan's stages on one SDK worker, either a
warm one embedded in this process (in-process runs, where the runner embeds every environment's
user code and so judges the environments at plan time) or one of the job's environment from a
WorkerPool (the job server's)."""

from __future__ import annotations

from apache_beam.portability.api import beam_runner_api_pb2

from reference_runner.backends import Control, JobCancelled, Outcome
from reference_runner.executor.job import Job
from reference_runner.graph import plan as planning
from reference_runner.graph.descriptors import EMBEDDED_ENDPOINT
from reference_runner.graph.front_end import REFERENCE
from reference_runner.knobs import Knobs
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
        endpoint = self.fn_endpoint or EMBEDDED_ENDPOINT
        job = Job(plan, self.knobs, control, f"{control.job_id}/" if control.job_id else "", endpoint)
        control.attach(job)
        if self.pool is None:
            job.run()
            return Outcome(job.drained)
        # Released (stopped, or kept as a spare if healthy) before the job reports its end, so
        # that DoFn teardown has run by then.
        env = environment_of(plan.components)
        worker, token = self.pool.acquire(env, job.state, control.worker_log)
        control.message(f"running on {_describe(env)}; {len(plan.stages)} stages")
        healthy = False
        try:
            control.attach(_WorkerCancel(worker))
            job.run(worker)
            healthy = True
        except JobCancelled:
            healthy = control.cancelled.is_set()
            raise
        finally:
            self.pool.release(token, env, healthy)
        return Outcome(job.drained)


class _WorkerCancel:
    """A remote worker's running bundle is abandoned (and the worker stopped) on cancel."""

    def __init__(self, worker):
        self._worker = worker

    def cancel(self) -> None:
        cancelled = getattr(self._worker, "cancelled", None)
        if cancelled is not None:
            cancelled.set()

    def drain(self) -> None:
        pass


def _describe(env: beam_runner_api_pb2.Environment) -> str:
    return env.urn.replace("beam:env:", "").replace(":v1", "") + " worker"
