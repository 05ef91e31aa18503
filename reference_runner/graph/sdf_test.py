"""Unit tests of the splittable DoFn expansion (graph/sdf.py): the three SDK parts, how their
PCollections and coders are wired, and the truncation stage a drain runs."""

from __future__ import annotations

import apache_beam as beam
from apache_beam.io.restriction_trackers import OffsetRange, OffsetRestrictionTracker
from apache_beam.portability.api import beam_runner_api_pb2
from apache_beam.transforms.core import RestrictionProvider

from reference_runner.graph import front_end, fusion, sdf, urns
from reference_runner.graph.pipeline import PipelineGraph


class _Range(RestrictionProvider):
    def initial_restriction(self, element):
        return OffsetRange(0, element)

    def create_tracker(self, restriction):
        return OffsetRestrictionTracker(restriction)

    def restriction_size(self, element, restriction):
        return restriction.size()


class _CountTo(beam.DoFn):
    def process(self, n, side=(), tracker=beam.DoFn.RestrictionParam(_Range())):
        position = tracker.current_restriction().start
        while tracker.try_claim(position):
            yield position
            position += 1


def _pipeline(with_side_input: bool = False, sdfs: int = 1) -> beam_runner_api_pb2.Pipeline:
    p = beam.Pipeline()
    numbers = p | beam.Impulse() | "A" >> beam.Map(lambda x: 3).with_output_types(int)
    side = (p | "Side" >> beam.Impulse() | "S" >> beam.Map(lambda x: 1),) if with_side_input else ()
    for i in range(sdfs):
        _ = numbers | f"SDF{i}" >> beam.ParDo(_CountTo(), *(beam.pvalue.AsList(s) for s in side))
    return p.to_runner_api()


def _transform(proto: beam_runner_api_pb2.Pipeline, name: str) -> tuple[str, beam_runner_api_pb2.PTransform]:
    [(tid, t)] = [(tid, t) for tid, t in proto.components.transforms.items() if t.unique_name == name]
    return tid, t


def test_a_splittable_pardo_becomes_a_composite_of_the_three_sdk_parts():
    proto = _pipeline()
    tid, original = _transform(proto, "SDF0")
    expanded = sdf.expand(proto)
    _, composite = _transform(expanded, "SDF0")
    parts = [f"{tid}/PairWithRestriction", f"{tid}/SplitAndSizeRestrictions", f"{tid}/Process"]
    assert list(composite.subtransforms) == parts
    assert dict(composite.inputs) == dict(original.inputs) and dict(composite.outputs) == dict(original.outputs)
    got = [(expanded.components.transforms[p].unique_name, expanded.components.transforms[p].spec.urn) for p in parts]
    assert got == [
        ("SDF0/PairWithRestriction", urns.SDF_PAIR_WITH_RESTRICTION),
        ("SDF0/SplitAndSizeRestrictions", urns.SDF_SPLIT_AND_SIZE),
        ("SDF0/Process", urns.SDF_PROCESS_SIZED),
    ]
    for p in parts:  # each part builds its DoFn from the whole ParDoPayload, in the same environment
        part = expanded.components.transforms[p]
        assert part.spec.payload == original.spec.payload and part.environment_id == original.environment_id
    # the graph's leaves are the parts, in pipeline order
    assert [t.id for t in PipelineGraph(expanded).transforms if t.id.startswith(tid)] == parts


def test_the_parts_are_chained_through_paired_and_sized_pcollections():
    proto = _pipeline()
    tid, original = _transform(proto, "SDF0")
    [(main_tag, main)] = original.inputs.items()
    [(out_tag, out)] = original.outputs.items()
    c = sdf.expand(proto).components
    pair, split, process = (
        c.transforms[f"{tid}/{n}"] for n in ("PairWithRestriction", "SplitAndSizeRestrictions", "Process")
    )
    paired, sized = f"{tid}/paired", f"{tid}/sized"
    assert (dict(pair.inputs), dict(pair.outputs)) == ({main_tag: main}, {"out": paired})
    assert (dict(split.inputs), dict(split.outputs)) == ({main_tag: paired}, {"out": sized})
    assert (dict(process.inputs), dict(process.outputs)) == ({main_tag: sized}, {out_tag: out})
    for pcoll in (paired, sized):  # new PCollections are windowed and bounded as the main input
        assert c.pcollections[pcoll].unique_name == pcoll
        assert c.pcollections[pcoll].windowing_strategy_id == c.pcollections[main].windowing_strategy_id
        assert c.pcollections[pcoll].is_bounded == c.pcollections[main].is_bounded


