"""The seam between whoever runs a pipeline (the in-process runners and the job server, through
lifecycle.py) and what executes it, and nothing else: a Backend turns a pipeline proto into a
Plan with its own Profile (so the capability check and the run give the same answer) and runs
that Plan under a Control, which carries the job's CancelToken (cancel and drain) down to the
backend's run loop and its metrics back up while it runs. The backends themselves live with
their code: executor/reference_backend.py (the reference engine) and spark/spark_backend.py."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from apache_beam.portability.api import beam_job_api_pb2, beam_runner_api_pb2

from reference_runner.graph import plan as planning
from reference_runner.graph.front_end import Profile
from reference_runner.metrics import merge_user_metrics


class JobCancelled(RuntimeError):
    """Someone cancelled the job; a backend stops with this (the run's end, not a failure)."""


class _Request:
    """One request a job may get (cancel, or drain): whether it was made, and the wake-ups to call
    when it is (at once, for one registered after)."""

    def __init__(self) -> None:
        self._made = threading.Event()
        self._lock = threading.Lock()
        self._wakes: list[Callable[[], None]] = []

    def made(self) -> bool:
        return self._made.is_set()

    def make(self) -> None:
        self._made.set()
        with self._lock:
            wakes = list(self._wakes)
        for wake in wakes:
            wake()

    def on_made(self, wake: Callable[[], None]) -> None:
        with self._lock:
            self._wakes.append(wake)
        if self._made.is_set():
            wake()

    def forget_wake_ups(self) -> None:
        with self._lock:
            self._wakes = []


class CancelToken:
    """Whether the job was asked to cancel or to drain: set by its owner (lifecycle.JobRecord, for
    the Job API's Cancel and Drain and the in-process result), read by the backends' run loops
    between steps. The one place a run's cancel and drain are held; nothing keeps a copy.

    A run blocked where no loop reads the token (a wall clock waiting for a timer, a worker's
    bundle, a Spark job group) registers a wake-up with ``on_cancel``/``on_drain``; wake-ups hold
    no state of their own."""

    def __init__(self) -> None:
        self._cancel = _Request()
        self._drain = _Request()

    @property
    def cancelled(self) -> bool:
        return self._cancel.made()

    @property
    def draining(self) -> bool:
        return self._drain.made()

    def raise_if_cancelled(self) -> None:
        """What a loop calls between two steps: a cancelled run stops here."""
        if self._cancel.made():
            raise JobCancelled("the job was cancelled")

    def cancel(self) -> None:
        self._cancel.make()

    def drain(self) -> None:
        self._drain.make()

    def on_cancel(self, wake: Callable[[], None]) -> None:
        """Call ``wake`` when the job is cancelled (now, if it was already)."""
        self._cancel.on_made(wake)

    def on_drain(self, wake: Callable[[], None]) -> None:
        """Call ``wake`` when the job is asked to drain (now, if it was already)."""
        self._drain.on_made(wake)

    def forget_wake_ups(self) -> None:
        """The run is over: let go of what its wake-ups hold (an engine's clock, a worker)."""
        self._cancel.forget_wake_ups()
        self._drain.forget_wake_ups()


class Control:
    """A run as its backend sees it: the job's ``token`` to read (cancel, drain), where its
    progress notes and its SDK workers' log lines go, and its user metrics so far (committed:
    successful bundles once each; failed: what failed attempts reported), which the caller reads
    while it runs."""

    def __init__(self, job_id: str = "", message: Callable[[str], None] | None = None, worker_log=None):
        self.job_id = job_id  # the Job API's job id ("" in process): names the run in logs and Spark's UI
        self.message = message or (lambda text: None)  # progress notes for the caller
        self.worker_log = worker_log  # LogEntry -> None: an SDK worker's log lines, for the caller
        self.token = CancelToken()
        self.committed: list = []
        self.failed: list = []
        self._lock = threading.Lock()

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
        """The run is over: let go of what listened to it (an engine's clock, a worker),
        keeping the metrics."""
        self.token.forget_wake_ups()


@dataclass
class Outcome:
    drained: bool = False  # the run ended because it was drained, not on its own


class Backend(Protocol):
    profile: Profile

    def plan(self, proto: beam_runner_api_pb2.Pipeline) -> planning.Plan:
        """The checked Plan of ``proto`` (UnsupportedPipeline names every problem)."""
        ...

    def run(self, plan: planning.Plan, control: Control) -> Outcome:
        """Run ``plan`` to its end, its drain (Outcome.drained) or its cancellation (JobCancelled)."""
        ...
