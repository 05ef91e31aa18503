"""A job that fails refusing the pipeline's TestStream is told apart from any other failure: its error
names the TestStream by URN, or by the TestStream transform's id in the submitted pipeline (how
Beam's Spark job server refuses it), and names no other transform's id by accident."""

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.test_stream import TestStream

from conformance.authoring.case_runner import refuses_test_stream
from conformance.capabilities import TEST_STREAM_URN


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
