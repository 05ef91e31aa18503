"""Seeded bundling, splits, injected faults, traces and replay of the reference runner."""

import json

import apache_beam as beam
import pytest
from apache_beam.metrics import Metrics
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.testing.util import assert_that, equal_to

from reference_runner import ReferenceRunner
from reference_runner.bundling import ReplayMismatch
from reference_runner.engine import manager
from reference_runner.knobs import Knobs, OptionError

EXPECTED = [(0, 273), (1, 247), (2, 260)]  # sums of range(40) by x % 3


class _CountSeen(beam.DoFn):
    def __init__(self):
        self.seen = Metrics.counter("schedules", "seen")

    def process(self, x):
        self.seen.inc()
        yield x % 3, x


def _run(tmp_path, name, **knobs):
    """Run a small keyed sum; returns (trace lines, result)."""
    trace = tmp_path / f"{name}.jsonl"
    p = beam.Pipeline(runner=ReferenceRunner(trace=str(trace), **knobs))
    sums = (
        p
        | beam.Create(range(40))
        | beam.ParDo(_CountSeen())
        | beam.GroupByKey()
        | beam.MapTuple(lambda k, vs: (k, sum(vs)))
    )
    assert_that(sums, equal_to(EXPECTED))
    result = p.run()
    result.wait_until_finish()
    return trace.read_text(), result


def _seen(result, kind):
    [counter] = result.metrics().query(MetricsFilter().with_name("seen"))["counters"]
    return getattr(counter, kind)


def test_same_seed_gives_byte_identical_traces_and_another_seed_a_different_one(tmp_path):
    knobs = dict(bundle_size="random", splits="random", faults=0.3)
    first, _ = _run(tmp_path, "a", seed=7, **knobs)
    second, _ = _run(tmp_path, "b", seed=7, **knobs)
    other, _ = _run(tmp_path, "c", seed=8, **knobs)  # its assert_that checks the same result
    assert first == second
    assert first != other


def test_random_schedule_really_splits_retries_and_varies_bundle_sizes(tmp_path):
    text, _ = _run(tmp_path, "r", seed=7, bundle_size="random", splits="random", faults=0.5)
    records = [json.loads(line) for line in text.splitlines()]
    assert len({r["elements"] for r in records}) > 2
    assert any(r["split"] and r["first_residual"] is not None for r in records), "no split took effect"
    assert any(r["outcome"] == "failed" for r in records) and any(r["attempt"] > 0 for r in records)
    assert {"stage", "bundle", "input_watermark", "output_watermark", "fault_at"} <= set(records[0])


def test_fixed_bundle_size_caps_every_bundle(tmp_path):
    text, _ = _run(tmp_path, "fixed", bundle_size=4)
    sizes = [json.loads(line)["elements"] for line in text.splitlines()]
    assert max(sizes) == 4 and sizes.count(4) >= 10


def test_replaying_a_trace_reproduces_the_run(tmp_path):
    original, _ = _run(tmp_path, "orig", seed=3, bundle_size="random", splits="random", faults=0.3)
    replayed, _ = _run(tmp_path, "again", replay=str(tmp_path / "orig.jsonl"))
    assert replayed == original


def test_committed_metrics_count_each_element_once_attempted_count_every_attempt(tmp_path):
    _, clean = _run(tmp_path, "clean")
    text, faulty = _run(tmp_path, "faulty", seed=3, bundle_size=5, faults=0.5)
    assert _seen(clean, "committed") == _seen(faulty, "committed") == 40
    assert any(r["outcome"] == "failed" and r["fault_at"] > 0 for r in map(json.loads, text.splitlines()))
    assert _seen(faulty, "attempted") > 40


def test_options_from_the_command_line(tmp_path):
    trace = tmp_path / "t.jsonl"
    options = beam.options.pipeline_options.PipelineOptions(
        ["--reference_bundle_size=2", "--reference_seed=5", f"--reference_trace={trace}"]
    )
    with beam.Pipeline(runner=ReferenceRunner(), options=options) as p:
        assert_that(p | beam.Create(range(6)) | beam.Map(lambda x: x * 2), equal_to([0, 2, 4, 6, 8, 10]))
    assert max(json.loads(line)["elements"] for line in trace.read_text().splitlines()) == 2


@pytest.mark.parametrize(
    "knobs, message",
    [
        (dict(bundle_size=0), "bundle_size"),
        (dict(bundle_size="huge"), "bundle_size"),
        (dict(splits="sometimes"), "splits"),
        (dict(faults=1.5), "faults"),
        (dict(seed=1.5), "seed must be an integer, not 1.5"),  # not quietly 1
        (dict(seed="1.5"), "seed must be an integer"),
    ],
)
def test_bad_knobs_are_named(knobs, message):
    with pytest.raises(OptionError, match=message):
        Knobs.parse(knobs)


def test_replay_of_a_different_pipeline_is_refused(tmp_path):
    _run(tmp_path, "orig", bundle_size=1)
    p = beam.Pipeline(runner=ReferenceRunner(replay=str(tmp_path / "orig.jsonl")))
    _ = p | beam.Create([1, 2]) | "Other" >> beam.Map(str)
    with pytest.raises(ReplayMismatch, match="differs from the traced one"):
        p.run()


def test_a_stuck_job_is_described_stage_by_stage():
    # A bundle taken but never committed: nothing else can run, yet work remains.
    em = manager.ElementManager(
        [
            manager.StageSpec("impulse", manager.StageKind.IMPULSE, [], ["a"]),
            manager.StageSpec("work", manager.StageKind.SDK, ["a"], ["b"]),
        ]
    )
    em.start({"a": [b"x"]})
    assert em.next_bundle() is not None
    assert em.next_bundle() is None and not em.done()
    dump = em.describe_stuck()
    assert "work (sdk): output watermark -inf, pending 0, deferred 0, in flight 1" in dump
    assert "impulse (impulse): output watermark +inf" in dump


def test_runner_named_on_the_command_line(tmp_path):
    trace = tmp_path / "cli.jsonl"
    options = beam.options.pipeline_options.PipelineOptions(
        ["--runner=reference_runner.ReferenceRunner", "--reference_bundle_size=1", f"--reference_trace={trace}"]
    )
    with beam.Pipeline(options=options) as p:
        assert_that(p | beam.Create([1, 2, 3]) | beam.Map(lambda x: x + 1), equal_to([2, 3, 4]))
    assert {json.loads(line)["elements"] for line in trace.read_text().splitlines()} == {1}


def test_reference_runners_parameters_are_the_knobs():
    import inspect

    from reference_runner.knobs import KNOBS

    assert set(inspect.signature(ReferenceRunner).parameters) == set(KNOBS)


def test_the_reference_targets_help_names_every_knob():
    import dataclasses

    from conformance.session.targets.reference import ReferenceTarget
    from conformance.targets import TargetSettings

    # it once left out lift (and the trace and replay paths the target name takes)
    for f in dataclasses.fields(Knobs):
        assert f"{f.name}=" in ReferenceTarget.help, f.name
    target = ReferenceTarget("reference:lift=false,seed=3", TargetSettings())
    assert target.describe()["schedule"] == {"lift": False, "seed": 3}
