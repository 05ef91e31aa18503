"""Unit tests of fusion (graph/fusion.py): which transforms share a stage, where stages break,
and which PCollections cross a stage's boundary.

Pipelines are built with the Python SDK and put through the front end, as the runner sees them;
the expected layouts follow the rules in fusion.py's docstring."""

from __future__ import annotations

import apache_beam as beam
from apache_beam.coders import coders
from apache_beam.io.restriction_trackers import OffsetRange, OffsetRestrictionTracker
from apache_beam.portability.api import beam_runner_api_pb2
from apache_beam.testing import test_stream
from apache_beam.transforms import userstate
from apache_beam.transforms.core import RestrictionProvider

from reference_runner.graph import front_end, fusion, urns
from reference_runner.graph.pipeline import PipelineGraph


def _fused(p: beam.Pipeline, enabled: bool = True) -> tuple[PipelineGraph, list[fusion.FusedStage]]:
    graph = front_end.checked_graph(p.to_runner_api(), front_end.REFERENCE)
    return graph, fusion.fuse(graph, enabled=enabled)


def _layout(stages: list[fusion.FusedStage]) -> list[tuple[str, list[str]]]:
    return [(s.kind, [t.name for t in s.transforms]) for s in stages]


def _out(graph: PipelineGraph, name: str, tag: str | None = None) -> str:
    """The PCollection the leaf transform called ``name`` produces (under ``tag``)."""
    [t] = [t for t in graph.transforms if t.name == name]
    if tag is None:
        [pcoll] = t.outputs()
        return pcoll
    return t.proto.outputs[tag]


def _stage(stages: list[fusion.FusedStage], name: str) -> fusion.FusedStage:
    [s] = [s for s in stages if any(t.name == name for t in s.transforms)]
    return s


def test_a_chain_of_pardos_is_one_stage_behind_the_runner_transform_feeding_it():
    p = beam.Pipeline()
    _ = p | beam.Impulse() | "Add One" >> beam.Map(lambda x: x) | "B" >> beam.Map(len) | "C" >> beam.Map(str)
    graph, stages = _fused(p)
    assert _layout(stages) == [("impulse", ["Impulse"]), ("sdk", ["Add One", "B", "C"])]
    impulse, chain = stages
    # ids: position, then the first transform's name without spaces and with dots for slashes
    assert [s.id for s in stages] == ["s1-Impulse", "s2-AddOne"]
    assert impulse.inputs == [] and impulse.outputs == [_out(graph, "Impulse")]
    assert chain.inputs == [_out(graph, "Impulse")]
    assert chain.outputs == [], "no one outside the stage reads C's output (nor A's, nor B's)"
    assert chain.side_inputs == []


def test_stage_ids_shorten_long_nested_names():
    p = beam.Pipeline()
    _ = p | beam.Impulse() | "Outer Step/" + "x" * 80 >> beam.Map(lambda x: x)
    _, stages = _fused(p)
    assert stages[1].id == "s2-" + ("OuterStep." + "x" * 80)[:60]


def test_consumers_of_one_pardo_output_all_join_its_stage():
    p = beam.Pipeline()
    a = p | beam.Impulse() | "A" >> beam.Map(lambda x: x)
    _ = a | "B" >> beam.Map(len)
    _ = a | "C" >> beam.Map(str)
    _, stages = _fused(p)
    assert _layout(stages) == [("impulse", ["Impulse"]), ("sdk", ["A", "B", "C"])]


def test_consumers_of_one_runner_output_each_start_a_stage():
    # Only an SDK stage takes in a consumer; two readers of a runner transform's output are two stages.
    p = beam.Pipeline()
    imp = p | beam.Impulse()
    _ = imp | "A" >> beam.Map(lambda x: x)
    _ = imp | "B" >> beam.Map(lambda x: x)
    graph, stages = _fused(p)
    assert _layout(stages) == [("impulse", ["Impulse"]), ("sdk", ["A"]), ("sdk", ["B"])]
    assert stages[1].inputs == stages[2].inputs == [_out(graph, "Impulse")]


