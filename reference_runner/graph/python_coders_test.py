from apache_beam.coders import coders
from apache_beam.portability.api import beam_runner_api_pb2
from apache_beam.runners import pipeline_context
from google.protobuf import wrappers_pb2

from reference_runner.graph import python_coders, urns


def _proto(coder) -> beam_runner_api_pb2.Coder:
    context = pipeline_context.PipelineContext()
    coder_id = context.coders.get_id(coder)
    return context.to_runner_api().coders[coder_id]


def test_the_class_name_is_read_without_unpickling():
    assert python_coders.class_name(_proto(coders.FastPrimitivesCoder())) == "FastPrimitivesCoder"
    assert python_coders.class_name(_proto(coders.PickleCoder())) == "PickleCoder"
    # a user's class from a module nobody can import: the pickle after the '$' is never read
    payload = wrappers_pb2.BytesValue(value=b"MyKeyCoder$not a pickle at all").SerializeToString()
    unknown = beam_runner_api_pb2.Coder(
        spec=beam_runner_api_pb2.FunctionSpec(urn=urns.PICKLED_PYTHON_CODER, payload=payload)
    )
    assert python_coders.class_name(unknown) == "MyKeyCoder"


def test_other_coders_and_malformed_payloads_have_no_name():
    assert python_coders.class_name(_proto(coders.StrUtf8Coder())) is None
    for payload in (b"\xff\xff", wrappers_pb2.BytesValue(value=b"no dollar").SerializeToString()):
        spec = beam_runner_api_pb2.FunctionSpec(urn=urns.PICKLED_PYTHON_CODER, payload=payload)
        assert python_coders.class_name(beam_runner_api_pb2.Coder(spec=spec)) is None
