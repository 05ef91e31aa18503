"""Unit tests of one bundle attempt (worker/attempt.py) on Beam's SDK harness in this process
(worker/embedded.py): outputs, a channel split, an injected fault and a user's exception."""

from __future__ import annotations

import apache_beam as beam
import pytest
from apache_beam.coders import coders
from apache_beam.metrics import Metrics, monitoring_infos
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import Timestamp
from apache_beam.utils.windowed_value import WindowedValue

from reference_runner.bundling import Split
from reference_runner.graph import descriptors, front_end, fusion
from reference_runner.worker import attempt
from reference_runner.worker.codecs import Coders, split_elements
from reference_runner.worker.embedded import EmbeddedWorker
from reference_runner.worker.state import StateService

SEEN = Metrics.counter("attempt_test", "seen")


def _double(x: int) -> int:
    SEEN.inc()
    if x == 13:
        raise ValueError(f"unit test refuses {x}")
    return 2 * x


@pytest.fixture(scope="module")
def doubling():
    """A stage reading ints from the runner (the output of a Flatten) and handing their doubles
    back (to another Flatten), registered on a worker: (worker, descriptor, input, output impls)."""
    p = beam.Pipeline()
    ints = p | beam.Impulse() | "Ints" >> beam.FlatMap(lambda _: []).with_output_types(int)
    doubled = (ints,) | "In" >> beam.Flatten() | "Double" >> beam.Map(_double).with_output_types(int)
    _ = (doubled,) | "Out" >> beam.Flatten()
    graph = front_end.checked_graph(p.to_runner_api(), front_end.REFERENCE)
    [stage] = [s for s in fusion.fuse(graph) if [t.name for t in s.transforms] == ["Double"]]
    described = descriptors.build(stage, graph.components, "attempt-test-double")
    worker = EmbeddedWorker(StateService())
    worker.register(described.proto)
    runner_coders = Coders(graph.components)
    [(output_transform, out)] = described.output_transforms.items()
    yield (
        worker,
        described,
        runner_coders.windowed(stage.inputs[0]).get_impl(),
        runner_coders.windowed(out).get_impl(),
        output_transform,
    )
    worker.stop()


def _elements(impl, values) -> list[bytes]:
    return [impl.encode_nested(WindowedValue(v, Timestamp(micros=1000 * v), (GlobalWindow(),))) for v in values]


def _outputs(result: attempt.Attempt, impl, output_transform: str) -> list[tuple[int, int]]:
    pieces = split_elements(impl, result.data.get(output_transform, b""))
    return [(wv.value, wv.timestamp.micros) for wv in map(impl.decode_nested, pieces)]


def _seen(infos) -> int | None:
    """The user counter attempt_test/seen among monitoring infos (None if not reported)."""
    for info in infos:
        if (
            monitoring_infos.is_user_monitoring_info(info)
            and info.labels.get("NAMESPACE") == "attempt_test"
            and info.labels.get("NAME") == "seen"
        ):
            return coders.VarIntCoder().decode(info.payload)
    return None


def test_an_attempt_hands_back_every_output_of_its_bundle(doubling):
    worker, described, in_impl, out_impl, output_transform = doubling
    result = attempt.run(worker, described.proto.id, described.input_transform, _elements(in_impl, range(5)))
    # every output keeps its input's timestamp and window
    assert _outputs(result, out_impl, output_transform) == [(0, 0), (2, 1000), (4, 2000), (6, 3000), (8, 4000)]
    assert result.first_residual is None and result.split_residuals == []
    assert _seen(result.response.monitoring_infos) == 5


class _Fed(list):
    """Elements that remember which of them were handed to the worker (attempt.run slices them)."""

    def __init__(self, elements):
        super().__init__(elements)
        self.fed: list[int] = []

    def __getitem__(self, index):
        if isinstance(index, slice):
            self.fed.extend(range(*index.indices(len(self))))
        return super().__getitem__(index)


def test_a_channel_split_at_element_k_leaves_k_onwards_unread(doubling):
    worker, described, in_impl, out_impl, output_transform = doubling
    elements = _Fed(_elements(in_impl, range(10)))
    # fraction 0 of the remainder: keep nothing more than what was read before the request
    result = attempt.run(
        worker, described.proto.id, described.input_transform, elements, split=Split(at=4, fraction=0.0)
    )
    assert result.first_residual == 4
    assert elements.fed == [0, 1, 2, 3], "the residual's elements are not even sent"
    assert [v for v, _ in _outputs(result, out_impl, output_transform)] == [0, 2, 4, 6]
    assert _seen(result.response.monitoring_infos) == 4


def test_a_split_keeping_half_the_remainder_reads_up_to_the_residual_and_no_further(doubling):
    worker, described, in_impl, out_impl, output_transform = doubling
    # 6 of 10 elements unread at the request, half of them kept: the residual starts at 4 + 3
    result = attempt.run(
        worker,
        described.proto.id,
        described.input_transform,
        _elements(in_impl, range(10)),
        split=Split(at=4, fraction=0.5),
    )
    assert result.first_residual == 7
    assert [v for v, _ in _outputs(result, out_impl, output_transform)] == [0, 2, 4, 6, 8, 10, 12]
    assert _seen(result.response.monitoring_infos) == 7


def test_an_injected_fault_fails_the_attempt_with_the_metrics_reported_before_it(doubling):
    worker, described, in_impl, _, _ = doubling
    with pytest.raises(attempt.AttemptFailed) as failed:
        attempt.run(worker, described.proto.id, described.input_transform, _elements(in_impl, range(6)), fault_at=3)
    assert failed.value.injected is True
    assert "fault injected by the reference runner before element 3 of 6" in str(failed.value)
    assert _seen(failed.value.metrics) == 3
    assert failed.value.instruction_id


def test_a_fault_past_the_split_point_fails_the_attempt_where_its_shortened_bundle_ends(doubling):
    worker, described, in_impl, _, _ = doubling
    with pytest.raises(attempt.AttemptFailed) as failed:
        attempt.run(
            worker,
            described.proto.id,
            described.input_transform,
            _elements(in_impl, range(10)),
            split=Split(at=4, fraction=0.0),
            fault_at=8,
        )
    assert failed.value.injected is True
    assert "before element 4 of 10" in str(failed.value)
    assert _seen(failed.value.metrics) == 4


def test_a_users_exception_fails_the_attempt_with_the_users_message(doubling):
    worker, described, in_impl, _, _ = doubling
    with pytest.raises(attempt.AttemptFailed) as failed:
        attempt.run(worker, described.proto.id, described.input_transform, _elements(in_impl, [11, 12, 13, 14]))
    assert failed.value.injected is False
    assert "unit test refuses 13" in str(failed.value)


def test_the_worker_runs_the_next_attempt_after_a_failed_one(doubling):
    worker, described, in_impl, out_impl, output_transform = doubling
    with pytest.raises(attempt.AttemptFailed):
        attempt.run(worker, described.proto.id, described.input_transform, _elements(in_impl, range(4)), fault_at=2)
    retry = attempt.run(worker, described.proto.id, described.input_transform, _elements(in_impl, range(4)))
    assert [v for v, _ in _outputs(retry, out_impl, output_transform)] == [0, 2, 4, 6]
    assert _seen(retry.response.monitoring_infos) == 4, "a retry's metrics do not include the failed attempt's"