def test_paired_and_sized_coders_wrap_the_element_restriction_and_a_double_size():
    proto = _pipeline()
    tid, original = _transform(proto, "SDF0")
    [main] = original.inputs.values()
    payload = beam_runner_api_pb2.ParDoPayload.FromString(original.spec.payload)
    c = sdf.expand(proto).components
    paired, sized = c.pcollections[f"{tid}/paired"].coder_id, c.pcollections[f"{tid}/sized"].coder_id
    assert (c.coders[paired].spec.urn, list(c.coders[paired].component_coder_ids)) == (
        urns.KV_CODER,
        [proto.components.pcollections[main].coder_id, payload.restriction_coder_id],
    )
    assert (c.coders[sized].spec.urn, list(c.coders[sized].component_coder_ids)) == (
        urns.KV_CODER,
        [paired, "reference/double"],
    )
    assert c.coders["reference/double"].spec.urn == urns.DOUBLE_CODER
    assert not c.coders["reference/double"].component_coder_ids


def test_every_part_reads_the_side_inputs_of_the_splittable_pardo():
    proto = _pipeline(with_side_input=True)
    tid, original = _transform(proto, "SDF0")
    [side_tag] = beam_runner_api_pb2.ParDoPayload.FromString(original.spec.payload).side_inputs
    c = sdf.expand(proto).components
    for name in ("PairWithRestriction", "SplitAndSizeRestrictions", "Process"):
        part = c.transforms[f"{tid}/{name}"]
        assert part.inputs[side_tag] == original.inputs[side_tag], name
        assert len(part.inputs) == 2, name


def test_two_splittable_pardos_share_the_double_coder_and_get_their_own_pcollections():
    proto = _pipeline(sdfs=2)
    expanded = sdf.expand(proto)
    ids = [_transform(proto, f"SDF{i}")[0] for i in range(2)]
    added_coders = set(expanded.components.coders) - set(proto.components.coders)
    assert added_coders == {"reference/double"} | {f"{tid}/{kind}" for tid in ids for kind in ("paired", "sized")}
    added_pcolls = set(expanded.components.pcollections) - set(proto.components.pcollections)
    assert added_pcolls == {f"{tid}/{kind}" for tid in ids for kind in ("paired", "sized")}


def test_the_input_is_not_changed_and_a_pipeline_without_splittable_pardos_is_returned_as_is():
    proto = _pipeline()
    before = proto.SerializeToString(deterministic=True)
    expanded = sdf.expand(proto)
    assert expanded is not proto and proto.SerializeToString(deterministic=True) == before
    assert sdf.expand(expanded) is expanded, "an expanded splittable ParDo is a composite: not expanded again"
    p = beam.Pipeline()
    _ = p | beam.Impulse() | beam.Map(len)
    plain = p.to_runner_api()
    assert sdf.expand(plain) is plain


def test_truncation_stage_runs_the_process_parts_input_through_sdk_truncate():
    graph = front_end.checked_graph(_pipeline(with_side_input=True), front_end.REFERENCE)
    stages = fusion.fuse(graph)
    [stage] = [s for s in stages if s.transforms[0].urn == urns.SDF_PROCESS_SIZED]
    root = stage.transforms[0]
    components = graph.components
    before = components.SerializeToString(deterministic=True)
    truncation, extended = sdf.truncation_stage(stage, components)

    assert components.SerializeToString(deterministic=True) == before, "the pipeline's components are not changed"
    [sized] = stage.inputs
    truncated = f"{root.id}/truncated"
    assert (truncation.id, truncation.kind, truncation.inputs, truncation.outputs) == (
        f"{stage.id}/truncate",
        "sdk",
        [sized],
        [truncated],
    )
    # finite restrictions of the same shape: the same coder and windowing as the sized input
    assert extended.pcollections[truncated].coder_id == components.pcollections[sized].coder_id
    assert (
        extended.pcollections[truncated].windowing_strategy_id == components.pcollections[sized].windowing_strategy_id
    )
    assert set(extended.pcollections) - set(components.pcollections) == {truncated}

    [t] = truncation.transforms
    assert t.id == root.id, "same id as the process part: its side inputs are served under the same names"
    assert (t.urn, t.name) == (urns.SDF_TRUNCATE_SIZED, f"{root.proto.unique_name}/Truncate")
    assert dict(t.proto.inputs) == dict(root.proto.inputs) and dict(t.proto.outputs) == {"out": truncated}
    assert t.proto.spec.payload == root.proto.spec.payload
    assert root.urn == urns.SDF_PROCESS_SIZED, "the process part itself is not changed"
    [(tag, side)] = root.side_inputs().items()
    assert truncation.side_inputs == [(side, root.id, tag)]
