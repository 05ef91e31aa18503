"""Spark retrying a failed task and recomputing a partition: the job's output, committed metrics
and bundle finalizations must each count once. The cases (tests/spark_recovery_cases.py) run in a
fresh process: their SparkSession (master local[2,4]: four attempts per task; tiny storage memory)
is not the one this process's other Spark tests share."""

import os
import subprocess
import sys

import pytest

pytest.importorskip("pyspark")

CASES = os.path.join(os.path.dirname(__file__), "spark_recovery_cases.py")


def run_recovery_cases(master: str, tmp_path, *args: str, user_session: bool = False) -> None:
    env = {**os.environ, "SPARK_RECOVERY_MASTER": master, "SPARK_RECOVERY_USER_SESSION": "1" if user_session else ""}
    command = [sys.executable, "-m", "pytest", CASES, "-p", "no:cacheprovider", "-q", "-n", "0"]
    command += ["--basetemp", str(tmp_path / "cases"), *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_retries_recomputations_and_the_users_session_on_local_spark(tmp_path):
    run_recovery_cases("local[2,4]", tmp_path, user_session=True)


def test_a_failed_task_is_retried_on_the_default_local_master(tmp_path):
    # local[2], as a user or the job server gives it: Spark's local mode alone would try each
    # task once, so the backend starts it as local[2,4]; the retry must count once
    run_recovery_cases("local[2]", tmp_path, "-k", "a_task_failing_part_way")
