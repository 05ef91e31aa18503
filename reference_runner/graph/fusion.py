"""Fusion: leaf transforms -> stages.

Runner-executed primitives (Impulse, TestStream, Flatten, GroupByKey) are stages of their own. SDK
transforms (ParDo, WindowInto, combiner parts) form fused stages: a transform joins the
stage that produces its main input when fusion is on, and starts a new stage when its
input comes from the runner, it reads side inputs (the stage must wait for them), it is
stateful (its keyed input must come straight from the runner, which keeps its state and
timers per stage), or it processes splittable restrictions (the runner reschedules their
residuals as stage input). A PCollection leaves a stage when something outside it consumes it.
With fusion off every transform is a stage of its own, except a lifted combine's extract, which
stays with its merge: Python's CombineFns may hand extract_output the merged accumulator
uncompacted (Top with a key or reverse holds values that do not survive its coder), which only
works in one bundle, as every Beam runner fuses them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from reference_runner.engine.spec import StageKind
from reference_runner.graph import urns
from reference_runner.graph.pipeline import PipelineGraph, Transform, is_stateful

KIND_OF = {
    urns.IMPULSE: StageKind.IMPULSE,
    urns.TEST_STREAM: StageKind.TEST_STREAM,
    urns.FLATTEN: StageKind.FLATTEN,
    urns.GROUP_BY_KEY: StageKind.GROUP,
    urns.KEYS_TO_BYTES: StageKind.FLATTEN,
    urns.KEYS_FROM_BYTES: StageKind.FLATTEN,
    urns.RESHUFFLE: StageKind.FLATTEN,
}


@dataclass
class FusedStage:
    id: str
    kind: StageKind
    transforms: list[Transform]
    inputs: list[str]  # main input PCollections (from outside the stage)
    side_inputs: list[tuple[str, str, str]] = field(default_factory=list)  # (pcoll, transform, tag)
    outputs: list[str] = field(default_factory=list)

    def produced(self) -> set[str]:
        return {p for t in self.transforms for p in t.outputs()}


def fuse(graph: PipelineGraph, enabled: bool = True) -> list[FusedStage]:
    stages: list[FusedStage] = []
    stage_of_pcoll: dict[str, FusedStage] = {}
    for t in graph.transforms:
        kind = KIND_OF.get(t.urn, StageKind.SDK)
        mains = t.main_inputs()
        home = None
        if (
            kind == StageKind.SDK
            and (enabled or t.urn == urns.COMBINE_EXTRACT_OUTPUTS)
            and len(mains) == 1
            and not t.side_inputs()
            and not is_stateful(t)
            and t.urn not in urns.STAGE_ROOTS
        ):
            upstream = stage_of_pcoll.get(mains[0])
            if upstream is not None and upstream.kind == StageKind.SDK:
                home = upstream
        if home is None:
            home = FusedStage(f"s{len(stages) + 1}-{_short(t.name)}", kind, [], list(mains))
            stages.append(home)
        home.transforms.append(t)
        for tag, pcoll in t.side_inputs().items():
            home.side_inputs.append((pcoll, t.id, tag))
        for pcoll in t.outputs():
            stage_of_pcoll[pcoll] = home
    for stage in stages:
        produced = stage.produced()
        stage.outputs = [
            p
            for p in sorted(produced)
            if any(
                stage_of_pcoll.get(p) is stage and c not in {t.id for t in stage.transforms}
                for c in graph.consumers.get(p, ())
            )
            or stage.kind != StageKind.SDK
        ]
    return stages


def _short(name: str) -> str:
    return name.replace("/", ".").replace(" ", "")[:60]
