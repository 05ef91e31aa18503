"""The seam between whoever runs a pipeline (the in-process runners and the job server, through
lifecycle.py) and what executes it, and nothing else: a Backend turns a pipeline proto into a
Plan with its own Profile (so the capability check and the run give the same answer) and runs
that Plan under a Control, through which the caller cancels or drains the run and reads its
metrics while it runs. The backends themselves live with their code: executor/backend.py (the
reference engine) and spark/backend.py."""

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

    def plan(self, proto: beam_runner_api_pb2.Pipeline) -> planning.Plan:
        """The checked Plan of ``proto`` (UnsupportedPipeline names every problem)."""
        ...

    def run(self, plan: planning.Plan, control: Control) -> Outcome:
        """Run ``plan`` to its end, its drain (Outcome.drained) or its cancellation (JobCancelled)."""
        ...
