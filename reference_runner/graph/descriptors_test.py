"""Unit tests of bundle descriptors (graph/descriptors.py): the SDK keeps the coders it declared on a
stage's PCollections; the runner's readable (length-prefixed) coders appear only where the runner
meets the stage's bytes: data ports, side inputs, a keyed head's input (state keys) and timers."""

from __future__ import annotations

import apache_beam as beam
from apache_beam.portability.api import beam_fn_api_pb2, beam_runner_api_pb2
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms import userstate
from apache_beam.transforms.timeutil import TimeDomain

from reference_runner import ReferenceRunner
from reference_runner.graph import front_end, urns
from reference_runner.graph.opaque_coders import Readable
from reference_runner.graph.plan import Plan, build_plan


class _Tag:
    """A user type; its coder, the user's own, is one the runner does not read: length-prefixed
    wherever the runner meets it, as the SDK declared it everywhere else."""

    def __init__(self, name: str):
        self.name = name

    def __eq__(self, other):
        return isinstance(other, _Tag) and other.name == self.name

    def __hash__(self):
        return hash(self.name)


class _TagCoder(beam.coders.Coder):
    def encode(self, value: _Tag) -> bytes:
        return value.name.encode()

    def decode(self, encoded: bytes) -> _Tag:
        return _Tag(encoded.decode())

    def is_deterministic(self) -> bool:
        return True


beam.coders.registry.register_coder(_Tag, _TagCoder)
_TAG = ["beam:coder:pickled_python:v1"]  # as _urns shows _TagCoder


class _CountPerKey(beam.DoFn):
    """Counts a key's elements in state; a timer at the end of the window emits "key:count:sides"."""

    COUNT = userstate.CombiningValueStateSpec("count", beam.coders.VarIntCoder(), beam.combiners.CountCombineFn())
    FLUSH = userstate.TimerSpec("flush", TimeDomain.WATERMARK)

    def process(self, kv, count=beam.DoFn.StateParam(COUNT), flush=beam.DoFn.TimerParam(FLUSH)):
        count.add(1)
        flush.set(beam.transforms.window.GlobalWindow().max_timestamp())

    @userstate.on_timer(FLUSH)
    def on_flush(self, key=beam.DoFn.KeyParam, count=beam.DoFn.StateParam(COUNT)):
        yield f"{key.name}:{count.read()}"


def _pipeline(p: beam.Pipeline) -> None:
    sides = p | "Sides" >> beam.Create(["x", "y"]) | "SideTags" >> beam.Map(_Tag).with_output_types(_Tag)
    names = (
        p
        | "Names" >> beam.Create(["a", "b", "a"]).with_output_types(str)
        | "Tag" >> beam.Map(_Tag).with_output_types(_Tag)
        | "Keep" >> beam.Map(lambda t: t).with_output_types(_Tag)
    )
    counted = (
        names
        | "Key" >> beam.Map(lambda t: (t, 1)).with_output_types(tuple[_Tag, int])
        | "Count" >> beam.ParDo(_CountPerKey())  # (no side input: Beam 2.77 may take it for the main one)
        | "WithSides" >> beam.Map(lambda s, sides: f"{s}:{len(sides)}", beam.pvalue.AsList(sides))
    )
    assert_that(counted, equal_to(["a:2:2", "b:1:2"]))


def _plan() -> Plan:
    p = beam.Pipeline()
    _pipeline(p)
    return build_plan(p.to_runner_api(), front_end.REFERENCE)


def _stage_with(plan: Plan, name: str):
    [stage] = [s for s in plan.stages if any(plan.components.transforms[t].unique_name == name for t in s.transforms)]
    assert stage.descriptor is not None
    return stage, stage.descriptor.instantiate(stage.id).proto


def _transform(plan: Plan, name: str) -> str:
    [tid] = [tid for tid, t in plan.components.transforms.items() if t.unique_name == name]
    return tid


