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
