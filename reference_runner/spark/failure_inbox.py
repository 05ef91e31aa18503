"""A bundle whose user code raised fails its job at once, with the user's error.

Spark runs a failed task again, up to spark.task.maxFailures times (4 on a cluster, and in the
``local[N,F]`` master the backend makes of ``local[N]``). That is right for a lost executor or
a worker that died, and wrong for a DoFn that raised: it raises again on every attempt, each
attempt holds a task slot, and an environment worker stopped after a failed task may not be
replaced (Beam's Java LOOPBACK service stops serving once any of its workers stops, so the
next attempt waited a minute for a worker that never came, then reported Spark's error instead
of the user's).

So a task whose bundle failed deterministically (the SDK answered with an error:
runtime/bundles.BundleError) tells the driver before it fails (Failed, a small JSON call), and
the driver cancels the job's Spark job group before it answers, and reports that error. The
task still fails as before (Spark's retry of it comes too late: its job group is cancelled), so
nothing downstream of it runs; a task that cannot reach the driver just fails, and Spark's
retries decide as they used to.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable
from concurrent import futures

import grpc

import reference_runner.spark.json_rpc as json_rpc
from reference_runner.spark.settings import is_local

_LOG = logging.getLogger(__name__)
_SERVICE = "reference_runner.spark.FailureInbox"


class FailureInbox:
    """The driver's side: the first deterministic failure of each job it watches."""

    def __init__(self, host: str):
        self._watched: dict[str, Callable[[], None]] = {}
        self._failures: dict[str, str] = {}
        self._lock = threading.Lock()
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="failure-inbox"))
        self._server.add_generic_rpc_handlers([json_rpc.handler(_SERVICE, "Failed", self._failed)])
        bracketed = f"[{host}]" if ":" in host else host
        port = self._server.add_insecure_port(f"{bracketed}:0")
        self._server.start()
        self.address = f"{bracketed}:{port}"

    def watch(self, job: str, on_failure: Callable[[], None]) -> None:
        """Until ``forget(job)``: the first failure reported for ``job`` calls ``on_failure``."""
        with self._lock:
            self._watched[job] = on_failure

    def failure(self, job: str) -> str | None:
        """The first deterministic failure reported for ``job``, if one was."""
        with self._lock:
            return self._failures.get(job)

    def forget(self, job: str) -> None:
        with self._lock:
            self._watched.pop(job, None)
            self._failures.pop(job, None)

    def _failed(self, request: dict) -> None:
        job, message = str(request["job"]), str(request["message"])
        with self._lock:
            on_failure = self._watched.get(job)
            if on_failure is None or job in self._failures:
                return  # a job that has ended, or a later task of one already failing
            self._failures[job] = message
        # Before answering: the reporting task fails only after its answer, so the job group is
        # cancelled before Spark can start a retry of it (one that ran the DoFn again was seen).
        on_failure()


def report(address: str, job: str, message: str, timeout: float = 10) -> None:
    """The executor's side: a task of ``job`` failed deterministically with ``message``."""
    if not address:
        return
    try:
        json_rpc.call(address, _SERVICE, "Failed", {"job": job, "message": message}, timeout)
    except grpc.RpcError as e:  # the task fails anyway; Spark's retries then decide
        _LOG.warning("could not tell the driver at %s that job %s failed: %s", address, job, e.code())


_inboxes: dict[str, FailureInbox] = {}
_lock = threading.Lock()


def for_session(spark) -> FailureInbox:
    """The inbox of this driver process, at an address the session's executors reach: loopback
    for a local master, else the host Spark's executors reach the driver at (spark.driver.host)."""
    if is_local(spark.sparkContext.master):
        host = "127.0.0.1"
    else:  # (the configuration is copied out of the JVM: only where it is needed)
        host = spark.sparkContext.getConf().get("spark.driver.host", None) or socket.getfqdn()
    with _lock:
        inbox = _inboxes.get(host)
        if inbox is None:
            inbox = _inboxes[host] = FailureInbox(host)
        return inbox
