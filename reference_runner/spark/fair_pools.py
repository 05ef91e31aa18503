"""Jobs running at once on one SparkContext share its task slots fairly.

Spark's FIFO scheduler gives every free slot to the job submitted first, so a long job starves a
short one submitted just after it (the job server runs its jobs side by side on one context).
The session the backend starts uses the FAIR scheduler (session.py), and each running job gets
a scheduler pool of its own, so slots are shared between running jobs equally. Spark keeps every
pool it was ever given by name, so the names are reused: a job takes the lowest-numbered pool no
running job holds, and there are never more pools than jobs ever ran at once. (A session the
user started keeps its scheduler: under FIFO the pool is ignored.)
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

_lock = threading.Lock()
_taken: set[int] = set()


@contextlib.contextmanager
def pool_of_its_own(spark_context) -> Iterator[str]:
    """For the calling thread's Spark jobs until the block ends: a scheduler pool no other running
    job uses (Spark's scheduler pool is a property of the submitting thread)."""
    with _lock:
        slot = next(n for n in range(len(_taken) + 1) if n not in _taken)
        _taken.add(slot)
    name = f"beam-{slot}"
    spark_context.setLocalProperty("spark.scheduler.pool", name)
    try:
        yield name
    finally:
        spark_context.setLocalProperty("spark.scheduler.pool", None)
        with _lock:
            _taken.discard(slot)
