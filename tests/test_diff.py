"""beam-conformance diff: changed outcomes between two runs, and the matrix's changes since a run."""

import json

import pytest

from conformance.tools import diff
from conformance.tools.cli import main, write_reports
from test_report import case, results_doc


def before():
    return results_doc(
        "my-runner",
        [
            case("pardo/map", "pardo.basic", "passed"),
            case("pardo/flatmap", "pardo.basic", "passed"),
            case("gbk/sessions", "gbk.sessions", "failed", "boom"),
            case("state/bag", "state.bag", "expected-failure", "no state", known="no state"),
            case("state/value", "state.value", "passed"),
            case("gone/case", "pardo.basic", "passed"),
        ],
    )


def after():
    return results_doc(
        "my-runner",
        [
            case("pardo/map", "pardo.basic", "passed"),
            case(
                "pardo/flatmap",
                "pardo.basic",
                "failed",
                "output differs from the Beam model:\ncheck 'c': expected 2 element(s), runner produced 1",
            ),
            case("gbk/sessions", "gbk.sessions", "passed"),
            case("state/bag", "state.bag", "failed", "no state"),
            case("state/value", "state.value", "skipped", "not run"),
            case("new/one", "gbk.global", "failed", "new and failing"),
        ],
    )


@pytest.mark.parametrize(
    "old, new, kind",
    [
        ("passed", "failed", "regressed"),
        ("passed", "error", "regressed"),
        ("unexpected-pass", "expected-failure", "regressed"),
        ("failed", "passed", "fixed"),
        ("failed", "expected-failure", "changed"),
        ("passed", "skipped", "now-skipped"),
        ("skipped", "passed", "now-run"),
        (None, "failed", "new-failing"),
        (None, "passed", "new-passing"),
        ("passed", None, "removed"),
        ("passed", "passed", None),
        ("passed", "unexpected-pass", "changed"),
    ],
)
def test_kinds_of_change(old, new, kind):
    assert diff.kind_of(old, new) == kind


def test_changes_between_two_runs():
    d = diff.compare(before(), after())
    kinds = {c.id: c.kind for c in d.changes}
    assert kinds == {
        "pardo/flatmap": "regressed",
        "gbk/sessions": "fixed",
        "state/bag": "changed",
        "state/value": "now-skipped",
        "new/one": "new-failing",
        "gone/case": "removed",
    }
    assert [c.id for c in d.regressions] == ["pardo/flatmap"]
    assert d.passing(before()) == "4/6" and d.passing(after()) == "2/5"


def test_markdown_groups_by_capability_and_names_regressions():
    text = diff.to_markdown([diff.compare(before(), after())])
    assert text.startswith(diff.MARKER)
    assert "**1 regression**" in text
    regressions = text[text.index("#### Regressions") : text.index("#### New cases that fail")]
    assert (
        "| ParDo: Map and FlatMap `pardo.basic` | `pardo/flatmap` | passed | failed | "
        "check 'c': expected 2 element(s), runner produced 1 |" in regressions
    )
    assert "<details><summary>Ran before, skipped now (1)</summary>" in text


def test_cli_exit_status_markdown_and_json(tmp_path, capsys):
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "results-my-runner.json").write_text(json.dumps(before()))
    (tmp_path / "new.json").write_text(json.dumps(after()))
    code = main(
        [
            "diff",
            str(tmp_path / "old"),
            str(tmp_path / "new.json"),
            "--markdown",
            str(tmp_path / "d.md"),
            "--json",
            str(tmp_path / "d.json"),
        ]
    )
    assert code == 1
    captured = capsys.readouterr()
    assert "1 regression(s): pardo/flatmap" in captured.err
    assert captured.out == (tmp_path / "d.md").read_text()
    data = json.loads((tmp_path / "d.json").read_text())
    assert data["regressions"] == 1
    [target] = data["targets"]
    assert target["counts"]["regressed"] == 1 and target["changes"][0]["matrix_row"]
    # the same run against itself: nothing changed, exit 0
    assert main(["diff", str(tmp_path / "new.json"), str(tmp_path / "new.json"), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["regressions"] == 0
    assert main(["diff", str(tmp_path / "missing"), str(tmp_path / "new.json")]) == 2


def test_matrix_shows_changes_since_a_previous_run(tmp_path):
    (tmp_path / "prev").mkdir()
    (tmp_path / "prev" / "results-my-runner.json").write_text(json.dumps(before()))
    (tmp_path / "results-my-runner.json").write_text(json.dumps(after()))
    write_reports([str(tmp_path / "results-my-runner.json")], str(tmp_path), str(tmp_path / "prev"))
    md = (tmp_path / "capability-matrix.md").read_text()
    assert "since previous run |" in md and "1 regressed, 1 new-failing, 1 fixed" in md
    assert "## Changes since the previous run" in md
    matrix = json.loads((tmp_path / "capability-matrix.json").read_text())
    assert matrix["targets"][0]["since_previous"]["regressions"] == 1
    html = (tmp_path / "capability-matrix.html").read_text()
    assert "pardo/flatmap" in html and "regressed" in html


def test_a_targets_java_vr_run_is_paired_with_its_own_earlier_java_vr_run(tmp_path):
    from conformance.session import results
    from test_report import java_vr_doc

    for name, docs in (
        ("old", [before(), java_vr_doc("my-runner", seed=0)]),
        ("new", [after(), java_vr_doc("my-runner", seed=1)]),
    ):
        (tmp_path / name).mkdir()
        for doc in docs:
            (tmp_path / name / results.results_file_name(doc["target"], results.suite_of(doc))).write_text(
                json.dumps(doc)
            )
    runs = diff.load_runs(str(tmp_path / "new"))
    assert sorted(runs) == ["my-runner", "my-runner [java-vr]"]
    diffs = {d.target: d for d in diff.compare_runs(diff.load_runs(str(tmp_path / "old")), runs)}
    java = diffs["my-runner [java-vr]"]
    # seed 1 shifts every outcome by one: the test that passed first fails now
    assert [c.id for c in java.regressions] == ["java_vr/org.apache.beam.sdk.transforms.ParDoTest$BasicTests.testParDo"]
    assert all(not c.id.startswith("java_vr/") for c in diffs["my-runner"].changes)
