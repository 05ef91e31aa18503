"""Streaming on Spark, the driver's clock: processing time and the TestStreams' events.

Time advances one step at a time, only when a pass has left nothing to run, by the engine's
one rule (engine/timeline.py: the next TestStream event, else a jump to the next deadline), as
in the reference engine. What is Spark's own: an event's elements may be cut (seeded) into
several micro-batches, delivered one per step, between which no watermark and no clock moves.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable

from reference_runner.engine import timeline
from reference_runner.engine.teststream import TestStreamStage


class StreamClock:
    def __init__(self, streams: list[TestStreamStage], seed: int | None, deliver: Callable[[str, list], None]):
        """``streams``: the TestStreams, in topological order; ``deliver(pcollection, elements)``
        hands a micro-batch to the pass scheduler."""
        self.now = 0  # processing time (micros)
        self.streams = streams
        self._deliver = deliver
        # seeded micro-batch boundaries: an event's elements over several passes
        self._cuts = random.Random(f"{seed}/micro-batches") if seed is not None else None
        self._held_back: list = []  # (pcoll, elements) of an applied event, for the next passes

    @property
    def holding(self) -> bool:
        """Part of an applied event is still to be delivered."""
        return bool(self._held_back)

    def advance(self, deadlines: Callable[[], Iterable[int | None]]) -> bool:
        """Nothing can run: the rest of an event held back for a later micro-batch, else the next
        step of time (engine/timeline.py). False when time cannot advance."""
        if self._held_back:
            self._deliver_held_back()
            return True
        step = timeline.next_step(self.streams, self.now, deadlines)
        if step is None:
            return False
        if step.elements is not None:
            pcoll, elements = step.elements
            if elements:
                self._held_back = [(pcoll, part) for part in self._micro_batches(elements)]
                self._deliver_held_back()
        if step.clock is not None:
            self.now = step.clock
        return True

    def stop(self) -> None:
        """Drain: the TestStreams drop their remaining events and are done."""
        for stream in self.streams:
            stream.stop()

    def _micro_batches(self, elements: list) -> list[list]:
        """An event's elements: whole, or (seeded) cut into up to four micro-batches. Between
        them no watermark and no clock moves: only the boundaries of the runner's work change."""
        if self._cuts is None or len(elements) < 2:
            return [elements]
        count = self._cuts.randint(1, min(4, len(elements)))
        cuts = sorted(self._cuts.sample(range(1, len(elements)), count - 1))
        return [elements[a:b] for a, b in zip([0, *cuts], [*cuts, len(elements)], strict=True)]

    def _deliver_held_back(self) -> None:
        """The next micro-batch of the event being applied (the only one unless seeded)."""
        pcoll, elements = self._held_back.pop(0)
        self._deliver(pcoll, elements)