def test_group_by_key_is_a_stage_of_its_own_between_two_sdk_stages():
    p = beam.Pipeline()
    _ = (
        p
        | beam.Impulse()
        | "A" >> beam.Map(lambda x: ("k", 1))
        | "G" >> beam.GroupByKey()
        | "B" >> beam.MapTuple(lambda k, vs: (k, sum(vs)))
        | "C" >> beam.Map(str)
    )
    graph, stages = _fused(p)
    assert _layout(stages) == [("impulse", ["Impulse"]), ("sdk", ["A"]), ("group", ["G"]), ("sdk", ["B", "C"])]
    _, before, group, after = stages
    assert before.outputs == [_out(graph, "A")]
    assert group.inputs == [_out(graph, "A")] and group.outputs == [_out(graph, "G")]
    assert after.inputs == [_out(graph, "G")] and after.outputs == []


def test_a_runner_stage_hands_out_its_output_even_when_nothing_reads_it():
    p = beam.Pipeline()
    _ = p | beam.Impulse() | "A" >> beam.Map(lambda x: ("k", 1)) | "G" >> beam.GroupByKey()
    graph, stages = _fused(p)
    assert _layout(stages) == [("impulse", ["Impulse"]), ("sdk", ["A"]), ("group", ["G"])]
    assert stages[2].outputs == [_out(graph, "G")]


def test_flatten_is_a_stage_of_its_own_and_each_of_its_readers_starts_one():
    p = beam.Pipeline()
    imp = p | beam.Impulse()
    a = imp | "A" >> beam.Map(lambda x: 1)
    b = imp | "B" >> beam.Map(lambda x: 2)
    both = (a, b) | "F" >> beam.Flatten()
    _ = both | "C" >> beam.Map(str)
    _ = both | "D" >> beam.Map(str)
    graph, stages = _fused(p)
    assert _layout(stages) == [
        ("impulse", ["Impulse"]),
        ("sdk", ["A"]),
        ("sdk", ["B"]),
        ("flatten", ["F"]),
        ("sdk", ["C"]),
        ("sdk", ["D"]),
    ]
    flatten = stages[3]
    assert sorted(flatten.inputs) == sorted([_out(graph, "A"), _out(graph, "B")])
    assert flatten.outputs == [_out(graph, "F")]
    assert stages[1].outputs == [_out(graph, "A")] and stages[2].outputs == [_out(graph, "B")]


def _side_tag(graph: PipelineGraph, name: str) -> str:
    [t] = [t for t in graph.transforms if t.name == name]
    [tag] = t.side_input_tags()
    return tag


def test_a_side_input_reader_starts_a_stage_and_its_producer_hands_the_side_input_out():
    p = beam.Pipeline()
    imp = p | beam.Impulse()
    side = imp | "S" >> beam.Map(lambda x: 5)
    main = imp | "A" >> beam.Map(lambda x: 1)
    _ = main | "R" >> beam.Map(lambda x, s: x + sum(s), beam.pvalue.AsList(side)) | "D" >> beam.Map(str)
    graph, stages = _fused(p)
    # R's main input comes from A's SDK stage, but R must wait for the whole side input: new stage
    assert _layout(stages) == [("impulse", ["Impulse"]), ("sdk", ["S"]), ("sdk", ["A"]), ("sdk", ["R", "D"])]
    producer, before, reader = stages[1:]
    assert producer.outputs == [_out(graph, "S")] and before.outputs == [_out(graph, "A")]
    assert reader.inputs == [_out(graph, "A")], "a side input is not a main input of the stage"
    [r] = [t for t in graph.transforms if t.name == "R"]
    assert reader.side_inputs == [(_out(graph, "S"), r.id, _side_tag(graph, "R"))]
    assert producer.side_inputs == before.side_inputs == []


def test_a_pcollection_read_as_main_and_side_input_leaves_its_stage():
    # R reads A's output as its main input and as a side input: it cannot fuse with A.
    p = beam.Pipeline()
    a = p | beam.Impulse() | "A" >> beam.Map(lambda x: 1)
    _ = a | "R" >> beam.Map(lambda x, s: x + sum(s), beam.pvalue.AsList(a))
    graph, stages = _fused(p)
    assert _layout(stages) == [("impulse", ["Impulse"]), ("sdk", ["A"]), ("sdk", ["R"])]
    [r] = [t for t in graph.transforms if t.name == "R"]
    assert stages[1].outputs == [_out(graph, "A")]
    assert stages[2].inputs == [_out(graph, "A")]
    assert stages[2].side_inputs == [(_out(graph, "A"), r.id, _side_tag(graph, "R"))]


class _BagDoFn(beam.DoFn):
    BAG = userstate.BagStateSpec("bag", coders.VarIntCoder())

    def process(self, kv, bag=beam.DoFn.StateParam(BAG)):
        bag.add(kv[1])
        yield kv