def _urns(pbd, coder_id: str) -> list:
    """The coder as nested (urn, parts...) lists."""
    coder = pbd.coders[coder_id]
    return [coder.spec.urn, *(_urns(pbd, c) for c in coder.component_coder_ids)]


def _port_coders(pbd) -> dict[str, str]:
    """{PCollection: the wire coder of its data port}"""
    ports = {}
    for t in pbd.transforms.values():
        if t.spec.urn in (urns.DATA_INPUT, urns.DATA_OUTPUT):
            pcolls = list(t.inputs.values()) + list(t.outputs.values())  # one of each port
            ports[pcolls[0]] = beam_fn_api_pb2.RemoteGrpcPort.FromString(t.spec.payload).coder_id
    return ports


def test_a_stage_keeps_the_sdks_coders_inside_and_length_prefixes_its_data_ports():
    plan = _plan()
    stage, pbd = _stage_with(plan, "Keep")
    tagged = plan.components.transforms[_transform(plan, "Tag")].outputs["None"]
    key = plan.components.transforms[_transform(plan, "Key")].outputs["None"]
    # Tag's output is read by Keep in the same stage: the SDK's own coder
    assert tagged not in stage.outputs
    assert pbd.pcollections[tagged].coder_id == plan.components.pcollections[tagged].coder_id
    assert _urns(pbd, pbd.pcollections[tagged].coder_id) == _TAG
    # Key's output leaves the stage (for the stateful Count): the PCollection keeps its coder, its
    # port carries it length-prefixed
    assert stage.outputs == [key]
    assert _urns(pbd, pbd.pcollections[key].coder_id) == [urns.KV_CODER, _TAG, [urns.VARINT_CODER]]
    assert _urns(pbd, _port_coders(pbd)[key]) == [
        urns.WINDOWED_VALUE_CODER,
        [urns.KV_CODER, [urns.LENGTH_PREFIX_CODER, _TAG], [urns.VARINT_CODER]],
        [urns.GLOBAL_WINDOW_CODER],
    ]
    # and the pipeline itself is as the SDK submitted it
    assert all(c.spec.urn != urns.LENGTH_PREFIX_CODER for c in plan.components.coders.values())


def test_where_the_runner_meets_a_stages_bytes_the_descriptor_names_the_readable_coders():
    plan = _plan()
    readable = Readable(plan.components)
    count = _transform(plan, "Count")
    stage, pbd = _stage_with(plan, "Count")
    [main] = stage.inputs
    side_stage, side_pbd = _stage_with(plan, "WithSides")
    [side] = side_stage.side_pcolls
    # state keys: the keyed head's input; side inputs: as the runner serves them
    for descriptor, pcoll in ((pbd, main), (side_pbd, side)):
        original = plan.components.pcollections[pcoll].coder_id
        assert readable.element(original) != original
        assert descriptor.pcollections[pcoll].coder_id == readable.element(original)
    assert _urns(pbd, pbd.pcollections[main].coder_id) == [
        urns.KV_CODER,
        [urns.LENGTH_PREFIX_CODER, _TAG],
        [urns.VARINT_CODER],
    ]
    # timers: their family's coder, in the descriptor's copy of the ParDo only
    payload = beam_runner_api_pb2.ParDoPayload.FromString(pbd.transforms[count].spec.payload)
    [timers] = payload.timer_family_specs.values()
    assert _urns(pbd, timers.timer_family_coder_id) == [
        urns.TIMER_CODER,
        [urns.LENGTH_PREFIX_CODER, _TAG],
        [urns.GLOBAL_WINDOW_CODER],
    ]
    submitted = beam_runner_api_pb2.ParDoPayload.FromString(plan.components.transforms[count].spec.payload)
    assert submitted.timer_family_specs["flush"].timer_family_coder_id != timers.timer_family_coder_id


def test_state_timers_and_side_inputs_of_a_coder_the_runner_does_not_read_agree_with_the_sdk():
    with beam.Pipeline(runner=ReferenceRunner()) as p:
        _pipeline(p)
