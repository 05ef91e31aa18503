"""A runner author's first hour (issue 44), as they live it: the kit installed from its wheel into a
fresh venv (tests/user_venv.py), every command run from a folder of their own outside the clone.
One test per thing that went wrong; each fails on the kit before it was fixed (run with
BEAM_CONFORMANCE_WHEEL naming that kit's wheel)."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

# A case of the user's own, whose expectation the reference runner cannot meet (an output diff),
# and one whose expectation is malformed (a pane given on one expected element only).
USER_CASES = textwrap.dedent("""
    import apache_beam as beam
    from conformance.api import *

    @capability("pardo.basic")
    def test_wrong_on_purpose(runner):
        p = runner.pipeline()
        check(p | beam.Create([1, 2]) | beam.Map(lambda x: x * 10), [10, 21])
        runner.run(p)

    @capability("pardo.basic")
    def test_pane_on_one_element_only(runner):
        p = runner.pipeline()
        check(p | beam.Create([1, 2]), [el(1, pane=ON_TIME_ONLY), el(2)])
        runner.run(p)
""")
FEW = "impulse/one_element or pardo/map_applies_function_to_every_element"


def _folder(tmp_path: Path, cases: str | None = USER_CASES) -> Path:
    folder = tmp_path / "my-project"
    folder.mkdir()
    if cases is not None:
        (folder / "test_my_cases.py").write_text(cases)
    return folder


def _output(done) -> str:
    return done.stdout + done.stderr


def test_1_the_expectations_file_the_readme_writes_is_the_one_the_next_run_uses(user_venv, tmp_path):
    folder = _folder(tmp_path)
    run = ["--pyargs", "conformance", "test_my_cases.py", "--target", "reference", "--target-name", "my-runner"]
    run += ["-k", f"{FEW} or wrong_on_purpose"]
    first = user_venv.pytest(run, folder)
    assert first.returncode == 1, _output(first)[-3000:]
    baseline = [user_venv.script("beam-conformance"), "baseline", "reports/results-my-runner.json"]
    written = user_venv.run(baseline + ["-o", "conformance/expectations/my-runner.yaml"], folder, check=True)
    assert "picks it up by the target's name" in written.stdout
    header = (folder / "conformance" / "expectations" / "my-runner.yaml").read_text().splitlines()[:2]
    assert "docs/testing-your-runner.md, 'Known failures'" in header[1]  # where that section lives
    # the README's second run: no --expectations
    second = user_venv.pytest(run, folder)
    assert second.returncode == 0, _output(second)[-3000:]
    assert (
        "expectations conformance/expectations/my-runner.yaml (chosen by the target's name; 1 known failure)"
        in second.stdout
    )
    results = json.loads((folder / "reports" / "results-my-runner.json").read_text())
    outcomes = {c["id"]: c["outcome"] for c in results["cases"]}
    assert outcomes["my_cases/wrong_on_purpose"] == "expected-failure", outcomes


def test_2_a_refused_connection_is_an_error_at_once_naming_the_endpoint(user_venv, tmp_path):
    folder = _folder(tmp_path, cases=None)
    done = user_venv.pytest(
        ["--pyargs", "conformance", "--target", "grpc://127.0.0.1:1", "--job-server-timeout", "30"], folder
    )
    assert done.returncode == 4, _output(done)[-3000:]
    assert re.search(r"ERROR: target grpc://127.0.0.1:1 is unavailable: .*127\.0\.0\.1:1.*refused", done.stderr), (
        _output(done)[-3000:]
    )


def test_3_a_failing_check_shows_its_diff_once_with_no_warning_on_the_terminal(user_venv, tmp_path):
    folder = _folder(tmp_path)
    done = user_venv.pytest(
        ["--pyargs", "conformance", "test_my_cases.py", "--target", "reference", "-k", f"{FEW} or wrong_on_purpose"],
        folder,
    )
    out = _output(done)
    assert done.returncode == 1, out[-3000:]
    # no Beam import notice, no deprecation warning of the kit's own code, no warnings summary
    assert not [line for line in out.splitlines() if "warning" in line.lower()], out[-3000:]
    assert out.count("missing (expected, not produced)") == 1, out
    # the short summary line is the diff's first line
    assert re.search(r"FAILED test_my_cases.py::test_wrong_on_purpose - check 'check1': expected 2", out), out[-2000:]


def test_4_cases_are_chosen_and_listed_by_id_and_a_case_mistake_is_the_cases_own_error(user_venv, tmp_path):
    folder = _folder(tmp_path)
    listed = user_venv.run([user_venv.script("beam-conformance"), "cases"], folder, check=True).stdout
    assert re.search(r"^impulse/one_element +impulse", listed, re.M), listed[:2000]
    user_venv.pytest(
        [
            "--pyargs",
            "conformance",
            "test_my_cases.py",
            "--target",
            "reference",
            "-k",
            "impulse/one_element or pane_on_one_element_only",
        ],
        folder,
    )
    results = json.loads((folder / "reports" / "results-reference.json").read_text())
    records = {c["id"]: c for c in results["cases"]}
    assert set(records) == {"impulse/one_element", "my_cases/pane_on_one_element_only"}, sorted(records)
    mistake = records["my_cases/pane_on_one_element_only"]
    assert mistake["outcome"] == "error", mistake
    assert mistake["message"].startswith("MalformedExpectation: every expected element"), mistake["message"]
    assert "the job failed" not in mistake["message"]
    # nothing selected says why, and what selects
    none = user_venv.pytest(["--pyargs", "conformance", "--target", "reference", "-k", "no_such_case"], folder)
    assert none.returncode == 5 and "-k matches a case's id" in none.stdout, none.stdout[-2000:]


def test_5_a_narrowed_run_says_so_in_results_and_matrix_and_help_names_the_real_default(user_venv, tmp_path):
    folder = _folder(tmp_path, cases=None)
    user_venv.pytest(["--pyargs", "conformance", "--target", "reference", "-k", FEW], folder)
    results = json.loads((folder / "reports" / "results-reference.json").read_text())
    assert results["selection"]["narrowed_by"] == [f"-k {FEW!r}"], results["selection"]
    user_venv.run([user_venv.script("beam-conformance"), "report"], folder, check=True)
    matrix = (folder / "reports" / "capability-matrix.md").read_text()
    assert f"**reference** ran a selection, not the whole suite: -k {FEW!r}" in matrix
    helped = user_venv.pytest(["--help"], folder).stdout
    assert re.search(r"Default: \$BEAM_CONFORMANCE_TARGET,\s+else\s+reference", helped), helped


def test_6_small_points_did_you_mean_allowed_keys_early_refusals_and_spark_as_an_extra(user_venv, tmp_path):
    folder = _folder(tmp_path, cases=None)
    typo = user_venv.pytest(["--pyargs", "conformance", "--target", "refrence"], folder)
    assert typo.returncode == 4 and "did you mean 'reference'" in typo.stderr, _output(typo)[-2000:]
    bad = folder / "bad.yaml"
    bad.write_text("known_failures:\n  - case: impulse/one_element\n    reason: r\n    isue: x\n")
    keys = user_venv.pytest(["--pyargs", "conformance", "--target", "reference", "--expectations", str(bad)], folder)
    assert keys.returncode == 4 and "did you mean 'issue'" in keys.stderr and "allowed keys:" in keys.stderr
    negative = user_venv.pytest(["--pyargs", "conformance", "--target", "reference", "--per-capability", "-1"], folder)
    assert negative.returncode == 4 and "--per-capability must be at least 1" in negative.stderr
    assert "collected" not in negative.stdout  # refused before collection
    # the venv has no pyspark: the gRPC path is whole without it, and the Spark backend names the extra
    assert user_venv.run([user_venv.python, "-c", "import pyspark"], folder).returncode != 0
    spark = user_venv.pytest(["--pyargs", "conformance", "--target", "spark", "-k", FEW], folder)
    assert spark.returncode == 4 and "[spark]" in spark.stderr, _output(spark)[-2000:]
    serve = user_venv.run([user_venv.script("reference-runner"), "serve", "--backend", "spark", "--port", "0"], folder)
    assert serve.returncode == 2 and "[spark]" in serve.stderr, _output(serve)[-2000:]


def test_9_the_streaming_marker_follows_what_a_case_does(user_venv, tmp_path):
    folder = _folder(tmp_path, cases=None)
    batch = user_venv.run([user_venv.script("beam-conformance"), "cases", "--", "-m", "not streaming"], folder)
    assert batch.returncode == 0, _output(batch)[-2000:]
    assert "timers/element_and_timer_at_the_end_of_the_global_window" not in batch.stdout
    streaming = user_venv.run([user_venv.script("beam-conformance"), "cases", "--", "-m", "streaming"], folder).stdout
    assert re.search(r"^timers/element_and_timer_at_the_end_of_the_global_window .* streaming$", streaming, re.M)
    # written by hand, it is refused: the kit derives it
    (folder / "test_marked.py").write_text(
        "import pytest\nfrom conformance.api import *\n\n"
        "@pytest.mark.streaming\n@capability('pardo.basic')\ndef test_marked(runner):\n    pass\n"
    )
    marked = user_venv.pytest(["test_marked.py", "--target", "reference"], folder)
    assert marked.returncode == 4 and "remove @pytest.mark.streaming" in marked.stderr, _output(marked)[-2000:]


@pytest.mark.parametrize("where", ["cwd", "project root"])
def test_1_default_expectations_are_found_in_the_folder_or_the_project_root(user_venv, tmp_path, where):
    folder = _folder(tmp_path)
    (folder / "pytest.ini").write_text("[pytest]\n")
    expectations = folder / "conformance" / "expectations"
    expectations.mkdir(parents=True)
    (expectations / "my-runner.yaml").write_text(
        "known_failures:\n  - case: my_cases/wrong_on_purpose\n    reason: on purpose\n"
    )
    cwd = folder if where == "cwd" else folder / "sub"
    cwd.mkdir(exist_ok=True)
    cases = "test_my_cases.py" if where == "cwd" else "../test_my_cases.py"
    done = user_venv.pytest(
        [cases, "--target", "reference", "--target-name", "my-runner", "-k", "wrong_on_purpose", "--no-results"], cwd
    )
    assert done.returncode == 0, _output(done)[-3000:]
    assert "(chosen by the target's name" in done.stdout, done.stdout[:1500]
