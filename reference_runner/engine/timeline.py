"""The one rule for the order in which time advances, once nothing else can run.

Both the reference engine (ElementManager.advance_time) and Spark's streaming driver
(spark/stream_clock.py) take one step of time at a time, by this rule:

1. the next event of the first TestStream (in topological order) that has one: its elements
   enter the pipeline, a watermark event moves the stream's own watermark, a processing-time
   event moves the clock by its advance; a stream that has just run out moves its watermarks to
   +infinity (engine/teststream.py);
2. else the processing-time clock jumps to the earliest deadline after now (a processing-time
   timer, a trigger's deadline, the resume time of self-checkpointed work);
3. else time cannot advance.

The caller applies the step (emits the elements, moves its clock) and recomputes watermarks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from reference_runner.engine.teststream import ELEMENTS, PROCESSING_TIME, TestStreamStage


@dataclass(frozen=True)
class TimeStep:
    """One step of time: ``elements``, (pcollection, encoded elements) a TestStream emits;
    ``clock``, the processing time to move to (None: the clock stays)."""

    elements: tuple[str, list] | None = None
    clock: int | None = None


def next_step(
    streams: Iterable[TestStreamStage], now: int, deadlines: Callable[[], Iterable[int | None]]
) -> TimeStep | None:
    """The next step of time (already taken by the TestStream it comes from), or None when time
    cannot advance. ``deadlines``: the processing times the pipeline waits for (None: not
    waiting), asked only when no TestStream has an event left."""
    for stream in streams:
        event = stream.step()
        if event is None:
            continue
        kind, pcollection, value = event
        if kind == ELEMENTS:
            return TimeStep(elements=(pcollection, value))
        if kind == PROCESSING_TIME:
            return TimeStep(clock=now + value)
        return TimeStep()  # a watermark: the stream has moved its own
    later = [d for d in deadlines() if d is not None and d > now]
    if not later:
        return None
    return TimeStep(clock=min(later))


__all__ = ["TimeStep", "next_step"]
