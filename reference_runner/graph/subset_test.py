from apache_beam.portability.api import beam_runner_api_pb2

from reference_runner.graph import subset, urns


def _components() -> beam_runner_api_pb2.Components:
    c = beam_runner_api_pb2.Components()
    for coder_id, parts in {
        "kv": ["str", "int"],
        "str": [],
        "int": [],
        "window": [],
        "state": ["bag-of"],
        "bag-of": [],
        "unused": [],
    }.items():
        c.coders[coder_id].component_coder_ids.extend(parts)
    c.windowing_strategies["ws"].window_coder_id = "window"
    c.windowing_strategies["ws"].environment_id = "env"
    c.environments["env"].urn = "beam:env:embedded_python:v1"
    c.environments["other-env"].urn = "beam:env:embedded_python:v1"
    for pcoll in ("in", "out", "elsewhere"):
        c.pcollections[pcoll].coder_id = "kv" if pcoll != "elsewhere" else "unused"
        c.pcollections[pcoll].windowing_strategy_id = "ws"
    return c


def _pardo() -> beam_runner_api_pb2.PTransform:
    payload = beam_runner_api_pb2.ParDoPayload()
    payload.state_specs["bag"].bag_spec.element_coder_id = "state"
    t = beam_runner_api_pb2.PTransform(environment_id="env")
    t.spec.urn = urns.PAR_DO
    t.spec.payload = payload.SerializeToString()
    t.inputs["in"] = "in"
    t.outputs["out"] = "out"
    return t


def test_keeps_what_the_transforms_name_transitively_and_drops_the_rest():
    used = subset.needed(_components(), {"fn": _pardo()})
    assert set(used.transforms) == {"fn"}
    assert set(used.pcollections) == {"in", "out"}
    assert set(used.windowing_strategies) == {"ws"}
    # the state spec's coder and its component come from the payload
    assert set(used.coders) == {"kv", "str", "int", "window", "state", "bag-of"}
    assert set(used.environments) == {"env"}


def test_a_payload_it_cannot_read_keeps_every_coder_and_environment():
    t = _pardo()
    t.spec.urn = "beam:transform:someone_elses:v1"
    used = subset.needed(_components(), {"fn": t})
    assert set(used.coders) == set(_components().coders)
    assert set(used.environments) == {"env", "other-env"}
    assert set(used.pcollections) == {"in", "out"}


def test_named_pcollections_are_kept_without_any_transform():
    used = subset.needed(_components(), {}, ["elsewhere"])
    assert set(used.pcollections) == {"elsewhere"}
    assert set(used.coders) == {"unused", "window"}
