"""Our Spark backend's session outlives its driver JVM: when the JVM exits under it (Spark exits
on an OutOfMemoryError; Beam's Java GroupByKeyTest.testLargeKeys100MB does that on a default
heap), the next job starts a new JVM instead of failing with "Connection refused" from then on."""

import os
import signal

import pytest


def test_a_session_whose_driver_jvm_died_starts_a_new_jvm():
    pytest.importorskip("pyspark")
    from pyspark import SparkContext

    from reference_runner.spark import session

    spark = session.get()
    assert spark.sparkContext.parallelize([1, 2, 3]).count() == 3
    jvm = SparkContext._gateway.proc
    os.kill(jvm.pid, signal.SIGKILL)  # the JVM goes, as after Spark's exit on an OutOfMemoryError
    jvm.wait()
    again = session.get()
    assert SparkContext._gateway.proc.pid != jvm.pid
    assert again.sparkContext.parallelize([1, 2, 3]).map(lambda x: x * 2).sum() == 12
