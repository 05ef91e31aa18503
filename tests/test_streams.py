"""The case authors' TestStreams (conformance/authoring/streams.py): a standard coder inferred from
the elements or checked when given, refused with a message naming the value otherwise, the
output PCollections of exactly the payload's coder, the python_only declaration in the proto, and
the tagged single-output stream split per tag. Checked on the pipeline protos the SDK writes and
by running pipelines on the reference runner."""

import apache_beam as beam
import pytest
from apache_beam.coders import coders
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.portability.api import beam_runner_api_pb2
from apache_beam.testing import test_stream
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms import window
from apache_beam.transforms.window import TimestampedValue

from conformance.api import StreamInputError, TaggedTestStream, TestStream
from conformance.authoring.streams import PYTHON_ONLY_ANNOTATION, STANDARD_CODER_URNS
from conformance.capabilities import TEST_STREAM_URN
from reference_runner import ReferenceRunner

STR = "beam:coder:string_utf8:v1"
VARINT = "beam:coder:varint:v1"
KV = "beam:coder:kv:v1"
ITERABLE = "beam:coder:iterable:v1"


def _pipeline(runner=None):
    return beam.Pipeline(runner=runner, options=PipelineOptions(["--streaming"]))


def _tree(components, coder_id):
    """A coder as nested (urn, components...)."""
    proto = components.coders[coder_id]
    return (proto.spec.urn, *(_tree(components, c) for c in proto.component_coder_ids))


def _streams_of(p):
    """(payload coder tree, [output coder trees], annotations) of each TestStream in p's proto."""
    proto = p.to_runner_api()
    components = proto.components
    found = []
    for t in components.transforms.values():
        if t.spec.urn != TEST_STREAM_URN:
            continue
        payload = beam_runner_api_pb2.TestStreamPayload.FromString(t.spec.payload)
        outputs = [_tree(components, components.pcollections[o].coder_id) for o in t.outputs.values()]
        found.append((_tree(components, payload.coder_id), outputs, dict(t.annotations)))
    return found


def _applied(stream):
    p = _pipeline()
    _ = p | "Stream" >> stream
    return p


@pytest.mark.parametrize(
    "values, tree",
    [
        ([1, -5], (VARINT,)),
        (["a", ""], (STR,)),
        ([b"\x00"], ("beam:coder:bytes:v1",)),
        ([1.5, 2.0], ("beam:coder:double:v1",)),
        ([True, False], ("beam:coder:bool:v1",)),
        ([("k", 1)], (KV, (STR,), (VARINT,))),
        ([[1, 2], []], (ITERABLE, (VARINT,))),
        ([("k", [("a", True)]), ("j", [])], (KV, (STR,), (ITERABLE, (KV, (STR,), ("beam:coder:bool:v1",))))),
    ],
)
def test_the_coder_is_inferred_from_the_values_and_the_outputs_get_it(values, tree):
    stream = TestStream().add_elements([TimestampedValue(v, i) for i, v in enumerate(values)])
    [(payload, outputs, _)] = _streams_of(_applied(stream.advance_watermark_to_infinity()))
    assert payload == tree
    assert outputs == [tree]


def test_every_event_and_tag_counts_for_the_inference():
    stream = (
        TestStream(output_tags={"a", "b"})
        .add_elements([1], tag="a")
        .add_elements(["x"], tag="b")
        .advance_watermark_to_infinity(tag="a")
    )
    with pytest.raises(StreamInputError, match=r"'x' \(str\) is not of the type of the values before it \(int"):
        _applied(stream)


@pytest.mark.parametrize(
    "value, names",
    [
        (None, "None has no standard coder"),
        ((1, 2, 3), r"\(1, 2, 3\): a tuple of 3 components has no standard coder"),
        (window.IntervalWindow(0, 1), "IntervalWindow has no standard coder"),
        ([1, "a"], r"\[1, 'a'\]: a list whose elements are of different types \(int and str\)"),
        (2**70, "cannot be encoded with VarIntCoder"),
    ],
)
def test_a_value_without_a_standard_coder_is_refused_naming_it(value, names):
    with pytest.raises(StreamInputError, match=names) as info:
        _applied(TestStream().add_elements([value]))
    if value != 2**70:
        assert "python_only=" in str(info.value) and "restructure the input" in str(info.value)


def test_an_element_less_stream_needs_a_coder():
    with pytest.raises(StreamInputError, match="no elements to infer its coder from: pass coder="):
        _applied(TestStream().advance_watermark_to(10))
    [(payload, outputs, _)] = _streams_of(_applied(TestStream(coder=coders.VarIntCoder()).advance_watermark_to(10)))
    assert payload == (VARINT,) and outputs == [(VARINT,)]


def test_a_given_coder_is_used_and_its_output_gets_it_too():
    # Beam's own TestStream leaves its output untyped: the payload says varint, the output is pickled
    # (docs/findings/flink.md, F2). Ours types the output with the coder's type.
    beams = test_stream.TestStream(coder=coders.VarIntCoder()).add_elements([7])
    [(payload, outputs, _)] = _streams_of(_applied(beams))
    assert payload == (VARINT,) and outputs == [("beam:coder:pickled_python:v1",)]
    ours = TestStream(coder=coders.TupleCoder([coders.StrUtf8Coder(), coders.VarIntCoder()])).add_elements([("k", 7)])
    [(payload, outputs, _)] = _streams_of(_applied(ours))
    assert payload == (KV, (STR,), (VARINT,)) and outputs == [payload]


