"""A runner author's first hour, against a real runner that fails cases: Beam's own local job
service (its FnApiRunner refuses TestStream and marks the default trigger's pane not last).
No expectations file at first; `baseline` records the failures; the second run is green; a case
whose outcome flips makes `diff` exit non-zero naming it."""

import json
import sys
import textwrap

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
