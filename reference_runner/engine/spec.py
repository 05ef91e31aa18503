"""The plain data the executor and the engine exchange: how a stage is described (StageSpec,
KeyedSpec), the work handed out (Bundle) and self-checkpointed work handed back (Deferred)."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from reference_runner.engine.grouping import Grouping


class StageKind(str, enum.Enum):
    """What runs a stage: the SDK worker, or the runner itself (the other four)."""

    IMPULSE = "impulse"  # the runner emits one empty element in the global window
    TEST_STREAM = "test_stream"  # the runner replays the TestStream's events
    SDK = "sdk"  # a fused stage the SDK worker runs
    GROUP = "group"  # GroupByKey, run by the runner
    FLATTEN = "flatten"  # Flatten (and the runner's re-keying and Reshuffle), run by the runner

    def __str__(self) -> str:  # as its value, in messages and traces ("sdk", not "StageKind.SDK")
        return self.value


@dataclass
class KeyedSpec:
    """A stage headed by a stateful ParDo (``transform``).

    key_of(element) -> (encoded key, timestamp, [(encoded window, expiry time)]), where the
    expiry time is the window's max timestamp + allowed lateness; needed for time-sorted
    input, streaming expiry and OnWindowExpiration. expiry_timer(key, window, time) -> encoded
    timer of the ``expiry_family`` that the runner fires once per key and window of the input.
    in_windows(element, [encoded window]) -> the element in only those of its windows (streaming:
    an element's copies in expired windows are dropped, those in live ones kept).
    allowed_lateness (micros): how long time-sorted input waits behind the watermark.
    """

    transform: str
    key_of: Callable[[bytes], Any] | None = None
    time_sorted: bool = False
    expiry_family: str | None = None
    expiry_timer: Callable[[bytes, bytes, int], bytes] | None = None
    in_windows: Callable[[bytes, list[bytes]], bytes] | None = None
    allowed_lateness: int = 0


@dataclass
class StageSpec:
    id: str
    kind: StageKind
    inputs: list[str]  # main input PCollections
    outputs: list[str]  # PCollections leaving the stage
    side_inputs: list[str] = field(default_factory=list)
    grouping: Grouping | None = None
    # Flatten: re-encoding of an input whose coder differs from the output's (input -> function)
    convert: dict = field(default_factory=dict)
    keyed: KeyedSpec | None = None  # stages headed by a stateful ParDo
    # TestStream: (ELEMENTS, pcollection, [encoded elements]) | (WATERMARK, pcollection, time)
    # | (PROCESSING_TIME, None, advance), in order (engine/teststream.py)
    events: list = field(default_factory=list)
    # Streaming, a stage reading side inputs: element -> [(side PCollection, encoded side window,
    # its max timestamp)] the element needs ready (for each of its windows, each side input)
    side_windows: Callable[[bytes], list] | None = None


@dataclass
class Bundle:
    id: str
    stage: str
    inputs: list  # encoded elements of the main input
    timers: list = field(default_factory=list)  # engine.timers.Timer due in this bundle
    truncate: bool = False  # drain: run the inputs (SDF residuals) through truncation


@dataclass
class Deferred:
    """A residual a splittable DoFn handed back (self-checkpoint): its element, the output
    watermark its watermark estimator reported (None: no promise, the stage is held back
    entirely) and the processing time from which it may resume."""

    element: Any  # as the stage queues its input (engine/stages.py)
    hold: int | None
    ready_at: int
