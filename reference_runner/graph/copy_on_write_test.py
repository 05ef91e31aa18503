from apache_beam.portability.api import beam_runner_api_pb2

from reference_runner.graph import copy_on_write


def _pipeline() -> beam_runner_api_pb2.Pipeline:
    proto = beam_runner_api_pb2.Pipeline(root_transform_ids=["a"])
    proto.components.transforms["a"].unique_name = "A"
    return proto


def _rename(proto: beam_runner_api_pb2.Pipeline, tid: str) -> None:
    proto.components.transforms[tid].unique_name += "!"


def test_a_pass_that_finds_nothing_hands_back_its_input_itself():
    proto = _pipeline()
    assert copy_on_write.edit_each(proto, [], _rename) is proto


def test_a_pass_edits_a_copy_and_leaves_its_input_as_it_was():
    proto = _pipeline()
    out = copy_on_write.edit_each(proto, ["a", "a"], _rename)
    assert out.components.transforms["a"].unique_name == "A!!"
    assert proto == _pipeline()