class _TimerDoFn(beam.DoFn):
    TIMER = userstate.TimerSpec("t", beam.TimeDomain.WATERMARK)

    def process(self, kv, timer=beam.DoFn.TimerParam(TIMER)):
        timer.set(0)
        yield kv

    @userstate.on_timer(TIMER)
    def fire(self):
        yield ("fired", 0)


def test_a_stateful_pardo_heads_a_stage_and_what_follows_it_fuses_behind_it():
    for dofn in (_BagDoFn(), _TimerDoFn()):
        p = beam.Pipeline()
        _ = (
            p
            | beam.Impulse()
            | "A" >> beam.Map(lambda x: ("k", 1)).with_output_types(tuple[str, int])
            | "S" >> beam.ParDo(dofn)
            | "D" >> beam.Map(str)
        )
        graph, stages = _fused(p)
        assert _layout(stages) == [("impulse", ["Impulse"]), ("sdk", ["A"]), ("sdk", ["S", "D"])], type(dofn)
        assert stages[1].outputs == [_out(graph, "A")] and stages[2].inputs == [_out(graph, "A")]


class _Range(RestrictionProvider):
    def initial_restriction(self, element):
        return OffsetRange(0, element)

    def create_tracker(self, restriction):
        return OffsetRestrictionTracker(restriction)

    def restriction_size(self, element, restriction):
        return restriction.size()


class _CountTo(beam.DoFn):
    def process(self, n, tracker=beam.DoFn.RestrictionParam(_Range())):
        position = tracker.current_restriction().start
        while tracker.try_claim(position):
            yield position
            position += 1


def test_a_splittable_dofn_is_cut_before_its_process_part():
    p = beam.Pipeline()
    _ = p | beam.Impulse() | "A" >> beam.Map(lambda x: 3) | "SDF" >> beam.ParDo(_CountTo()) | "D" >> beam.Map(str)
    graph, stages = _fused(p)
    # pair_with_restriction and split_and_size fuse with A; the process part takes its input
    # (sized restrictions) from the runner, which can reschedule residuals as more of it.
    assert _layout(stages) == [
        ("impulse", ["Impulse"]),
        ("sdk", ["A", "SDF/PairWithRestriction", "SDF/SplitAndSizeRestrictions"]),
        ("sdk", ["SDF/Process", "D"]),
    ]
    assert [t.urn for t in stages[1].transforms[1:]] == [urns.SDF_PAIR_WITH_RESTRICTION, urns.SDF_SPLIT_AND_SIZE]
    assert stages[2].transforms[0].urn == urns.SDF_PROCESS_SIZED
    sized = _out(graph, "SDF/SplitAndSizeRestrictions")
    assert stages[1].outputs == [sized] and stages[2].inputs == [sized]


def _summed_then_printed(p: beam.Pipeline) -> None:
    _ = (
        p
        | beam.Impulse()
        | "A" >> beam.Map(lambda x: ("k", 1))
        | "Sum" >> beam.CombinePerKey(sum)
        | "C" >> beam.Map(str)
    )


def test_a_lifted_combine_fuses_its_precombine_upstream_and_its_merge_and_extract_downstream():
    p = beam.Pipeline()
    _summed_then_printed(p)
    graph, stages = _fused(p)
    assert _layout(stages) == [
        ("impulse", ["Impulse"]),
        ("sdk", ["A", "Sum/Precombine"]),
        ("group", ["Sum/Group"]),
        ("sdk", ["Sum/MergeAccumulators", "Sum/ExtractOutputs", "C"]),
    ]
    assert stages[1].outputs == [_out(graph, "Sum/Precombine")]


def test_without_fusion_every_transform_is_a_stage_except_a_lifted_combines_extract():
    p = beam.Pipeline()
    _summed_then_printed(p)
    graph, stages = _fused(p, enabled=False)
    assert _layout(stages) == [
        ("impulse", ["Impulse"]),
        ("sdk", ["A"]),
        ("sdk", ["Sum/Precombine"]),
        ("group", ["Sum/Group"]),
        ("sdk", ["Sum/MergeAccumulators", "Sum/ExtractOutputs"]),
        ("sdk", ["C"]),
    ]
    # every PCollection read by another stage leaves the stage producing it; the merge's does not
    assert [s.outputs for s in stages] == [
        [_out(graph, "Impulse")],
        [_out(graph, "A")],
        [_out(graph, "Sum/Precombine")],
        [_out(graph, "Sum/Group")],
        [_out(graph, "Sum/ExtractOutputs")],
        [],
    ]


