"""The ElementManager: pending elements per stage, watermarks, and which bundle runs next.

Stages are described by plain data (StageSpec). The executor asks for a bundle, runs it
wherever it likes and commits the outputs; the manager routes them to the consuming stages,
performs the runner-side primitives itself (Flatten passes elements through, GroupByKey
buffers and fires when the watermark passes a window's end) and advances watermarks.
Bounded inputs: a stage's output watermark is +infinity once nothing upstream can produce
more and it has no pending or in-flight work.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from reference_runner.engine.grouping import GroupBuffer, Grouping
from reference_runner.engine.windows import MAX_TIMESTAMP, MIN_TIMESTAMP

SDK, FLATTEN, GROUP, IMPULSE = "sdk", "flatten", "group", "impulse"
PLUS_INFINITY = MAX_TIMESTAMP + 1  # past every timestamp, as the watermark of finished input


@dataclass
class StageSpec:
    id: str
    kind: str                       # SDK, FLATTEN, GROUP or IMPULSE
    inputs: list[str]               # main input PCollections
    outputs: list[str]              # PCollections leaving the stage
    side_inputs: list[str] = field(default_factory=list)
    grouping: Grouping | None = None
    # Flatten: re-encoding of an input whose coder differs from the output's (input -> function)
    convert: dict = field(default_factory=dict)


@dataclass
class Bundle:
    id: str
    stage: str
    inputs: list                    # encoded elements of the main input
    attempt: int = 0


class Stuck(RuntimeError):
    """No stage can make progress, yet work remains."""


class ElementManager:
    def __init__(self, stages: list[StageSpec], bundle_policy=None):
        self.stages = {s.id: s for s in stages}
        self.order = [s.id for s in stages]  # topological
        self.policy = bundle_policy
        self.pending: dict[str, list] = {s.id: [] for s in stages}
        self.in_flight: dict[str, int] = {s.id: 0 for s in stages}
        self.buffers = {s.id: GroupBuffer(s.grouping) for s in stages if s.kind == GROUP}
        self.consumers: dict[str, list[str]] = {}
        self.side_consumers: dict[str, list[str]] = {}
        self.producer: dict[str, str] = {}
        for s in stages:
            for p in s.inputs:
                self.consumers.setdefault(p, []).append(s.id)
            for p in s.side_inputs:
                self.side_consumers.setdefault(p, []).append(s.id)
            for p in s.outputs:
                self.producer[p] = s.id
        #: full contents of PCollections read as side inputs
        self.materialized: dict[str, list] = {p: [] for p in self.side_consumers}
        self.output_watermark: dict[str, int] = {s.id: MIN_TIMESTAMP for s in stages}
        self._impulses_done = False
        self._bundles = 0

    # -- feeding -----------------------------------------------------------------------------
    def emit(self, pcollection: str, elements: list) -> None:
        """Elements produced into ``pcollection``: route them to every consumer."""
        if not elements:
            return
        if pcollection in self.materialized:
            self.materialized[pcollection].extend(elements)
        for stage_id in self.consumers.get(pcollection, ()):
            stage = self.stages[stage_id]
            if stage.kind == FLATTEN:
                convert = stage.convert.get(pcollection)
                passed = [convert(e) for e in elements] if convert else elements
                for out in stage.outputs:
                    self.emit(out, passed)
            elif stage.kind == GROUP:
                self.buffers[stage_id].add(elements)
            else:
                self.pending[stage_id].extend(elements)

    def start(self, impulse_outputs: dict[str, list]) -> None:
        """Feed the roots: the one element of every Impulse."""
        for pcollection, elements in impulse_outputs.items():
            self.emit(pcollection, elements)
        self._impulses_done = True
        self._advance()

    # -- scheduling --------------------------------------------------------------------------
    def next_bundle(self) -> Bundle | None:
        """The next bundle to run, or None when there is nothing runnable."""
        for stage_id in self.order:
            stage = self.stages[stage_id]
            if stage.kind != SDK or not self.pending[stage_id] or not self._side_inputs_ready(stage):
                continue
            pending = self.pending[stage_id]
            size = len(pending) if self.policy is None else self.policy.bundle_size(stage_id, len(pending))
            elements, self.pending[stage_id] = pending[:size], pending[size:]
            self.in_flight[stage_id] += 1
            self._bundles += 1
            return Bundle(f"b{self._bundles}", stage_id, elements)
        return None

    def commit(self, bundle: Bundle, outputs: dict[str, list], residuals: list = ()) -> None:
        """A bundle succeeded: publish its outputs atomically and reschedule its residuals."""
        for pcollection, elements in outputs.items():
            self.emit(pcollection, elements)
        if residuals:
            self.pending[bundle.stage][:0] = list(residuals)
        self.in_flight[bundle.stage] -= 1
        self._advance()

    def fail(self, bundle: Bundle) -> None:
        """A bundle failed: nothing it produced is kept; its input goes back to the front."""
        self.pending[bundle.stage][:0] = bundle.inputs
        self.in_flight[bundle.stage] -= 1

    def input_watermark(self, stage_id: str) -> int:
        stage = self.stages[stage_id]
        return min((self.output_watermark[self.producer[p]] for p in stage.inputs if p in self.producer),
                   default=PLUS_INFINITY)

    def done(self) -> bool:
        return all(w >= PLUS_INFINITY for w in self.output_watermark.values())

    def _side_inputs_ready(self, stage: StageSpec) -> bool:
        # Batch readiness: a side input is read once its producer has finished.
        return all(self.output_watermark[self.producer[p]] >= PLUS_INFINITY for p in stage.side_inputs)

    # -- watermarks --------------------------------------------------------------------------
    def _advance(self) -> None:
        """Recompute watermarks in topological order, firing GroupByKeys as they advance."""
        for stage_id in self.order:
            stage = self.stages[stage_id]
            if stage.kind == IMPULSE:
                watermark = PLUS_INFINITY if self._impulses_done else MIN_TIMESTAMP
                self.output_watermark[stage_id] = watermark
                continue
            input_wm = self.input_watermark(stage_id)
            if stage.kind == GROUP:
                buffer = self.buffers[stage_id]
                fired = buffer.fire(input_wm)
                for out in stage.outputs:
                    self.emit(out, fired)
                hold = MIN_TIMESTAMP if len(buffer) else PLUS_INFINITY
            else:
                busy = self.pending[stage_id] or self.in_flight[stage_id]
                hold = MIN_TIMESTAMP if busy else PLUS_INFINITY
            self.output_watermark[stage_id] = min(input_wm, hold)

    def describe_stuck(self) -> str:
        lines = ["no stage can make progress, but work remains:"]
        for stage_id in self.order:
            stage = self.stages[stage_id]
            waiting = [p for p in stage.side_inputs
                       if self.output_watermark[self.producer[p]] < PLUS_INFINITY]
            buffered = len(self.buffers[stage_id]) if stage_id in self.buffers else 0
            lines.append(f"  {stage_id} ({stage.kind}): output watermark {format_watermark(self.output_watermark[stage_id])}, "
                         f"pending {len(self.pending[stage_id])}, in flight {self.in_flight[stage_id]}, "
                         f"buffered groups {buffered}" + (f", waiting for side inputs {waiting}" if waiting else ""))
        return "\n".join(lines)


def format_watermark(t: int) -> str:
    if t >= PLUS_INFINITY:
        return "+inf"
    if t <= MIN_TIMESTAMP:
        return "-inf"
    return f"{t / 1e6:.3f}s"


__all__ = ["format_watermark", "Bundle", "ElementManager", "StageSpec", "Stuck", "SDK", "FLATTEN", "GROUP", "IMPULSE"]
