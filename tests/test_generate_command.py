"""``beam-conformance generate`` end to end, on a planted one-bug runner (planted_runners.py): it
exits 1 on a new deviation, writes the generated results, a repro program and the matrix's section;
a signature entry in the expectations makes the same run pass; bad options are refused at once."""

import json
import os
import subprocess
import sys

TESTS = os.path.dirname(os.path.abspath(__file__))


def _generate(tmp_path, *args):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([TESTS, os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, "-m", "conformance.tools.cli", "generate", "--results-dir", str(tmp_path)]
    command += ["--out", str(tmp_path), "--workers", "0", *args]
    return subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)


def test_a_planted_count_bug_fails_the_run_and_a_signature_entry_covers_it(tmp_path):
    args = ["--target", "planted-count", "--examples", "6", "--capabilities", "triggers.count", "--shrink-runs", "8"]
    first = _generate(tmp_path, *args, "--", "-p", "planted_runners")
    assert first.returncode == 1, first.stdout[-3000:] + first.stderr[-3000:]
    document = json.loads((tmp_path / "results-planted-count.generated.json").read_text())
    assert document["suite"] == "generated"
    assert document["selection"]["generated"] == {
        "seed": 1,
        "examples": 6,
        "capabilities": ["triggers.count"],
        "minutes": None,
    }
    failing = [c for c in document["cases"] if c["outcome"] == "failed"]
    signatures = {c["signature"] for c in failing}
    assert len(signatures) == 1, signatures  # one bug, one signature, however many pipelines show it
    [signature] = signatures
    assert signature.endswith(" @ GroupByKey+TestStream+WindowInto"), signature
    assert all(c["counts_against"] == "triggers.count" for c in failing)
    assert list((tmp_path / "generated").glob("repro-*-groupbykey-teststream-windowinto.py"))
    assert f"deviation {signature}: {len(failing)} pipeline(s)" in first.stdout
    matrix = (tmp_path / "capability-matrix.md").read_text()
    assert "## Generated pipelines" in matrix and "### Deviations on planted-count" in matrix
    assert "Count triggers (`triggers.count`)" in matrix

    known = tmp_path / "planted.yaml"
    known.write_text(
        "known_failures:\n"
        f'  - signature: "{signature.split(" @ ")[0]} @ *"\n'
        '    reason: "planted: AfterCount(n) fires at n + 1 elements"\n'
    )
    second = _generate(tmp_path, *args, "--expectations", str(known), "--", "-p", "planted_runners")
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    document = json.loads((tmp_path / "results-planted-count.generated.json").read_text())
    assert {c["outcome"] for c in document["cases"]} == {"passed", "expected-failure"}
    assert "deviating (known)" in (tmp_path / "capability-matrix.md").read_text()


def test_bad_options_are_refused_before_anything_runs(tmp_path):
    unknown = _generate(tmp_path, "--target", "reference", "--capabilities", "triggers,no.such.thing")
    assert unknown.returncode == 2 and "'no.such.thing' is no capability id" in unknown.stderr
    zero = _generate(tmp_path, "--target", "reference", "--examples", "0")
    assert zero.returncode == 2 and "--examples: must be 1 or more" in zero.stderr
    budget = _generate(tmp_path, "--target", "reference", "--minutes", "-1")
    assert budget.returncode == 2 and "--minutes: must be more than 0 minutes" in budget.stderr
    assert not list(tmp_path.iterdir())


def test_a_spent_budget_skips_the_remaining_pipelines_with_the_reason(tmp_path):
    # a budget of a thousandth of a minute is spent before the first pipeline's turn
    run = _generate(tmp_path, "--target", "reference", "--examples", "3", "--minutes", "0.001")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    document = json.loads((tmp_path / "results-reference.generated.json").read_text())
    assert [c["outcome"] for c in document["cases"]] == ["skipped"] * 3
    assert all("--generated-minutes" in c["message"] for c in document["cases"])


def test_batch_programs_share_jobs_and_streams_run_alone(tmp_path):
    run = _generate(tmp_path, "--target", "reference", "--examples", "12", "--", "--batch-size", "4")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    cases = json.loads((tmp_path / "results-reference.generated.json").read_text())["cases"]
    assert {c["outcome"] for c in cases} == {"passed"}
    shared = [c for c in cases if "cases in one job" in c.get("batch", "")]
    alone = [c for c in cases if c.get("batch", "").startswith("ran alone: its TestStream")]
    assert shared and all(not c["streaming"] for c in shared), cases
    assert all(c["streaming"] for c in alone)


def test_baseline_turns_a_generated_run_into_signature_entries(tmp_path):
    from conformance.tools import baseline

    failing = {
        "outcome": "failed",
        "capability": "triggers.count",
        "message": "deviation pane timing @ GroupByKey+TestStream+WindowInto (shrunk to 3 transforms in 8 runs; "
        "standalone program: reports/generated/repro-x.py):\noutput differs from the Beam model:\ncheck 'generated': "
        "predicate failed: the output the Beam model allows (conformance.model): model deviation [pane timing] "
        "key 'a', window [0, 2000): the model fixes 2 pane(s) here, the runner emitted 1",
        "signature": "pane timing @ GroupByKey+TestStream+WindowInto",
    }
    run = {
        "target": "mine",
        "suite": "generated",
        "cases": [
            {**failing, "id": "generated/pipeline[s1-00001]"},
            {**failing, "id": "generated/pipeline[s1-00004]"},
            {"id": "generated/pipeline[s1-00002]", "outcome": "passed", "capability": "gbk.fixed", "message": ""},
        ],
        "selection": {"deselected": 0, "case_modules_not_collected": []},
    }
    document = baseline.build(run)
    assert document["known_failures"] == [
        {
            "signature": "pane timing @ GroupByKey+TestStream+WindowInto",
            "reason": "model deviation [pane timing] key 'a', window [0, 2000): the model fixes 2 pane(s) here, "
            "the runner emitted 1",
        }
    ]
    updated, notes = baseline.update(document, run)  # the same run again: the entry covers both pipelines
    assert updated["known_failures"] == document["known_failures"] and not [n for n in notes if "added" in n]


def test_a_capability_the_generator_never_reaches_is_named(tmp_path):
    run = _generate(tmp_path, "--target", "reference", "--examples", "2", "--capabilities", "metrics")
    assert run.returncode != 0
    assert "the generator writes no pipeline touching metrics." in run.stdout + run.stderr
