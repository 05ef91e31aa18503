"""The Spark backend's batch path: what must run, what is counted once, what is released."""

import apache_beam as beam
import pytest
from apache_beam.metrics import Metrics
from apache_beam.metrics.metric import MetricsFilter

pytest.importorskip("pyspark")

from reference_runner.spark import SparkRunner  # noqa: E402


def _committed(result, name: str) -> int:
    [counter] = result.metrics().query(MetricsFilter().with_name(name))["counters"]
    return counter.committed


@pytest.mark.parametrize(
    "tail",
    [
        pytest.param(lambda pcoll: pcoll | beam.Map(lambda x: (x % 3, x)) | beam.GroupByKey(), id="group_by_key"),
        pytest.param(lambda pcoll: (pcoll, pcoll | "Again" >> beam.Map(lambda x: x)) | beam.Flatten(), id="flatten"),
        pytest.param(lambda pcoll: pcoll | beam.Reshuffle(), id="reshuffle"),
    ],
)
def test_user_code_upstream_of_a_trailing_grouping_runs(tail):
    # Nothing reads the last stage's output: only an action over it makes the user's Map run.
    seen = Metrics.counter("spark_batch", "seen")

    def count(x):
        seen.inc()
        return x

    p = beam.Pipeline(runner=SparkRunner())
    _ = tail(p | beam.Create(range(12)) | beam.Map(count))
    assert _committed(p.run(), "seen") == 12


def test_a_long_lived_driver_holds_nothing_of_finished_jobs():
    # A job server's driver runs job after job: neither PySpark's accumulator registry (it keeps
    # every accumulator ever created) nor the broadcast files of side inputs may grow with them.
    import os

    from pyspark.accumulators import _accumulatorRegistry

    from reference_runner.spark import session

    def one_job(value):
        with beam.Pipeline(runner=SparkRunner()) as p:
            side = p | "Side" >> beam.Create([value])
            _ = p | beam.Create([1, 2]) | beam.Map(lambda x, s: x + s, beam.pvalue.AsSingleton(side))
        return len(_accumulatorRegistry), len(os.listdir(session.current().sparkContext._temp_dir))

    held = [one_job(value) for value in range(3)]
    assert held[0] == held[1] == held[2], held


def test_a_reused_python_worker_keeps_a_bounded_number_of_stages():
    # PySpark reuses its Python workers across jobs, and stage ids carry their job's id: what a
    # worker rebuilds per stage (group codecs, keyed stages) must not pile up job after job.
    from apache_beam.transforms import userstate

    from reference_runner.graph import plan as planning
    from reference_runner.graph.front_end import SPARK
    from reference_runner.spark import shipped as spark_plan
    from reference_runner.spark import stateful, tasks

    class _Stateful(beam.DoFn):
        SEEN = userstate.ReadModifyWriteStateSpec("seen", beam.coders.VarIntCoder())

        def process(self, kv, seen=beam.DoFn.StateParam(SEEN)):
            yield kv

    p = beam.Pipeline()
    _ = p | beam.Create([("k", 1)]) | beam.GroupByKey() | beam.Map(lambda kv: (kv[0], 1)) | beam.ParDo(_Stateful())
    prepared = planning.build_plan(p.to_runner_api(), SPARK)
    for job in range(300):
        for stage in spark_plan.stage_plans(prepared, f"job{job}"):
            if stage.kind == planning.StageKind.GROUP:
                tasks._codec(stage)
            elif stage.stage.keyed_head:
                stateful.keyed_stage(stage)
    assert 0 < len(tasks._codecs) <= 64 and 0 < len(stateful._keyed_stages) <= 64


class _CountsBundles(beam.DoFn):
    def start_bundle(self):
        Metrics.counter("spark_batch", "bundles").inc()

    def process(self, x):
        yield x


def test_the_spark_target_takes_a_bundle_size_as_the_reference_target_does():
    from conformance.session.targets.spark import SparkTarget
    from conformance.targets import TargetSettings, TargetUnavailable

    target = SparkTarget("spark:bundle_size=1", TargetSettings())
    assert target.describe()["bundle_size"] == 1
    p = beam.Pipeline(runner=target.beam_runner())
    _ = p | beam.Create(range(6)) | beam.ParDo(_CountsBundles())
    assert _committed(p.run(), "bundles") == 6  # one element per bundle
    with pytest.raises(TargetUnavailable, match="bundle_size must be a positive integer"):
        SparkTarget("spark:bundle_size=whole", TargetSettings())


def test_the_spark_target_takes_a_seed_for_its_micro_batches():
    from conformance.session.targets.spark import SparkTarget
    from conformance.targets import TargetSettings, TargetUnavailable

    target = SparkTarget("spark:seed=7,bundle_size=5", TargetSettings())
    assert (target.describe()["seed"], target.describe()["bundle_size"]) == (7, 5)
    assert (target.beam_runner().seed, target.beam_runner().bundle_size) == (7, 5)
    with pytest.raises(TargetUnavailable, match="seed must be an integer"):
        SparkTarget("spark:seed=random", TargetSettings())


def test_the_spark_target_takes_every_setting_a_job_may_set_and_its_help_names_them():
    # it once took bundle_size and seed only, and its help was written out by hand
    from conformance.session.targets.spark import SparkTarget
    from conformance.targets import TargetSettings
    from reference_runner.spark.settings import SPARK_OPTIONS

    per_job = [name for name, knob in SPARK_OPTIONS.items() if knob.remote]
    assert "parallelism" in per_job and "max_side_input_mib" in per_job
    for name in ["master", *per_job]:
        assert f"{name}=" in SparkTarget.help, name
    target = SparkTarget("spark:parallelism=4,max_side_input_mib=8", TargetSettings())
    assert {k: target.describe()[k] for k in ("parallelism", "max_side_input_mib")} == {
        "parallelism": 4,
        "max_side_input_mib": 8,
    }
    runner = target.beam_runner()
    assert (runner.parallelism, runner.max_side_input_mib) == (4, 8)


def test_a_few_elements_of_one_partition_are_spread_over_every_partition():
    # a ReadFromText's nine initial restrictions come from one Impulse's partition; PySpark's
    # repartition moved them as one pickled batch, so the whole read ran in one task
    from reference_runner.spark import session
    from reference_runner.spark.spread import spread

    sc = session.get().sparkContext
    dealt = spread(sc.parallelize(range(9), 1), 2).glom().collect()
    assert sorted(len(p) for p in dealt) == [4, 5]
    assert sorted(x for p in dealt for x in p) == list(range(9))
