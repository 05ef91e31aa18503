"""The Spark backend on a real standalone cluster: a master and one worker started on loopback
from the pyspark distribution, so stages, coders and user code travel to an executor process of
their own (not the driver's JVM, as in local[N])."""

import json
import subprocess

import pytest

from suite_run import suite_command

pyspark = pytest.importorskip("pyspark")


@pytest.fixture(scope="module")
def standalone_cluster():
    # one worker of two cores (its executor runs two tasks at once), as the benchmarks start it
    from benchmarks.spark_cluster import standalone_cluster as started

    with started(workers=1, cores=2) as master:
        yield master


def test_cases_run_on_a_standalone_cluster(standalone_cluster, tmp_path):
    command = suite_command(
        tmp_path,
        "--target",
        f"spark:master={standalone_cluster}",
        # a spread of stage kinds: shuffles, sessions merged per key, broadcast side inputs,
        # multimap side inputs, metrics from executors, DoFn teardown; streaming: triggered
        # panes, late data, side windows waiting for the watermark, event-time timers holding
        # the watermark, an SDF's watermark closing windows
        "-k",
        "((sessions_merge or as_singleton or multimap or committed_counter or teardown "
        "or combine_globally or fixed_windows_group) and not model and not across_inputs and not streaming) "
        "or accumulating_panes_hold_everything or fixed_drop_late_data_after_allowed_lateness or "
        "windowed_side_input_waits_for_watermark or pending_timer_holds_output_watermark or "
        "manual_watermark_closes_windows_while_sdf_runs",
    )
    done = subprocess.run(command, capture_output=True, text=True, timeout=1500)
    doc = json.loads((tmp_path / "results-spark.json").read_text())
    bad = [
        f"{c['id']}: {c['outcome']}: {c['message'][:300]}"
        for c in doc["cases"]
        if c["outcome"] in ("failed", "unexpected-pass", "error")
    ]
    assert done.returncode == 0 and not bad, "\n".join(bad) or done.stdout[-3000:]
    assert doc["target_info"]["master"] == standalone_cluster
    assert doc["summary"]["passed"] >= 13, doc["summary"]  # the batch spread and the five streaming cases


def test_a_stream_survives_its_executor_being_killed(standalone_cluster, tmp_path):
    # A DoFn kills the executor JVM it runs under, once, in the middle of the stream: the
    # cluster starts another executor, Spark recomputes what was lost from lineage (and the
    # state checkpoints), and the output is the model's, each element counted once.
    from spark_fault_stream import run_in_own_process

    run_in_own_process(standalone_cluster, "executor", tmp_path)


def test_a_python_worker_killed_mid_job_is_retried_on_a_standalone_cluster(standalone_cluster, tmp_path):
    # An executor's Python worker kills itself (SIGKILL) in the middle of a task, once: Spark runs
    # the task again; output, committed metrics and bundle finalizations still count once.
    from test_spark_recovery import run_recovery_cases

    run_recovery_cases(standalone_cluster, tmp_path, "-k", "task_failing and kill")
