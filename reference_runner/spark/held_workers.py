"""Environment workers an executor keeps for the rest of their job, and their release at its end.

An executor's task starts a worker of the job's environment (spark/sdk_workers.py) and keeps
it for that job's later tasks in the same Python worker process. A worker per task would cost
a worker start per task, and would not work at all for Beam's Java SDK: its LOOPBACK service
gives all the workers it starts one shared executor service, which the first worker to stop
shuts down, so the client's other workers fail from then on.

So the executor tells the driver that it holds workers of the job (Holding). When the job
ends, and before it reports its end, the driver asks each such executor to stop them
(Release), which tears their DoFns down. Both calls are small JSON messages on gRPC services of
our own, served beside the Job API (driver) and the Fn API (executor).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent import futures

import grpc

import reference_runner.spark.json_rpc as json_rpc

_LOG = logging.getLogger(__name__)
_SERVICE = "reference_runner.spark.HeldWorkers"


class Registry:
    """The driver's side: which executors hold workers of which job."""

    def __init__(self):
        self._holders: dict[str, set[str]] = {}
        self._lock = threading.Lock()

    def handler(self) -> grpc.GenericRpcHandler:
        return json_rpc.handler(_SERVICE, "Holding", self._holding)

    def _holding(self, request: dict) -> None:
        with self._lock:
            self._holders.setdefault(str(request["job"]), set()).add(str(request["executor"]))

    def release(self, job: str, timeout: float = 60) -> None:
        """Stop every worker the executors hold for ``job``; an executor that has gone took its
        workers with it."""
        with self._lock:
            executors = self._holders.pop(job, set())

        def release(executor: str) -> None:
            try:
                json_rpc.call(executor, _SERVICE, "Release", {"job": job}, timeout)
            except grpc.RpcError as e:
                _LOG.info("executor %s did not release the workers of %s: %s", executor, job, e.code())

        if len(executors) == 1:
            release(*executors)
        elif executors:  # at once: each stops its workers and starts their spares
            with futures.ThreadPoolExecutor(min(len(executors), 8), thread_name_prefix="release") as pool:
                list(pool.map(release, sorted(executors)))


def announce(driver: str, job: str, executor: str, timeout: float = 30) -> None:
    """The executor's side: it now holds workers of ``job``, released through ``executor``."""
    json_rpc.call(driver, _SERVICE, "Holding", {"job": job, "executor": executor}, timeout)


def release_handler(release: Callable[[str], None]) -> grpc.GenericRpcHandler:
    """The executor's side: ``release(job)`` when the driver says the job has ended."""
    return json_rpc.handler(_SERVICE, "Release", lambda request: release(str(request["job"])))
