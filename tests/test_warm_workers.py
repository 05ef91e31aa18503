"""Warm in-process SDK workers (reference_runner/worker/warm.py): a later job reuses the bundle
processors of an identical stage, but never a DoFn that has a setup or teardown, never another
job's side inputs or state."""

import json
import os

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms import userstate

from reference_runner import ReferenceRunner
from reference_runner.worker import warm


@pytest.fixture(autouse=True)
def _cold_pool():
    warm.clear()
    yield
    warm.clear()


def _processors():
    """The bundle processors the idle warm workers hold, by identity."""
    return {id(p) for worker in warm._idle for ps in worker._cache.cached_bundle_processors.values() for p in ps}


def _add_side_sum(p, main, side):
    mains = p | "Main" >> beam.Create(main)
    sides = p | "Side" >> beam.Create(side)
    return mains | beam.Map(lambda x, s: x + sum(s), beam.pvalue.AsList(sides))


def test_identical_job_reuses_processors_but_reads_its_own_side_input():
    with beam.Pipeline(runner=ReferenceRunner()) as p:
        assert_that(_add_side_sum(p, [1, 2], [10]), equal_to([11, 12]))
    first = _processors()
    assert first, "a job of plain DoFns leaves its worker warm"
    with beam.Pipeline(runner=ReferenceRunner()) as p:
        # The same Map stage (same descriptor) with another side input's contents.
        assert_that(_add_side_sum(p, [1, 2], [100, 200]), equal_to([301, 302]))
    assert first & _processors(), "the second job built every processor again"


class _CountPerKey(beam.DoFn):
    COUNT = userstate.CombiningValueStateSpec("count", combine_fn=sum)

    def process(self, kv, count=beam.DoFn.StateParam(COUNT)):
        count.add(1)
        yield kv[0], count.read()


def test_reused_stateful_processor_starts_from_empty_state():
    for _ in range(2):
        with beam.Pipeline(runner=ReferenceRunner()) as p:
            out = p | beam.Create([("a", 1), ("a", 2), ("b", 3)]) | beam.ParDo(_CountPerKey())
            assert_that(out | beam.CombinePerKey(max), equal_to([("a", 2), ("b", 1)]))


class _WithTeardown(beam.DoFn):
    def __init__(self, directory):
        self.directory = directory

    def setup(self):
        self.log = ["setup"]

    def process(self, x):
        yield x

    def teardown(self):
        self.log.append("teardown")
        with open(os.path.join(self.directory, f"{id(self)}.json"), "w") as f:
            json.dump(self.log, f)


def test_dofn_with_teardown_is_torn_down_when_its_job_ends(tmp_path):
    with beam.Pipeline(runner=ReferenceRunner()) as p:
        assert_that(p | beam.Create([1, 2]) | beam.ParDo(_WithTeardown(str(tmp_path))), equal_to([1, 2]))
    logs = [json.loads((tmp_path / name).read_text()) for name in os.listdir(tmp_path)]
    assert logs and all(log == ["setup", "teardown"] for log in logs)
    assert not warm._idle, "a worker holding a DoFn with teardown was kept warm"


def test_failed_job_does_not_leave_a_warm_worker():
    def boom(x):
        raise ValueError("boom")

    with pytest.raises(Exception, match="boom"):
        with beam.Pipeline(runner=ReferenceRunner()) as p:
            p | beam.Create([1]) | beam.Map(boom)
    assert not warm._idle


def test_lifted_combine_stage_is_reused():
    # The re-keying DoFns combiner lifting adds for pickled keys have no setup of their own.
    for _ in range(2):
        with beam.Pipeline(runner=ReferenceRunner()) as p:
            out = p | beam.Create([(1, 2), (1.0, 3), (True, 4)]) | beam.CombinePerKey(sum)
            assert_that(out, equal_to([(1, 2), (1.0, 3), (True, 4)]))
        assert _processors(), "the lifted combine's worker was not kept warm"
