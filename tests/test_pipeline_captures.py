"""--capture-pipelines writes every pipeline a case submits, and the check over a run's captures
(tests/pipeline_captures.py) tells a TestStream any runner decodes from one only the Python SDK
does: on real pipelines, Beam's own TestStream among them, and on a whole session in a subprocess."""

import textwrap

import apache_beam as beam
from apache_beam.coders import coders
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.portability.api import beam_runner_api_pb2
from apache_beam.testing import test_stream
from apache_beam.transforms.window import TimestampedValue

from conformance.api import TestStream
from conformance.authoring.streams import PYTHON_ONLY_ANNOTATION
from conformance.capabilities import TEST_STREAM_URN
from pipeline_captures import StreamsChecked, check_directory, check_pipeline


def _proto(stream) -> beam_runner_api_pb2.Pipeline:
    p = beam.Pipeline(options=PipelineOptions(["--streaming"]))
    _ = p | "Stream" >> stream | beam.Map(lambda x: x)
    return p.to_runner_api()


def _checked(proto) -> StreamsChecked:
    checked = StreamsChecked()
    check_pipeline("case-1.pb", proto, checked)
    return checked


def _stream_transform(proto):
    (transform,) = [t for t in proto.components.transforms.values() if t.spec.urn == TEST_STREAM_URN]
    return transform


def test_a_stream_of_standard_coders_decodes_event_by_event():
    checked = _checked(_proto(TestStream().add_elements([TimestampedValue(("k", 1), 1), ("j", 2)]).add_elements([])))
    assert checked.problems == [] and checked.streams == 1 and checked.events_decoded == 2


def test_beams_default_test_stream_is_a_problem():
    checked = _checked(_proto(test_stream.TestStream().add_elements([1])))
    assert len(checked.problems) == 1
    assert "a runner of another SDK cannot decode its events" in checked.problems[0]
    assert "beam:coder:pickled_python:v1" in checked.problems[0]


def test_an_output_of_another_coder_than_the_payloads_is_a_problem():
    # findings/flink.md F2: Beam's TestStream given a coder leaves its output untyped
    checked = _checked(_proto(test_stream.TestStream(coder=coders.VarIntCoder()).add_elements([1])))
    assert [p for p in checked.problems if "output 'None' has coder" in p and "not the payload's" in p]


def test_a_declared_python_only_stream_is_listed_not_a_problem():
    stream = TestStream(coder=coders.FastPrimitivesCoder(), python_only="pickled on purpose").add_elements([1])
    checked = _checked(_proto(stream))
    assert checked.problems == []
    assert checked.python_only == ["case-1.pb: Stream: pickled on purpose"]


def test_a_python_only_declaration_on_a_standard_stream_is_a_problem():
    proto = _proto(TestStream().add_elements([1]))
    _stream_transform(proto).annotations[PYTHON_ONLY_ANNOTATION] = b"stale"
    assert _checked(proto).problems == ["case-1.pb: Stream: declares python_only, yet its coder is standard"]


def test_an_event_with_bytes_left_after_its_value_is_a_problem():
    proto = _proto(TestStream().add_elements([1, 2]))
    transform = _stream_transform(proto)
    payload = beam_runner_api_pb2.TestStreamPayload.FromString(transform.spec.payload)
    payload.events[0].element_event.elements[1].encoded_element += b"\x07"
    transform.spec.payload = payload.SerializeToString()
    checked = _checked(proto)
    assert "case-1.pb: Stream: an event has 1 bytes left after its value" in checked.problems
    assert "case-1.pb: Stream: 1 values decoded whole from 2 element events" in checked.problems


CASES = textwrap.dedent("""
    import apache_beam as beam
    from apache_beam.testing import test_stream
    from conformance.api import TestStream, capability, check

    @capability("pardo.basic")
    def test_two_pipelines(runner):
        for n in (1, 2):
            p = runner.pipeline()
            check(p | beam.Create([n]) | beam.Map(lambda x: x * 10), [n * 10])
            runner.run(p)

    @capability("teststream")
    def test_ours(runner):
        p = runner.pipeline()
        check(p | TestStream().add_elements(["a"]).advance_watermark_to_infinity(), ["a"])
        runner.run(p)

    @capability("teststream")
    def test_beams(runner):
        p = runner.pipeline()
        check(p | test_stream.TestStream().add_elements(["a"]).advance_watermark_to_infinity(), ["a"])
        runner.run(p)
""")


def test_a_session_captures_every_pipeline_and_the_check_reads_them(pytester):
    pytester.makepyfile(test_cases=CASES)
    captured = pytester.path / "captured"
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--no-results", "--target", "reference", "--capture-pipelines", str(captured)
    )
    assert result.ret == 0, result.stdout.str()[-3000:]
    files = sorted(str(p.relative_to(captured)) for p in captured.rglob("*.pb"))
    assert files == ["cases/beams-1.pb", "cases/ours-1.pb", "cases/two_pipelines-1.pb", "cases/two_pipelines-2.pb"]
    first = beam_runner_api_pb2.Pipeline.FromString((captured / "cases/two_pipelines-1.pb").read_bytes())
    assert any(t.unique_name.startswith("Map(<lambda at test_cases.py") for t in first.components.transforms.values())
    checked = check_directory(captured)
    assert checked.pipelines == 4 and checked.streams == 2
    assert [p.split(":", 1)[0] for p in checked.problems] == ["cases/beams-1.pb"]  # pickled_python
