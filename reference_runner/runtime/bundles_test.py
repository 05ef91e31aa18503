"""Unit tests of the bundle runner (runtime/bundles.py) on Beam's SDK harness in this process:
injected faults retried until an attempt commits, a channel split's remainder handed back as
residuals, user metrics of committed and failed attempts kept apart, a user's error named."""

from __future__ import annotations

import apache_beam as beam
import pytest
from apache_beam.coders import coders
from apache_beam.metrics import Metrics
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import Timestamp
from apache_beam.utils.windowed_value import WindowedValue

from reference_runner.bundling import Split
from reference_runner.graph import plan as planning
from reference_runner.graph.front_end import REFERENCE
from reference_runner.runtime.bundles import BundleError, BundleRunner
from reference_runner.worker.codecs import Coders
from reference_runner.worker.embedded import EmbeddedWorker
from reference_runner.worker.state import StateService

SEEN = Metrics.counter("bundles_test", "seen")


def _triple(x: int) -> int:
    SEEN.inc()
    if x == 13:
        raise ValueError(f"unit test refuses {x}")
    return 3 * x


class _Policy:
    """Scripted decisions: a split for the first attempt, faults at the given attempts."""

    def __init__(self, split: Split | None = None, faults: dict[int, int] | None = None):
        self._split, self._faults = split, faults or {}
        self.asked: list[tuple[str, int]] = []

    def split(self, stage: str, size: int, splittable: bool = False) -> Split | None:
        split, self._split = self._split, None
        return split

    def fault(self, stage: str, size: int, attempt: int) -> int | None:
        self.asked.append((stage, attempt))
        return self._faults.get(attempt)


class _Trace:
    def __init__(self):
        self.records: list[dict] = []

    def record(self, **fields) -> None:
        self.records.append(fields)


@pytest.fixture(scope="module")
def tripling():
    """A planned stage reading ints from the runner and handing their triples back."""
    p = beam.Pipeline()
    ints = p | beam.Impulse() | "Ints" >> beam.FlatMap(lambda _: []).with_output_types(int)
    tripled = (ints,) | "In" >> beam.Flatten() | "Triple" >> beam.Map(_triple).with_output_types(int)
    _ = (tripled,) | "Out" >> beam.Flatten()
    plan = planning.build_plan(p.to_runner_api(), REFERENCE)
    [stage] = [s for s in plan.stages if s.descriptor and plan.graph.by_id[s.transforms[0]].name == "Triple"]
    assert stage.descriptor is not None  # chosen for having one
    described = stage.descriptor.instantiate("bundles-test-triple")
    state = StateService()
    worker = EmbeddedWorker(state)
    worker.register(described.proto)
    runner_coders = Coders(plan.components)
    yield worker, state, runner_coders, stage, described
    worker.stop()


def _elements(runner_coders, stage, values) -> list[bytes]:
    impl = runner_coders.windowed(stage.inputs[0]).get_impl()
    return [impl.encode_nested(WindowedValue(v, Timestamp(micros=v), (GlobalWindow(),))) for v in values]


def _values(runner_coders, pcoll, elements) -> list[int]:
    impl = runner_coders.windowed(pcoll).get_impl()
    return [impl.decode_nested(e).value for e in elements]


def _seen(infos) -> int:
    [info] = [i for i in infos if i.labels.get("NAME") == "seen"]
    return coders.VarIntCoder().decode(info.payload)


def test_injected_faults_are_retried_and_only_the_committed_attempt_counts(tripling):
    worker, state, runner_coders, stage, described = tripling
    kept: dict[bool, list] = {True: [], False: []}
    policy, trace = _Policy(faults={0: 2, 1: 4}), _Trace()
    runner = BundleRunner(worker, state, runner_coders, lambda infos, ok: kept[ok].append(_seen(infos)), policy, trace)
    committed = runner.run(stage, described, _elements(runner_coders, stage, range(5)), record={"bundle": "b1"})
    [out] = stage.outputs
    assert _values(runner_coders, out, committed.outputs[out]) == [0, 3, 6, 9, 12]
    assert committed.residuals == [] and committed.deferred == []
    # two failed attempts (after 2 and 4 elements), then one that committed all 5
    assert kept == {False: [2, 4], True: [5]}
    assert [r["outcome"] for r in trace.records] == ["failed", "failed", "committed"]
    assert [r["fault_at"] for r in trace.records] == [2, 4, None]
    assert {r["bundle"] for r in trace.records} == {"b1"}


def test_a_channel_split_hands_the_unread_elements_back(tripling):
    worker, state, runner_coders, stage, described = tripling
    runner = BundleRunner(worker, state, runner_coders, lambda infos, ok: None, _Policy(Split(3, 0.0)))
    inputs = _elements(runner_coders, stage, range(10, 16))
    committed = runner.run(stage, described, inputs)
    [out] = stage.outputs
    # split just before element 3 with nothing more of the remainder: [0, 3) ran, [3, 6) comes back
    assert _values(runner_coders, out, committed.outputs[out]) == [30, 33, 36]
    assert committed.residuals == inputs[3:]


def test_a_users_error_fails_the_bundle_naming_it(tripling):
    worker, state, runner_coders, stage, described = tripling
    failed: list = []
    runner = BundleRunner(worker, state, runner_coders, lambda infos, ok: failed.append(ok))
    with pytest.raises(BundleError, match="bundle b7 of stage .*unit test refuses 13"):
        runner.run(stage, described, _elements(runner_coders, stage, [12, 13]), record={"bundle": "b7"})
    assert True not in failed  # nothing of a failed attempt counts as committed
