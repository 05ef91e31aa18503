"""A Runner API pipeline as a graph of leaf transforms and PCollections."""

from __future__ import annotations

from dataclasses import dataclass

from apache_beam.portability.api import beam_runner_api_pb2

from reference_runner.graph import urns


@dataclass
class Transform:
    id: str
    proto: beam_runner_api_pb2.PTransform

    @property
    def urn(self) -> str:
        return self.proto.spec.urn

    @property
    def name(self) -> str:
        return self.proto.unique_name or self.id

    def pardo_payload(self) -> beam_runner_api_pb2.ParDoPayload | None:
        if self.urn not in urns.PARDO_LIKE:
            return None
        return beam_runner_api_pb2.ParDoPayload.FromString(self.proto.spec.payload)

    def side_input_tags(self) -> set[str]:
        payload = self.pardo_payload()
        return set(payload.side_inputs) if payload is not None else set()

    def main_inputs(self) -> list[str]:
        side = self.side_input_tags()
        return [pcoll for tag, pcoll in self.proto.inputs.items() if tag not in side]

    def side_inputs(self) -> dict[str, str]:
        side = self.side_input_tags()
        return {tag: pcoll for tag, pcoll in self.proto.inputs.items() if tag in side}

    def outputs(self) -> list[str]:
        return list(self.proto.outputs.values())


def reachable(proto: beam_runner_api_pb2.Pipeline) -> set[str]:
    """Ids of the transforms under the pipeline's roots (passes leave replaced parts behind)."""
    found: set[str] = set()
    pending = list(proto.root_transform_ids)
    while pending:
        tid = pending.pop()
        if tid not in found:
            found.add(tid)
            pending.extend(proto.components.transforms[tid].subtransforms)
    return found


def is_stateful(t: Transform) -> bool:
    """A ParDo with user state, timers or time-sorted input: its input is keyed, per key."""
    payload = t.pardo_payload()
    return payload is not None and bool(
        payload.state_specs or payload.timer_family_specs or payload.requires_time_sorted_input
    )


def test_stream_output(transform: beam_runner_api_pb2.PTransform, tag: str) -> str | None:
    """The PCollection a TestStream event tagged ``tag`` goes to, None if it has none. An empty
    tag names the transform's only output: the Go SDK tags no event (its output is "i0")."""
    if tag in transform.outputs:
        return transform.outputs[tag]
    if not tag and len(transform.outputs) == 1:
        return next(iter(transform.outputs.values()))
    return None


class PipelineGraph:
    """Leaf transforms in topological order, with who produces and consumes each PCollection."""

    def __init__(self, proto: beam_runner_api_pb2.Pipeline):
        self.proto = proto
        self.components = proto.components
        leaves = self._leaves()
        self.producer = {pcoll: t.id for t in leaves for pcoll in t.outputs()}
        self.transforms = _topological(leaves, self.producer)
        self.by_id = {t.id: t for t in self.transforms}
        self.consumers: dict[str, list[str]] = {}
        for t in self.transforms:
            for pcoll in t.proto.inputs.values():
                self.consumers.setdefault(pcoll, []).append(t.id)

    def _leaves(self) -> list[Transform]:
        found, seen = [], set()
        transforms = self.components.transforms

        def visit(tid: str) -> None:
            if tid in seen:
                return
            seen.add(tid)
            proto = transforms[tid]
            if proto.subtransforms:
                for sub in proto.subtransforms:
                    visit(sub)
            else:
                # A composite that expanded to nothing passes its input through (no URN, its
                # outputs among its inputs): skipped. A sink (a ParDo without outputs, as the Go
                # SDK ends a pipeline) has a URN and no outputs: a leaf all the same.
                outputs = set(proto.outputs.values())
                if not outputs <= set(proto.inputs.values()) or (proto.spec.urn and not outputs):
                    found.append(Transform(tid, proto))

        for root in self.proto.root_transform_ids:
            visit(root)
        return found

    def windowing_of(self, pcoll: str) -> beam_runner_api_pb2.WindowingStrategy:
        return self.components.windowing_strategies[self.components.pcollections[pcoll].windowing_strategy_id]

    def with_step_names(self, infos) -> list:
        """Metrics name their step by the transform's unique name, as users wrote it, not by id."""
        labelled = []
        for info in infos:
            transform_id = info.labels.get("PTRANSFORM")
            if transform_id in self.by_id:
                info = type(info).FromString(info.SerializeToString())
                info.labels["PTRANSFORM"] = self.by_id[transform_id].name
            labelled.append(info)
        return labelled


def _topological(leaves: list[Transform], producer: dict[str, str]) -> list[Transform]:
    by_id = {t.id: t for t in leaves}
    ordered: list[Transform] = []
    state: dict[str, str] = {}  # transform id -> "visiting" | "done"

    def visit(t: Transform) -> None:
        if state.get(t.id) == "done":
            return
        if state.get(t.id) == "visiting":
            raise ValueError(f"the pipeline graph has a cycle through {t.name}")
        state[t.id] = "visiting"
        for pcoll in t.proto.inputs.values():
            upstream = producer.get(pcoll)
            if upstream is not None:
                visit(by_id[upstream])
        state[t.id] = "done"
        ordered.append(t)

    for t in leaves:
        visit(t)
    return ordered