def test_without_fusion_a_side_input_reader_and_a_stateful_pardo_are_still_stages():
    p = beam.Pipeline()
    a = p | beam.Impulse() | "A" >> beam.Map(lambda x: ("k", 1)).with_output_types(tuple[str, int])
    _ = a | "S" >> beam.ParDo(_BagDoFn()) | "R" >> beam.Map(lambda x, s: x, beam.pvalue.AsList(a))
    _, stages = _fused(p, enabled=False)
    assert _layout(stages) == [("impulse", ["Impulse"]), ("sdk", ["A"]), ("sdk", ["S"]), ("sdk", ["R"])]
    assert len(stages[3].side_inputs) == 1


class _EvenOdd(beam.DoFn):
    def process(self, x):
        yield 0
        yield beam.pvalue.TaggedOutput("odd", 1)


def test_multi_output_pardo_hands_out_only_the_outputs_read_outside_its_stage():
    p = beam.Pipeline()
    parts = p | beam.Impulse() | "Split" >> beam.ParDo(_EvenOdd()).with_outputs("odd", main="even")
    _ = parts.even | "E" >> beam.Map(str)  # fused: stays inside
    _ = parts.odd | "G" >> beam.Map(lambda x: (x, x)) | beam.GroupByKey()
    _ = parts.odd | "O" >> beam.Map(str)  # inside too, but G's output goes to the group
    graph, stages = _fused(p)
    # (with_outputs wraps the ParDo in a composite of the given name)
    assert _layout(stages)[:2] == [("impulse", ["Impulse"]), ("sdk", ["Split/ParDo(_EvenOdd)", "E", "G", "O"])]
    assert stages[1].outputs == [_out(graph, "G")]


def test_test_stream_is_a_runner_stage_that_hands_out_everything_it_produces():
    p = beam.Pipeline()
    _ = p | "TS" >> test_stream.TestStream().add_elements([1]).advance_watermark_to_infinity() | "A" >> beam.Map(str)
    graph, stages = _fused(p)
    assert _layout(stages) == [("test_stream", ["TS"]), ("sdk", ["A"])]
    assert stages[0].outputs == [_out(graph, "TS")] and stages[1].inputs == [_out(graph, "TS")]


# -- hand-built graphs: the runner's own one-input transforms ----------------------------------


def _graph(*transforms: tuple[str, str, dict, dict]) -> PipelineGraph:
    """Leaf transforms (id, urn, inputs, outputs), all roots, in a pipeline of their own."""
    proto = beam_runner_api_pb2.Pipeline()
    for tid, urn, inputs, outputs in transforms:
        t = proto.components.transforms[tid]
        t.unique_name, t.spec.urn = tid, urn
        t.inputs.update(inputs)
        t.outputs.update(outputs)
        if urn == urns.PAR_DO:
            t.spec.payload = beam_runner_api_pb2.ParDoPayload().SerializeToString()
        proto.root_transform_ids.append(tid)
    return PipelineGraph(proto)


def test_rekeying_and_reshuffle_run_in_the_runner_like_a_one_input_flatten():
    graph = _graph(
        ("imp", urns.IMPULSE, {}, {"out": "p0"}),
        ("a", urns.PAR_DO, {"in": "p0"}, {"out": "p1"}),
        ("tobytes", urns.KEYS_TO_BYTES, {"in": "p1"}, {"out": "p2"}),
        ("b", urns.PAR_DO, {"in": "p2"}, {"out": "p3"}),
        ("frombytes", urns.KEYS_FROM_BYTES, {"in": "p3"}, {"out": "p4"}),
        ("shuffle", urns.RESHUFFLE, {"in": "p4"}, {"out": "p5"}),
        ("c", urns.PAR_DO, {"in": "p5"}, {"out": "p6"}),
    )
    stages = fusion.fuse(graph)
    assert _layout(stages) == [
        ("impulse", ["imp"]),
        ("sdk", ["a"]),
        ("flatten", ["tobytes"]),
        ("sdk", ["b"]),
        ("flatten", ["frombytes"]),
        ("flatten", ["shuffle"]),
        ("sdk", ["c"]),
    ]
    assert [(s.inputs, s.outputs) for s in stages] == [
        ([], ["p0"]),
        (["p0"], ["p1"]),
        (["p1"], ["p2"]),
        (["p2"], ["p3"]),
        (["p3"], ["p4"]),
        (["p4"], ["p5"]),
        (["p5"], []),
    ]