def test_a_non_standard_coder_is_refused_unless_declared_python_only():
    with pytest.raises(StreamInputError, match="FastPrimitivesCoder is not standard .beam:coder:pickled_python:v1"):
        _applied(TestStream(coder=coders.FastPrimitivesCoder()).add_elements([1]))
    declared = TestStream(coder=coders.FastPrimitivesCoder(), python_only="a case about pickled values")
    [(payload, outputs, annotations)] = _streams_of(_applied(declared.add_elements([1])))
    assert payload == ("beam:coder:pickled_python:v1",) and outputs == [payload]
    assert annotations[PYTHON_ONLY_ANNOTATION] == b"a case about pickled values"


def test_python_only_is_refused_where_nothing_is_python_only():
    with pytest.raises(StreamInputError, match="declares python_only, but its coder VarIntCoder is standard"):
        _applied(TestStream(coder=coders.VarIntCoder(), python_only="no reason").add_elements([1]))
    with pytest.raises(StreamInputError, match="declares python_only but has no coder="):
        _applied(TestStream(python_only="no coder").add_elements([1]))


def test_a_standard_stream_has_no_python_only_annotation():
    [(_, _, annotations)] = _streams_of(_applied(TestStream().add_elements([1])))
    assert PYTHON_ONLY_ANNOTATION not in annotations


def test_an_output_type_that_would_give_the_output_another_coder_is_refused():
    with pytest.raises(StreamInputError, match="would get the coder StrUtf8Coder .* not its events' coder VarIntCoder"):
        _applied(TestStream(coder=coders.VarIntCoder()).add_elements([1]).with_output_types(str))


def test_elements_added_after_the_stream_was_applied_cannot_change_its_coder():
    stream = TestStream().add_elements([1])
    p = _applied(stream)
    stream.add_elements(["a"])
    with pytest.raises(RuntimeError, match="Unable to translate Stream") as info:  # Beam's wrapping
        p.to_runner_api()
    assert isinstance(info.value.__cause__, StreamInputError)
    assert "'a' (str) is not of the type of the values before it (int" in str(info.value.__cause__)


def test_the_standard_coder_urns_are_the_protos():
    assert {STR, VARINT, KV, ITERABLE, "beam:coder:length_prefix:v1"} <= STANDARD_CODER_URNS
    assert "beam:coder:pickled_python:v1" not in STANDARD_CODER_URNS


# --------------------------------------------------------------------------- run on the reference runner


def test_a_stream_of_inferred_coder_runs_and_keeps_values_and_timestamps():
    with _pipeline(ReferenceRunner()) as p:
        out = (
            p
            | TestStream().add_elements([TimestampedValue(("k", [1, 2]), 3)]).advance_watermark_to_infinity()
            | beam.Map(lambda kv, ts=beam.DoFn.TimestampParam: (kv, float(ts)))
        )
        assert_that(out, equal_to([(("k", [1, 2]), 3.0)]))


def test_a_tagged_stream_is_one_single_output_test_stream_split_per_tag():
    stream = (
        TaggedTestStream("main", "side")
        .add_elements("main", [TimestampedValue("a", 1)])
        .add_elements("side", [TimestampedValue(("x", 1), 2)])
        .advance_watermark_to(5)
        .add_elements("main", ["b"])  # at the stream's watermark, as Beam's TestStream places it
        .advance_watermark_to_infinity()
    )
    p = _pipeline(ReferenceRunner())
    outs = p | "Stream" >> stream
    assert set(outs) == {"main", "side"}
    stamped = {
        tag: pcoll | f"Stamp{tag}" >> beam.Map(lambda v, ts=beam.DoFn.TimestampParam: (v, float(ts)))
        for tag, pcoll in outs.items()
    }
    assert_that(stamped["main"], equal_to([("a", 1.0), ("b", 5.0)]), label="main")
    assert_that(stamped["side"], equal_to([(("x", 1), 2.0)]), label="side")
    [(payload, outputs, _)] = _streams_of(p)
    assert payload == (KV, (STR,), ("beam:coder:bytes:v1",)) and outputs == [payload]
    components = p.to_runner_api().components
    typed = {
        t.unique_name: _tree(components, components.pcollections[o].coder_id)
        for t in components.transforms.values()
        if t.unique_name.startswith("Stream/Only[")
        for o in t.outputs.values()
    }
    assert typed == {"Stream/Only[main]": (STR,), "Stream/Only[side]": (KV, (STR,), (VARINT,))}
    p.run().wait_until_finish()


def test_a_tagged_stream_refuses_unknown_tags_and_tags_without_a_coder():
    with pytest.raises(ValueError, match="unknown tag 'other'"):
        TaggedTestStream("main").add_elements("other", [1])
    with pytest.raises(StreamInputError, match="tag 'side'.* no elements to infer its coder from"):
        _applied(TaggedTestStream("main", "side").add_elements("main", [1]))
    given = TaggedTestStream("main", "side", tag_coders={"side": coders.VarIntCoder()}).add_elements("main", [1])
    [(payload, _, _)] = _streams_of(_applied(given))
    assert payload == (KV, (STR,), ("beam:coder:bytes:v1",))
