"""Pipelines as clients submit them, over our job server: user types the server cannot import and
pre-optimized shapes, with SDK workers out of process (EXTERNAL worker pool, PROCESS command),
on both backends."""

import json
import sys

SERVER = f"{sys.executable} -m reference_runner.jobserver --port {{port}}"
USER_TYPES_BATCH = ["--pyargs", "conformance.cases.test_user_types", "-m", "not streaming"]
# A few of the representative cases, in the fused shape (the most rewritten)
FUSED_SHAPE = [
    "--pyargs",
    "conformance.cases.test_pipeline_shapes",
    "-k",
    "-all] and (keys_by_encoded_bytes or ints_and_strs or timer_callback or split_outputs)",
]


def _run_suite(pytester, server_cmd: str, *args) -> dict:
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--show-capture=no",
        "--results-dir",
        str(pytester.path / "out"),
        "--target",
        "grpc",
        "--target-name",
        "submitted",
        "--expectations",
        "none",
        "--job-server-timeout",
        "180",
        "--job-server-cmd",
        server_cmd,
        *args,
    )
    assert result.ret == 0, result.stdout.str()[-4000:]
    doc = json.loads((pytester.path / "out" / "results-submitted.json").read_text())
    return {c["id"]: c["outcome"] for c in doc["cases"]}


def test_user_types_and_a_fused_shape_with_an_external_worker_pool(pytester, worker_pool):
    _, worker_pool = worker_pool
    outcomes = _run_suite(
        pytester, SERVER, "--environment-type", "EXTERNAL", "--environment-config", worker_pool, *USER_TYPES_BATCH
    )
    outcomes.update(
        _run_suite(
            pytester, SERVER, "--environment-type", "EXTERNAL", "--environment-config", worker_pool, *FUSED_SHAPE
        )
    )
    assert set(outcomes.values()) == {"passed"} and len(outcomes) == 6 + 4, outcomes


def test_user_types_with_a_process_environment(pytester, tmp_path):
    boot = tmp_path / "boot.sh"
    boot.write_text(f'#!/bin/sh\nexec {sys.executable} -m reference_runner.worker.boot "$@"\n')
    boot.chmod(0o755)
    outcomes = _run_suite(
        pytester,
        SERVER,
        "--environment-type",
        "PROCESS",
        "--environment-config",
        json.dumps({"command": str(boot)}),
        *USER_TYPES_BATCH,
        "-k",
        "group_by_encoding or stateful or window_of",
    )
    assert set(outcomes.values()) == {"passed"} and len(outcomes) == 3, outcomes


def test_user_types_and_a_fused_shape_on_the_spark_backend(pytester):
    outcomes = _run_suite(pytester, f"{SERVER} --backend spark", *USER_TYPES_BATCH)
    outcomes.update(_run_suite(pytester, f"{SERVER} --backend spark", *FUSED_SHAPE))
    assert set(outcomes.values()) == {"passed"} and len(outcomes) == 6 + 4, outcomes
