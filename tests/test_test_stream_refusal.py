"""A job that fails refusing the pipeline's TestStream is told apart from any other failure: its error
names the TestStream by URN, or by the TestStream transform's id in the submitted pipeline (how
Beam's Spark job server refuses it), and names no other transform's id by accident. And a job
that fails because the runner could not decode the events of a TestStream the case declared
python_only: its error names a non-standard coder URN of that stream's coder, or is the Java
SDK's UnknownCoderWrapper failure, as Beam's Flink job server prints it."""

import apache_beam as beam
from apache_beam.coders import coders
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.test_stream import TestStream

from conformance.authoring import streams as ours
from conformance.authoring.case_runner import refuses_test_stream, undecodable_test_stream
from conformance.capabilities import TEST_STREAM_PYTHON_ONLY, TEST_STREAM_URN, counts_elsewhere, get


def _streaming_pipeline():
    p = beam.Pipeline(options=PipelineOptions(["--streaming"]))
    _ = p | TestStream().add_elements(["a"]).advance_watermark_to_infinity() | beam.Map(str.upper)
    return p


def _test_stream_id(p):
    (tid,) = [t for t, x in p.to_runner_api().components.transforms.items() if x.spec.urn == TEST_STREAM_URN]
    return tid


def test_an_error_naming_the_urn_refuses_the_test_stream():
    assert refuses_test_stream(f"UnsupportedOperationException: {TEST_STREAM_URN}", _streaming_pipeline())


def test_an_error_naming_the_test_stream_transform_by_id_refuses_it():
    p = _streaming_pipeline()
    text = (
        "java.lang.IllegalArgumentException: GreedyPipelineFuser requires all root nodes to be "
        f"runner-implemented beam:transform:impulse:v1 or beam:transform:read:v1 primitives, but transform "
        f"{_test_stream_id(p)} executes in environment Optional[urn: ...]"
    )
    assert refuses_test_stream(text, p)


def test_an_error_naming_another_transform_or_a_longer_id_does_not():
    p = _streaming_pipeline()
    tid = _test_stream_id(p)
    assert not refuses_test_stream("java.lang.ClassCastException: class java.lang.Long cannot be cast", p)
    assert not refuses_test_stream(f"transform {tid}7 failed", p)


def test_a_pipeline_without_a_test_stream_is_never_refused_for_one():
    p = beam.Pipeline()
    _ = p | beam.Create([1]) | beam.Map(lambda x: x)
    assert not refuses_test_stream(f"{TEST_STREAM_URN} ref_AppliedPTransform_TestStream_2", p)


# --------------------------------------------------------------------------- events a runner cannot decode

# What Beam's Flink job server 2.62.0 printed for the case user_types/user_types_from_a_test_stream
# (a KV of a string and a user type): its TestStream source decodes the events in Java.
FLINK_UNKNOWN_CODER = (
    "RuntimeError: Pipeline BeamApp-root-1127122501-997a2d9e_c86998f9-ef47-4685-b97e-7a46f1a02055 failed in "
    "state FAILED: org.apache.beam.sdk.coders.CoderException: `UnknownCoderWrapper` was used to perform an "
    "actual decoding in the Java SDK. Potentially a Java transform is being followed by a cross-language "
    "transform that uses a coder that is not available in the Java SDK. Please make sure that Python "
    "transforms at the multi-language boundary use Beam portable coders."
)
# Flink's failure on the same pipeline without the user type (findings/flink.md F2): no decoding failure
FLINK_CLASS_CAST = (
    "RuntimeError: Pipeline BeamApp-... failed in state FAILED: java.lang.ClassCastException: class "
    "java.lang.Long cannot be cast to class [B (java.lang.Long and [B are in module java.base of loader 'bootstrap')"
)


def _python_only_pipeline(reason="values only the Python SDK encodes"):
    p = beam.Pipeline(options=PipelineOptions(["--streaming"]))
    stream = ours.TestStream(
        coder=coders.TupleCoder([coders.StrUtf8Coder(), coders.FastPrimitivesCoder()]), python_only=reason
    )
    _ = p | stream.add_elements([("k", {"a": 1})]).advance_watermark_to_infinity() | beam.Map(str)
    return p.to_runner_api()


def test_a_java_runners_unknown_coder_error_on_a_python_only_stream_is_undecodable_input():
    assert undecodable_test_stream(FLINK_UNKNOWN_CODER, _python_only_pipeline("why")) == (
        ["beam:coder:pickled_python:v1"],
        "why",
    )


def test_an_error_naming_a_non_standard_urn_of_the_streams_coder_is_undecodable_input():
    # a made-up text (no runner we run names the URN; Prism carries the events undecoded): the rule
    # for a runner whose error names the coder it could not read
    text = "IllegalArgumentException: no coder known for beam:coder:pickled_python:v1"
    assert undecodable_test_stream(text, _python_only_pipeline()) is not None


def test_other_failures_of_a_python_only_stream_are_not():
    assert undecodable_test_stream(FLINK_CLASS_CAST, _python_only_pipeline()) is None
    assert undecodable_test_stream("ValueError: conformance-boom-in-process-1a2b", _python_only_pipeline()) is None
    assert undecodable_test_stream(FLINK_UNKNOWN_CODER, None) is None  # the SDK could not write the proto


def test_a_stream_of_standard_coders_has_no_such_excuse():
    # every TestStream but a declared python_only one is decodable: a runner failing to decode it fails the case
    p = beam.Pipeline(options=PipelineOptions(["--streaming"]))
    _ = p | ours.TestStream().add_elements([("k", 1)]).advance_watermark_to_infinity()
    assert undecodable_test_stream(FLINK_UNKNOWN_CODER, p.to_runner_api()) is None
    # nor does Beam's own TestStream, which declares nothing (the suite no longer builds one)
    assert undecodable_test_stream(FLINK_UNKNOWN_CODER, _streaming_pipeline().to_runner_api()) is None


def test_undecodable_input_counts_under_teststream_except_where_it_is_the_subject():
    assert counts_elsewhere(get("gbk.sessions"), TEST_STREAM_PYTHON_ONLY) is get("teststream")
    # user types from a TestStream: emitting a user coder's events undecoded is what the case asserts
    assert counts_elsewhere(get("coders.opaque_user_types.streaming"), TEST_STREAM_PYTHON_ONLY) is None
