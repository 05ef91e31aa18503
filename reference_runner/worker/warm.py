"""Warm in-process SDK workers, kept between the jobs of one process.

Building a stage's bundle processor (unpickling its DoFns, inspecting their signatures,
creating operations) costs the SDK harness tens of milliseconds, most of a tiny job's time.
A worker whose processors hold no DoFn or CombineFn with a setup or teardown of its own
(EmbeddedWorker.reusable) goes back to the pool when its job succeeds; a later job with an
identical stage (descriptor ids are content digests, descriptors.name_by_content) then runs
on the processors already built. Anything else is stopped at the end of its job, which tears
its DoFns down, as before.
"""

from __future__ import annotations

import threading

from reference_runner.worker.embedded import EmbeddedWorker
from reference_runner.worker.state import StateService

_lock = threading.Lock()
_idle: list[EmbeddedWorker] = []
MAX_IDLE = 2  # concurrent jobs in one process each take their own worker


def acquire(state: StateService) -> EmbeddedWorker:
    """A worker serving ``state``: an idle warm one if there is one, otherwise a new one."""
    with _lock:
        worker = _idle.pop() if _idle else None
    if worker is None:
        return EmbeddedWorker(state)
    worker.serve(state)
    return worker


def release(worker: EmbeddedWorker, succeeded: bool, max_descriptors: int = 500) -> None:
    """The job on ``worker`` ended: keep the worker warm if it may be reused (and holds the
    processors of at most ``max_descriptors`` stages), else stop it."""
    if succeeded and worker.reusable(max_descriptors):
        worker.serve(StateService())  # the finished job's state is not kept alive
        with _lock:
            if len(_idle) < MAX_IDLE:
                _idle.append(worker)
                return
    worker.stop()


def clear() -> None:
    """Stop every idle worker (their processors are torn down)."""
    with _lock:
        workers, _idle[:] = list(_idle), []
    for worker in workers:
        worker.stop()
