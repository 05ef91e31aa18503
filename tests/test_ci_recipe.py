"""The CI recipe in examples/ci/: the shell script, run against our job server, and the GitHub
Actions workflow that calls it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from test_report import case, results_doc

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "examples" / "ci" / "conformance.sh"
WORKFLOW = ROOT / "examples" / "ci" / "github-actions.yml"


def test_script_runs_the_suite_writes_every_report_and_fails_on_an_unexpected_pass(tmp_path):
    expectations = tmp_path / "ci-runner.yaml"  # claims a case fails that our runner passes
    expectations.write_text("known_failures:\n  - case: combine/per_key_builtins\n    reason: thought broken\n")
    previous = tmp_path / "main-results"
    previous.mkdir()
    (previous / "results-ci-runner.json").write_text(
        json.dumps(
            results_doc(
                "ci-runner",
                [
                    case("pardo/map_applies_function_to_every_element", "pardo.basic", "failed", "was broken on main"),
                    case(
                        "combine/per_key_builtins",
                        "combine.per_key",
                        "expected-failure",
                        "boom",
                        known="thought broken",
                    ),
                ],
            )
        )
    )
    out = tmp_path / "reports"
    env = dict(
        os.environ,
        TARGET_NAME="ci-runner",
        OUT_DIR=str(out),
        EXPECTATIONS=str(expectations),
        PREVIOUS=str(previous),
        WORKERS="0",
        JOB_SERVER_CMD=f"{sys.executable} -m reference_runner.jobserver --port {{port}}",
        PYTEST_ARGS='-k "test_map_applies_function_to_every_element or test_per_key_builtins"',
        BEAM_CONFORMANCE=str(Path(sys.executable).parent / "beam-conformance"),
    )
    done = subprocess.run([str(SCRIPT)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    # the unexpected pass fails the suite, and so the script; every report is written all the same
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    for name in (
        "results-ci-runner.json",
        "junit-ci-runner.xml",
        "capability-matrix.html",
        "capability-matrix.md",
        "diff.md",
        "diff.json",
    ):
        assert (out / name).exists(), name
    results = json.loads((out / "results-ci-runner.json").read_text())
    assert {c["id"]: c["outcome"] for c in results["cases"]} == {
        "pardo/map_applies_function_to_every_element": "passed",
        "combine/per_key_builtins": "unexpected-pass",
    }
    diff = (out / "diff.md").read_text()
    assert "#### Fixed: failed before, pass now (2)" in diff and "**No regressions.**" in diff
    assert "since previous run" in (out / "capability-matrix.md").read_text()
    assert "conformance.sh: diff against" in done.stdout


def test_script_without_a_job_server_says_what_to_set(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("ENDPOINT", "JOB_SERVER_CMD")}
    done = subprocess.run([str(SCRIPT)], cwd=tmp_path, env=dict(env, TARGET_NAME="x"), capture_output=True, text=True)
    assert done.returncode == 2 and "set ENDPOINT" in done.stderr


def test_workflow_runs_the_script_uploads_reports_and_comments_the_diff():
    flow = yaml.safe_load(WORKFLOW.read_text())
    steps = flow["jobs"]["conformance"]["steps"]
    runs = "\n".join(s.get("run", "") for s in steps)
    assert flow["jobs"]["conformance"]["env"]["CONFORMANCE_SH"].endswith("conformance.sh")
    assert 'bash "$CONFORMANCE_SH"' in runs and "gh run download" in runs and "gh pr comment" in runs
    upload = [s for s in steps if str(s.get("uses", "")).startswith("actions/upload-artifact")]
    assert upload and "conformance-reports" in upload[0]["with"]["path"]
    assert flow["permissions"]["pull-requests"] == "write"
