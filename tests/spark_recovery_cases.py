"""Spark recomputing and retrying work, on a real SparkSession of this process's own: run by
tests/test_spark_recovery.py and tests/test_spark_cluster.py in a fresh process (one session per
process), never collected directly (the file name does not start with test_).

SPARK_RECOVERY_MASTER: the master (local[2,4]: two cores, four attempts per task);
SPARK_RECOVERY_USER_SESSION=1: the process's session is the user's, started here before any
pipeline runs, and the backend must run on it as it is. Storage memory is tiny
(spark.memory.fraction), so a persisted partition does not stay cached and is recomputed."""

import os
import signal
import sys

import apache_beam as beam
import pytest
from apache_beam.metrics import Metrics
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.util import assert_that, equal_to

from reference_runner.spark import SparkRunner, session

MASTER = os.environ.get("SPARK_RECOVERY_MASTER", "local[2,4]")
USER_SESSION = os.environ.get("SPARK_RECOVERY_USER_SESSION") == "1"
CONF = {"spark.memory.fraction": "0.001"}  # (tasks get four attempts: local[N,4], or a cluster's default)
USERS_SHUFFLE_PARTITIONS = "7"  # a setting of the user's session the backend must not change


@pytest.fixture(scope="session", autouse=True)
def users_session():
    if not USER_SESSION:
        yield None
        return
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(MASTER)
        .config("spark.sql.shuffle.partitions", USERS_SHUFFLE_PARTITIONS)
        # (the executors' Python workers import this module's DoFns)
        .config("spark.executorEnv.PYTHONPATH", os.pathsep.join(p for p in sys.path if p and os.path.isdir(p)))
        .config("spark.python.daemon.module", "reference_runner.spark.daemon")  # (faster Python workers)
    )
    for key, value in CONF.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    yield spark
    spark.stop()


def _runner():
    return SparkRunner(master=MASTER, conf=CONF)


def _committed(result, name: str) -> int:
    [counter] = result.metrics().query(MetricsFilter().with_name(name))["counters"]
    return counter.committed


class _KilledOnceMidTask(beam.DoFn):
    """Counts and finalizes every element (bundles of one); at the third element of a task, once
    in the whole job, the Python worker kills itself (a marker file remembers it did), after two
    bundles were committed: a crashed worker, which Spark's retries are for. (Elements are
    counted per task attempt, not per DoFn instance: a bundle waiting for finalization keeps its
    bundle processor, so the next bundle runs on a new instance.)"""

    def __init__(self, folder: str):
        self.folder = folder
        self.seen = Metrics.counter("recovery", "seen")

    def process(self, x, finalizer=beam.DoFn.BundleFinalizerParam):
        from pyspark import TaskContext

        self.seen.inc()
        task = TaskContext.get()
        _processed[task.taskAttemptId()] = processed = _processed.get(task.taskAttemptId(), 0) + 1
        marker = os.path.join(self.folder, "killed")
        if processed == 3 and not os.path.exists(marker):
            open(marker, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)
        finalizer.register(lambda: _append(os.path.join(self.folder, "finalized"), x))
        yield x


_processed: dict = {}  # task attempt -> elements it processed (in the Python worker's process)


def _append(path: str, x) -> None:
    with open(path, "a") as out:
        out.write(f"{x}\n")


def test_a_task_failing_part_way_is_retried_and_its_bundles_count_once_kill(tmp_path):
    p = beam.Pipeline(runner=_runner(), options=PipelineOptions(["--spark_bundle_size=1"]))
    out = p | beam.Create(range(12)) | beam.ParDo(_KilledOnceMidTask(str(tmp_path)))
    assert_that(out, equal_to(list(range(12))))
    result = p.run()
    assert _committed(result, "seen") == 12
    assert os.path.exists(tmp_path / "killed")  # (the fault happened)
    # a bundle is finalized once its task's whole output went to Spark: once, by the attempt
    # that succeeded, not by the attempt that failed after it
    finalized = sorted(int(line) for line in (tmp_path / "finalized").read_text().split())
    assert finalized == list(range(12))


class _RaisesOnFive(beam.DoFn):
    """Raises at element 5, on every attempt, noting each attempt in a file."""

    def __init__(self, folder: str):
        self.folder = folder

    def process(self, x):
        if x == 5:
            _append(os.path.join(self.folder, "attempts"), x)
            raise ValueError("five fails every time")
        yield x


def test_a_task_failing_part_way_because_a_dofn_raised_fails_the_job_at_once(tmp_path):
    # Spark would run the task again up to three times and fail the job on the fourth; a DoFn
    # that raised raises again, so the job fails on the first, with the DoFn's error
    p = beam.Pipeline(runner=_runner())
    _ = p | beam.Create(range(12)) | beam.ParDo(_RaisesOnFive(str(tmp_path)))
    with pytest.raises(Exception, match="ValueError: five fails every time"):
        p.run().wait_until_finish()
    assert (tmp_path / "attempts").read_text().split() == ["5"]


def test_a_recomputed_persisted_partition_counts_its_metrics_once():
    # Two stages read the counting stage's output, which is persisted MEMORY_ONLY; its
    # partitions do not fit in storage memory, so each reader computes them again.
    seen = Metrics.counter("recovery", "big")

    def big(x):
        seen.inc()
        return x, "x" * 300_000

    p = beam.Pipeline(runner=_runner())
    made = p | beam.Create(range(16)) | beam.Map(big)
    assert_that(made | "A" >> beam.Map(lambda kv: kv[0]), equal_to(list(range(16))), label="a")
    assert_that(made | "B" >> beam.Map(lambda kv: len(kv[1])), equal_to([300_000] * 16), label="b")
    assert _committed(p.run(), "big") == 16


@pytest.mark.skipif(not USER_SESSION, reason="needs the user's own session (SPARK_RECOVERY_USER_SESSION=1)")
def test_the_users_running_session_is_used_as_it_is(users_session):
    with beam.Pipeline(runner=_runner()) as p:
        assert_that(p | beam.Create([1, 2]) | beam.Map(lambda x: x + 1), equal_to([2, 3]))
    assert session.current() is users_session
    assert users_session.conf.get("spark.sql.shuffle.partitions") == USERS_SHUFFLE_PARTITIONS
    session.stop()  # lets go of the user's session without stopping it
    assert users_session.sparkContext._jsc is not None
    with pytest.raises(RuntimeError, match=r"already runs a SparkSession .* master local\[2,4\] \(wanted local\[3\]\)"):
        session.get("local[3]", CONF)
    assert session.get(MASTER, CONF) is users_session
