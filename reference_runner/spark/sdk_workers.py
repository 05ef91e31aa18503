"""A Spark task's SDK worker, in the executor's Python worker process, as the job's UserCode says.

- Embedded: Beam's Python SDK harness in this process, warm between tasks where that is safe
  (worker/warm.py).
- The environment's own workers: this process keeps one Fn API server (which provisions them
  too) and one worker pool (worker/pool.py, the job server's kind) for its life. The first task
  of a job here starts a worker of the environment; later tasks of the job reuse it, and it is
  stopped when the driver releases the job's workers at its end (spark/held_workers.py), or at
  once if a task on it fails.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass

from apache_beam.portability.api import beam_runner_api_pb2

from reference_runner.graph.descriptors import EMBEDDED_ENDPOINT
from reference_runner.spark.held_workers import announce, release_handler
from reference_runner.spark.user_code import UserCode
from reference_runner.worker import warm
from reference_runner.worker.embedded import EmbeddedWorker
from reference_runner.worker.fnapi_server import FnApiServer
from reference_runner.worker.pool import WorkerPool
from reference_runner.worker.remote import RemoteWorker
from reference_runner.worker.state import StateService

# PySpark runs a full gc.collect() after every task of a reused Python worker, over everything
# the worker keeps: a warm worker holding the processors of up to 500 stages made the workers'
# CPU per tiny job grow from 0.10 s to 0.35 s over a hundred jobs; at 16 it stays about 0.10 s.
# (Stages of another case rarely match by content, so few of those processors were reused.)
WARM_DESCRIPTORS = 16

# When a job's worker stops, a fresh one of an environment that can serve again (a PROCESS
# command, an EXTERNAL pool that has served two jobs; never a LOOPBACK pool) is started at once
# for the next job (worker/pool.py): starting one took a tiny job over the job server from
# 0.21 s (embedded) to 1.6 s. One per Python worker process, stopped after 50 s idle, before
# Spark stops an idle Python worker (60 s); a spare whose process went anyway loses its control
# stream, and a Beam harness exits then.
SPARES = 1
SPARE_IDLE_SECONDS = 50


@dataclass
class Lease:
    """A worker for one task. ``endpoint``: the Fn API address its descriptors must name."""

    worker: EmbeddedWorker | RemoteWorker
    endpoint: str
    _release: Callable[[bool], None]

    def release(self, succeeded: bool) -> None:
        """The task is done with the worker (``succeeded``: it may serve another task)."""
        self._release(succeeded)


def lease(code: UserCode, state: StateService, job: str, warm_worker: bool = False) -> Lease:
    """A worker answering ``state`` for a task of ``job``; ``warm_worker``: an embedded one may
    come from, and go back to, this process's warm workers."""
    if code.embedded:
        if warm_worker:
            kept = warm.acquire(state)
            return Lease(kept, EMBEDDED_ENDPOINT, lambda ok: warm.release(kept, ok, WARM_DESCRIPTORS))
        fresh = EmbeddedWorker(state)
        return Lease(fresh, EMBEDDED_ENDPOINT, lambda ok: fresh.stop())
    pool = _pool(code)
    key = (job, code.environment)
    with _lock:
        held = _held.get(key)
    if held is not None and held.worker.gone:
        _drop(key, healthy=False)
        held = None
    if held is None:
        env = beam_runner_api_pb2.Environment.FromString(code.environment)
        try:
            worker, token = pool.acquire(env, state)
        except TimeoutError as e:
            raise NoWorker(f"{e}: {code.description} served no worker for a task of job {job}. {_NO_WORKER}") from None
        held = _Held(worker, token, env, pool)
        with _lock:
            _held[key] = held
            first_of_job = job not in _announced
            _announced.add(job)
        if first_of_job:
            announce(code.job_server, job, pool.server.address)

    def release(ok: bool) -> None:
        if not ok:  # a failed task may leave its worker in any state: the retry gets another
            _drop(key, healthy=False)

    # (Spark runs the pipelined stages of a task as nested generators: several leases of the
    # job's worker are alive at once, each with its task's state)
    return Lease(held.worker.bound(state), pool.server.address, release)


class NoWorker(RuntimeError):
    """The job's environment started no worker that connected: no later attempt gets one either."""


_NO_WORKER = (
    "A LOOPBACK pool serves only while the submitting program runs, and Beam's Java LOOPBACK service "
    "starts no worker once one of its workers has stopped (one stops when a task on it fails)."
)


@dataclass
class _Held:
    worker: RemoteWorker
    token: object
    env: beam_runner_api_pb2.Environment
    pool: WorkerPool


_held: dict[tuple[str, bytes], _Held] = {}  # (job, environment) -> its worker in this process
_announced: set[str] = set()  # jobs the driver knows this process holds workers of
_pools: dict[tuple, WorkerPool] = {}
_lock = threading.Lock()


def _drop(key: tuple[str, bytes], healthy: bool) -> None:
    with _lock:
        held = _held.pop(key, None)
    if held is not None:
        held.worker.stop()
        held.pool.release(held.token, held.env, healthy)


def _release_job(job: str) -> None:
    """The driver says ``job`` has ended: stop its workers here (their DoFns are torn down)."""
    with _lock:
        keys = [k for k in _held if k[0] == job]
        _announced.discard(job)
    for key in keys:
        _drop(key, healthy=True)


def _pool(code: UserCode) -> WorkerPool:
    key = (code.fn_host, code.job_server)
    with _lock:
        pool = _pools.get(key)
        if pool is None:
            server = FnApiServer(
                code.fn_host or socket.getfqdn(),
                artifact_endpoint=code.job_server,
                handlers=[release_handler(_release_job)],
            )
            prefix = f"spark-{socket.gethostname()}-{os.getpid()}-"  # one LOOPBACK pool serves every executor
            pool = _pools[key] = WorkerPool(
                server, max_idle=SPARES, spare_idle_seconds=SPARE_IDLE_SECONDS, id_prefix=prefix
            )
        return pool
