"""A TestStream: a runner-side source that replays its events one at a time.

Events are plain data: (ELEMENTS, pcollection, [encoded elements]), (WATERMARK, pcollection,
time) or (PROCESSING_TIME, None, advance). The manager applies the next one only when nothing
else can run (so results do not depend on bundling): the stream moves its own watermarks and
hands elements and clock advances back to the manager. Once its events are exhausted (or it
is drained) every output's watermark is +infinity.
"""

from __future__ import annotations

from collections import deque

from reference_runner.engine.spec import StageSpec
from reference_runner.engine.stages import Stage
from reference_runner.engine.windows import MIN_TIMESTAMP, PLUS_INFINITY

ELEMENTS, WATERMARK, PROCESSING_TIME = "elements", "watermark", "processing_time"


class TestStreamStage(Stage):
    __test__ = False  # not a pytest class

    def __init__(self, spec: StageSpec):
        super().__init__(spec)
        self.events = deque(spec.events)
        self.watermarks = {p: MIN_TIMESTAMP for p in spec.outputs}

    def step(self) -> tuple | None:
        """Apply the next event: returns it (the manager routes ELEMENTS and moves the clock
        for PROCESSING_TIME), or (WATERMARK, None, +infinity) when the stream has just finished,
        or None when it had finished already."""
        marks = self.watermarks
        if self.events:
            kind, pcollection, value = event = self.events.popleft()
            if kind == WATERMARK:
                marks[pcollection] = max(marks[pcollection], value)
            return event
        if any(w < PLUS_INFINITY for w in marks.values()):
            self.stop()
            return WATERMARK, None, PLUS_INFINITY
        return None

    def stop(self) -> None:
        """Finished (exhausted or drained): the remaining events are dropped."""
        self.events.clear()
        self.watermarks.update(dict.fromkeys(self.watermarks, PLUS_INFINITY))

    def advance(self, upstream: int, now: int) -> list:
        self.output_watermark = min(self.watermarks.values(), default=PLUS_INFINITY)
        return []

    def counts(self) -> tuple[int, int, int, int, int]:
        return 0, 0, 0, 0, len(self.events)  # events not yet applied
