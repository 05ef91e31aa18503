"""The rules that read watermarks across stages, in one place for the two drivers of the engine's
stage objects: the ElementManager (engine/manager.py) and Spark's streaming pass scheduler
(spark/stream_passes.py). A stage's own watermark arithmetic is its ``advance``
(engine/stages.py); what it needs from the stages around it is spelled here.

``producer`` maps a PCollection to the stage object that produces it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from reference_runner.engine.stages import Stage
from reference_runner.engine.windows import MIN_TIMESTAMP, PLUS_INFINITY


def upstream(stage: Stage, producer: Mapping[str, Stage]) -> int:
    """The least output watermark of the stage's main-input producers (+inf: none)."""
    return min(
        (producer[p].output_watermark for p in stage.spec.inputs if p in producer),
        default=PLUS_INFINITY,
    )


def finished(stages: Iterable[Stage]) -> bool:
    """Every output watermark is +inf: the pipeline is done."""
    return all(s.output_watermark >= PLUS_INFINITY for s in stages)


def side_inputs_finished(stage: Stage, producer: Mapping[str, Stage]) -> bool:
    """Batch readiness: a side input is read once its producer has finished."""
    return all(producer[p].output_watermark >= PLUS_INFINITY for p in stage.spec.side_inputs)


def side_window_ready(side_watermark: int, max_timestamp: int, pane_fired: bool) -> bool:
    """Streaming readiness of one side window: the side input's watermark passed the window's
    end, or (triggered) a pane fired for it."""
    return side_watermark > max_timestamp or pane_fired


def describe_stuck(stages: Iterable[Stage], producer: Mapping[str, Stage]) -> str:
    """Why a job that cannot progress is not done: each stage's watermark and what it holds."""
    lines = ["no stage can make progress, but work remains:"]
    for stage in stages:
        spec = stage.spec
        waiting: Any = [p for p in spec.side_inputs if producer[p].output_watermark < PLUS_INFINITY]
        held = stage.held_for_side_windows()
        if held is not None:  # streaming: per window
            waiting = f"{held} elements held for windows of {waiting}" if held else ""
        pending, deferred, in_flight, to_truncate, buffered = stage.counts()
        lines.append(
            f"  {spec.id} ({spec.kind}): output watermark {format_watermark(stage.output_watermark)}, "
            f"pending {pending}, deferred {deferred}, in flight {in_flight}, "
            + (f"to truncate {to_truncate}, " if to_truncate else "")
            + f"buffered groups/timers/events {buffered}"
            + (f", waiting for side inputs {waiting}" if waiting else "")
        )
    return "\n".join(lines)


def format_watermark(t: int) -> str:
    if t >= PLUS_INFINITY:
        return "+inf"
    if t <= MIN_TIMESTAMP:
        return "-inf"
    return f"{t / 1e6:.3f}s"
