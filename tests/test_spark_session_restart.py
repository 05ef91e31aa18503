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


WRONG_PYTHON = textwrap.dedent("""
    import os, sys
    from pyspark.sql import SparkSession
    import apache_beam as beam
    from reference_runner.spark import SparkRunner

    # The user's own session, its Python workers on an interpreter without Beam: this one with
    # its site-packages left out (pyspark reaches the workers through Spark's own path)
    wrapper = os.path.join(sys.argv[1], "python-without-site")
    with open(wrapper, "w") as f:
        f.write(f"#!/bin/sh\\nexec {sys.executable} -S \\"$@\\"\\n")
    os.chmod(wrapper, 0o755)
    os.environ["PYSPARK_PYTHON"] = wrapper
    SparkSession.builder.master("local[2]").getOrCreate()
    try:
        with beam.Pipeline(runner=SparkRunner(master="local[2]")) as p:
            _ = p | beam.Create([1, 2]) | beam.Map(lambda x: x + 1)
    except RuntimeError as e:
        print(e)
""")


def test_a_users_session_whose_python_workers_cannot_import_beam_is_refused_naming_the_setting(tmp_path):
    pytest.importorskip("pyspark")
    done = subprocess.run(
        [sys.executable, "-c", WRONG_PYTHON, str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    refusal = done.stdout.strip()
    assert "cannot import apache_beam (No module named 'apache_beam')" in refusal, done.stdout + done.stderr[-3000:]
    assert "PYSPARK_PYTHON is set to" in refusal and "python-without-site" in refusal, refusal
