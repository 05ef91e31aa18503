"""The seam between whoever runs a pipeline (ReferenceRunner, SparkRunner, the job server) and
what executes it: a Backend turns a pipeline proto into a Plan with its own Profile (so the
capability check, the job server's Prepare and the run give the same answer) and runs a Plan
under a Control, through which the caller cancels or drains the run and reads its metrics
while it runs."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from apache_beam.portability.api import beam_job_api_pb2, beam_runner_api_pb2

from reference_runner.graph import plan as planning
from reference_runner.graph.prepare import REFERENCE, SPARK, Profile
from reference_runner.knobs import Knobs
from reference_runner.metrics import merge_user_metrics


class Control:
    """A run as its caller sees it: ask it to cancel or drain; read its user metrics so far
    (committed: successful bundles once each; failed: what failed attempts reported)."""

    def __init__(self, job_id: str = "", message: Callable[[str], None] | None = None, worker_log=None):
        self.job_id = job_id  # names the run to the backend (descriptor ids, Spark job group)
        self.message = message or (lambda text: None)  # progress notes for the caller
        self.worker_log = worker_log  # LogEntry -> None: an SDK worker's log lines, for the caller
        self.cancelled = threading.Event()
        self.draining = threading.Event()
        self.committed: list = []
        self.failed: list = []
        self._lock = threading.Lock()
        self._listeners: list = []

    def cancel(self) -> None:
        self.cancelled.set()
        for listener in self._snapshot():
            listener.cancel()

    def drain(self) -> None:
        self.draining.set()
        for listener in self._snapshot():
            listener.drain()

    def attach(self, listener) -> None:
        """``listener.cancel()`` / ``.drain()`` are called on requests, now if already made."""
        with self._lock:
            self._listeners.append(listener)
        if self.cancelled.is_set():
            listener.cancel()
        if self.draining.is_set():
            listener.drain()

    def keep_metrics(self, user_infos: list, committed: bool) -> None:
        with self._lock:
            kept = self.committed if committed else self.failed
            kept[:] = merge_user_metrics(kept + user_infos)

    def metric_results(self) -> beam_job_api_pb2.MetricResults:
        """As the Job API reports them: attempted (every attempt) and committed."""
        with self._lock:
            committed, failed = list(self.committed), list(self.failed)
        return beam_job_api_pb2.MetricResults(
            attempted=merge_user_metrics(committed + failed), committed=merge_user_metrics(committed)
        )

    def ended(self) -> None:
        """The run is over: let go of what listened to it (an engine's whole state, a worker),
        keeping the metrics."""
        with self._lock:
            self._listeners = []

    def _snapshot(self) -> list:
        with self._lock:
            return list(self._listeners)


@dataclass
class Outcome:
    drained: bool = False  # the run ended because it was drained, not on its own


class Backend(Protocol):
    profile: Profile

    def prepare(self, proto: beam_runner_api_pb2.Pipeline) -> planning.Plan: ...

    def run(self, plan: planning.Plan, control: Control) -> Outcome: ...


class ReferenceBackend:
    """The reference engine on one SDK worker: a warm in-process one, or one ``workers`` gives
    (``workers(plan, state, control) -> (worker, release(healthy))``; the job server's pool)."""

    profile = REFERENCE

    def __init__(self, knobs: Knobs | None = None, workers=None, endpoint: str = "embedded"):
        self.knobs = knobs or Knobs()
        self.workers = workers
        self._endpoint = endpoint

    def prepare(self, proto: beam_runner_api_pb2.Pipeline) -> planning.Plan:
        # in process, the runner embeds every environment's user code itself: judge them too
        return planning.prepare(
            proto, self.profile, fuse=self.knobs.fuse, lift=self.knobs.lift, environments=self._endpoint == "embedded"
        )

    def run(self, plan: planning.Plan, control: Control) -> Outcome:
        from reference_runner.execute import Job, JobCancelled

        job = Job(plan, self.knobs, control, f"{control.job_id}/" if control.job_id else "", self._endpoint)
        control.attach(job)
        if control.cancelled.is_set():
            raise JobCancelled("cancelled before it started")
        if self.workers is None:
            job.run()
            return Outcome(job.drained)
        worker, release = self.workers(plan, job.state, control)
        healthy = False
        try:
            control.attach(_WorkerCancel(worker))
            if control.cancelled.is_set():
                raise JobCancelled("cancelled before it started")
            job.run(worker)
            healthy = True
        except JobCancelled:
            healthy = control.cancelled.is_set()
            raise
        finally:
            release(healthy)
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


class SparkBackend:
    """Spark through PySpark (reference_runner/spark/): batch pipelines as one Spark job,
    streaming ones as micro-batches. User code runs where spark/user_code.py decides: on
    Spark's own Python workers, or, given the ``job_server``'s address and its registry of
    ``held`` workers (spark/held_workers.py), on the workers of the job's environment, which
    each executor starts."""

    profile = SPARK

    def __init__(self, settings=None, job_server: str | None = None, held=None):
        from reference_runner.spark.runner import SparkSettings

        self.settings = settings or SparkSettings()
        self.job_server, self.held = job_server, held  # None in process

    def prepare(self, proto: beam_runner_api_pb2.Pipeline) -> planning.Plan:
        # embedded, the executors run every environment's user code themselves, as the in-process
        # runner does: the environments are judged alike (another SDK's is refused by name)
        code = self.user_code(proto.components)
        return planning.prepare(proto, self.profile, environments=code.embedded)

    def run(self, plan: planning.Plan, control: Control) -> Outcome:
        from reference_runner.spark.runner import run_plan

        code = self.user_code(plan.components)
        control.message(f"running on Spark ({self.settings.master}); user code on {code.description}")
        return Outcome(drained=run_plan(plan, self.settings, control, code, self.held))

    def user_code(self, components: beam_runner_api_pb2.Components):
        from reference_runner.graph.check import UnsupportedPipeline
        from reference_runner.spark import user_code
        from reference_runner.worker.pool import EnvironmentUnsupported

        try:
            return user_code.choose(components, self.job_server, self.settings.master)
        except EnvironmentUnsupported as e:
            raise UnsupportedPipeline([str(e)], self.profile.name) from None
