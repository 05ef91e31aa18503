import apache_beam as beam

from reference_runner.graph.pipeline import PipelineGraph


def test_a_sink_without_outputs_is_a_leaf():
    # The Go SDK ends a pipeline with a ParDo that has no outputs; dropping it would run the job
    # to DONE without ever calling the user's last DoFn.
    p = beam.Pipeline()
    _ = p | beam.Create([1]) | "Sink" >> beam.Map(print)
    proto = p.to_runner_api()
    [sink] = [t for t in proto.components.transforms.values() if t.unique_name == "Sink"]
    sink.outputs.clear()
    assert "Sink" in {t.proto.unique_name for t in PipelineGraph(proto).transforms}


def test_an_untagged_test_stream_event_goes_to_the_only_output():
    from apache_beam.portability.api import beam_runner_api_pb2

    from reference_runner.graph.pipeline import test_stream_output

    go_style = beam_runner_api_pb2.PTransform(outputs={"i0": "n1"})  # the Go SDK tags no event
    assert test_stream_output(go_style, "") == "n1"
    assert test_stream_output(go_style, "other") is None
    two = beam_runner_api_pb2.PTransform(outputs={"a": "n1", "b": "n2"})
    assert test_stream_output(two, "b") == "n2"
    assert test_stream_output(two, "") is None  # ambiguous: refused by the check
