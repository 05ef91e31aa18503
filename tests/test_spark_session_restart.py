"""Our Spark backend's session outlives its driver JVM: when the JVM exits under it (Spark exits
on an OutOfMemoryError; Beam's Java GroupByKeyTest.testLargeKeys100MB does that on a default
heap), the next job starts a new JVM instead of failing with "Connection refused" from then on.

It runs in a process of its own: killing the JVM of this worker's session would take it from the
other Spark tests that share it."""

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import os, signal
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
    session.stop()
    print("restarted")
""")


def test_a_session_whose_driver_jvm_died_starts_a_new_jvm():
    pytest.importorskip("pyspark")
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip().endswith("restarted"), done.stderr[-3000:]
