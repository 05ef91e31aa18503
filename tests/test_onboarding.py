"""A runner author's first hour, against a real runner that fails cases: Beam's own local job
service (its FnApiRunner refuses TestStream and marks the default trigger's pane not last).
No expectations file at first; `baseline` records the failures; the second run is green; a case
whose outcome flips makes `diff` exit non-zero naming it. And a case author's checks before a commit
leave the committed reports alone."""

import json
import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

from conformance.tools.cli import main

JOB_SERVER = f"{sys.executable} -m apache_beam.runners.portability.local_job_service_main --port {{port}}"
# A case of the runner author's own whose outcome an environment variable flips.
FLIPPABLE = textwrap.dedent("""
    import os
    import apache_beam as beam
    from conformance.api import capability, check

    @capability("pardo.basic")
    def test_flips_on_request(runner):
        p = runner.pipeline()
        out = p | beam.Create([1, 2]) | beam.Map(lambda x: x * 10)
        check(out, [10, 30] if os.environ.get("FLIP_THE_CASE") else [10, 20])
        runner.run(p)
""")
# Passing cases (Impulse, ours) and failing ones (two TestStream cases, one pane flag): seconds, not minutes.
SELECTION = (
    "impulse or flips_on_request or element_exactly_at_lateness_horizon_is_kept "
    "or element_one_ms_past_lateness_horizon_is_dropped or fixed_windows_group_per_key_and_window"
)
FAILING = {
    "lateness/element_exactly_at_lateness_horizon_is_kept",
    "lateness/element_one_ms_past_lateness_horizon_is_dropped",
    "gbk/fixed_windows_group_per_key_and_window",
}


def _run(pytester, out, *args):
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--show-capture=no",
        "--tb=line",
        "--target",
        "grpc",
        "--target-name",
        "new-runner",
        "--job-server-cmd",
        JOB_SERVER,
        "--results-dir",
        str(pytester.path / out),
        "-k",
        SELECTION,
        "--pyargs",
        "conformance.cases.test_impulse",
        "conformance.cases.test_lateness",
        "conformance.cases.test_gbk",
        "test_mine.py",
        *args,
    )
    doc = json.loads((pytester.path / out / "results-new-runner.json").read_text())
    return result, doc, {c["id"]: c["outcome"] for c in doc["cases"]}


def test_baseline_turns_a_failing_first_run_into_a_gate_and_diff_names_a_flip(pytester, monkeypatch, capsys):
    pytester.makepyfile(test_mine=FLIPPABLE)
    first, doc, outcomes = _run(pytester, "first")
    assert first.ret == 1, first.stdout.str()[-2000:]
    assert doc["expectations"] is None  # a new runner: no expectations file
    assert {i for i, o in outcomes.items() if o == "failed"} == FAILING, outcomes
    assert outcomes["mine/flips_on_request"] == "passed"

    # (not under ./conformance/: with the kit installed in editable mode, a conformance/ directory
    # in the working directory would shadow the package as a namespace package)
    expectations = pytester.path / "expectations" / "new-runner.yaml"
    assert main(["baseline", str(pytester.path / "first" / "results-new-runner.json"), "-o", str(expectations)]) == 0
    text = expectations.read_text()
    assert "NotImplementedError: beam:transform:teststream:v1" in text  # the runner's own reason
    capsys.readouterr()

    second, _, outcomes = _run(pytester, "second", "--expectations", str(expectations))
    assert second.ret == 0, second.stdout.str()[-2000:]
    assert {i for i, o in outcomes.items() if o == "expected-failure"} == FAILING
    assert {o for i, o in outcomes.items() if i not in FAILING} == {"passed"}

    monkeypatch.setenv("FLIP_THE_CASE", "1")
    third, _, outcomes = _run(pytester, "third", "--expectations", str(expectations))
    assert third.ret == 1 and outcomes["mine/flips_on_request"] == "failed"
    code = main(["diff", str(pytester.path / "second"), str(pytester.path / "third")])
    report = capsys.readouterr()
    assert code == 1
    assert "1 regression(s): mine/flips_on_request" in report.err
    assert "| `mine/flips_on_request` | passed | failed |" in report.out


ROOT = Path(__file__).resolve().parents[1]


def _documented_commands(page: Path, heading: str) -> list[list[str]]:
    """The shell commands of the first sh block under ``heading``, each split as a shell does."""
    section = page.read_text().split(f"\n{heading}\n", 1)[1]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0].replace("\\\n", " ")
    return [shlex.split(line) for line in block.splitlines() if line.strip()]


def test_the_commands_before_you_commit_leave_the_committed_reports_alone(tmp_path):
    # they wrote their narrowed run to reports/results-reference.json, over the committed run of the
    # whole suite (docs/writing-a-case.md did not pass --no-results)
    commands = _documented_commands(ROOT / "docs" / "writing-a-case.md", "### Before you commit")
    assert len(commands) == 2 and all(c[:3] == ["pytest", "--pyargs", "conformance"] for c in commands), commands
    # run where the committed reports are, as in the checkout (a copy: a failure here spoils no real file)
    (tmp_path / "reports").mkdir()
    committed = tmp_path / "reports" / "results-reference.json"
    committed.write_bytes((ROOT / "reports" / "results-reference.json").read_bytes())
    before = committed.read_bytes()
    # `python` of the job-server command is this environment's, as in a venv with the kit installed
    env = {**os.environ, "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])}
    for command in commands:
        done = subprocess.run(
            [sys.executable, "-m", *command], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        assert " passed" in done.stdout.splitlines()[-1], done.stdout[-2000:]
    assert [p.name for p in (tmp_path / "reports").iterdir()] == ["results-reference.json"]
    assert committed.read_bytes() == before
