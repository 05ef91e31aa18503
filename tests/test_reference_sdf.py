"""Splittable DoFns and bundle finalization on the reference runner, beyond the conformance cases:
the expanded graph, residuals really rescheduled, and finalization only for committed bundles."""

import os

import apache_beam as beam
import pytest
from apache_beam.metrics import Metrics
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.testing.util import assert_that, equal_to

from conformance.cases.test_sdf import CountProvider  # [0, n), unsplit
from reference_runner import ReferenceRunner
from reference_runner.executor.job import JobFailed
from reference_runner.executor.reference_backend import ReferenceBackend
from reference_runner.graph import urns


class _OneOffsetPerCall(beam.DoFn):
    """Claims one offset per call, then self-checkpoints the rest; counts its calls."""

    def process(self, n, tracker=beam.DoFn.RestrictionParam(CountProvider())):
        Metrics.counter("sdf", "calls").inc()
        pos = tracker.current_restriction().start
        if tracker.try_claim(pos):
            yield n, pos
            if pos + 1 < tracker.current_restriction().stop:
                tracker.defer_remainder()


def _calls(result) -> int:
    [counter] = result.metrics().query(MetricsFilter().with_name("calls"))["counters"]
    return counter.committed


@pytest.mark.parametrize("fuse", [True, False])
def test_self_checkpointing_sdf_emits_every_offset_once_one_call_each(fuse):
    p = beam.Pipeline(runner=ReferenceRunner(fuse=fuse))
    out = p | beam.Create([4, 3]) | beam.ParDo(_OneOffsetPerCall())
    assert_that(out, equal_to([(4, 0), (4, 1), (4, 2), (4, 3), (3, 0), (3, 1), (3, 2)]))
    result = p.run()
    # one call per offset: every residual was run again, none twice
    assert _calls(result) == 7


def test_splittable_pardo_is_expanded_and_processing_starts_a_stage():
    p = beam.Pipeline()
    _ = p | beam.Create([2]) | beam.ParDo(_OneOffsetPerCall())
    plan = ReferenceBackend().plan(p.to_runner_api())
    leaf_urns = [t.urn for t in plan.graph.transforms]
    for urn in (urns.SDF_PAIR_WITH_RESTRICTION, urns.SDF_SPLIT_AND_SIZE, urns.SDF_PROCESS_SIZED):
        assert leaf_urns.count(urn) == 1
    assert urns.PAR_DO not in [t.urn for t in plan.graph.transforms if "OneOffsetPerCall" in t.name]
    by_id = plan.graph.by_id
    [process_stage] = [s for s in plan.stages if any(by_id[t].urn == urns.SDF_PROCESS_SIZED for t in s.transforms)]
    assert by_id[process_stage.transforms[0]].urn == urns.SDF_PROCESS_SIZED  # fed (and re-fed) by the runner
    assert process_stage.splittable and process_stage.truncation is not None


class _OffsetsWithSide(beam.DoFn):
    def process(self, n, extra, tracker=beam.DoFn.RestrictionParam(CountProvider())):
        pos = tracker.current_restriction().start
        while tracker.try_claim(pos):
            yield n, pos + extra
            pos += 1


def test_splittable_dofn_reads_a_side_input():
    p = beam.Pipeline(runner=ReferenceRunner())
    side = p | "Side" >> beam.Create([100])
    out = p | beam.Create([2, 1]) | beam.ParDo(_OffsetsWithSide(), beam.pvalue.AsSingleton(side))
    assert_that(out, equal_to([(2, 100), (2, 101), (1, 100)]))
    p.run()


class _FinalizeThenMaybeFail(beam.DoFn):
    def __init__(self, directory, fail):
        self.directory, self.fail = directory, fail

    def process(self, element, finalizer=beam.DoFn.BundleFinalizerParam):
        path = os.path.join(self.directory, str(element))
        finalizer.register(lambda: open(path, "w").close())
        if self.fail:
            raise ValueError("bundle fails after registering its callback")
        yield element


def test_finalization_runs_for_a_committed_bundle(tmp_path):
    p = beam.Pipeline(runner=ReferenceRunner())
    _ = p | beam.Create(["a", "b"]) | beam.ParDo(_FinalizeThenMaybeFail(str(tmp_path), fail=False))
    p.run()
    assert sorted(os.listdir(tmp_path)) == ["a", "b"]


def test_a_failed_bundle_is_never_finalized(tmp_path):
    p = beam.Pipeline(runner=ReferenceRunner())
    _ = p | beam.Create(["a"]) | beam.ParDo(_FinalizeThenMaybeFail(str(tmp_path), fail=True))
    with pytest.raises(JobFailed, match="bundle fails after registering"):
        p.run()
    assert os.listdir(tmp_path) == []


class _StatefulSplittable(beam.DoFn):
    COUNT = beam.transforms.userstate.ReadModifyWriteStateSpec("count", beam.coders.VarIntCoder())

    def process(self, kv, count=beam.DoFn.StateParam(COUNT), tracker=beam.DoFn.RestrictionParam(CountProvider())):
        yield kv


def test_unsupported_features_of_a_splittable_dofn_are_named_once():
    from reference_runner.graph.check import UnsupportedPipeline

    p = beam.Pipeline(runner=ReferenceRunner())
    _ = p | beam.Create([("k", 1)]) | beam.ParDo(_StatefulSplittable())
    with pytest.raises(UnsupportedPipeline) as info:
        p.run()
    assert [q for q in info.value.problems if "user state" in q] == [
        "transform 'ParDo(_StatefulSplittable)/Process': splittable DoFn with user state or timers (count)"
    ]


class _ManyOffsets(beam.DoFn):
    """Claims offsets one by one, emitting each: a restriction the runner can split mid-element."""

    def process(self, n, tracker=beam.DoFn.RestrictionParam(CountProvider())):
        pos = tracker.current_restriction().start
        while tracker.try_claim(pos):
            yield n, pos
            pos += 1


def test_runner_splits_a_restriction_mid_element_and_loses_nothing(tmp_path):
    import json

    split_mid_element = False
    for seed in range(12):
        trace = tmp_path / f"{seed}.jsonl"
        with beam.Pipeline(runner=ReferenceRunner(seed=seed, bundle_size=1, splits="random", trace=str(trace))) as p:
            out = p | beam.Create([30, 40]) | beam.ParDo(_ManyOffsets())
            assert_that(out, equal_to([(n, i) for n in (30, 40) for i in range(n)]))
        records = [json.loads(line) for line in trace.read_text().splitlines()]
        split_mid_element |= any(
            r["split"] and r["split"]["after_output"] and r.get("restrictions_split_off") for r in records
        )
    assert split_mid_element, "no seed made the SDK split a restriction while it was being processed"
