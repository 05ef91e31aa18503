"""beam-conformance baseline: an expectations file from a run's failures, and its update."""

import json

import yaml

from conformance.session.expectations import Expectations, parse
from conformance.tools import baseline
from conformance.tools.cli import main
from test_report import case, results_doc

DIFF = (
    "output differs from the Beam model:\n"
    "check 'check1': expected 2 element(s), runner produced 1; 1 missing, 0 unexpected (checked: value)\n"
    "  missing (expected, not produced) (1):\n    2"
)
JOB_FAILED = (
    "the job failed on my-runner:\n    RuntimeError: Pipeline failed.\n"
    "    Traceback (most recent call last):\n"
    '      File "x.py", line 1\n    NotImplementedError: beam:transform:teststream:v1'
)


def whole_run(cases):
    doc = results_doc("my-runner", cases)
    doc["selection"] = {"deselected": 0, "case_modules_not_collected": []}
    return doc


def first_run():
    return whole_run(
        [
            case("pardo/map", "pardo.basic", "passed"),
            case("pardo/flatmap", "pardo.basic", "failed", DIFF),
            case("triggers/count_a", "triggers.count", "failed", JOB_FAILED),
            case("triggers/count_b", "triggers.count", "failed", JOB_FAILED),
            case("state/bag", "state.bag", "error", "RuntimeError: setup broke\nmore"),
        ]
    )


def test_reasons_are_one_line_from_the_failure():
    assert baseline.reason_of(case("a/b", "pardo.basic", "failed", DIFF)) == (
        "output differs from the Beam model: expected 2 element(s), runner produced 1; 1 missing, 0 unexpected "
        "(checked: value)"
    )
    assert (
        baseline.reason_of(case("a/b", "pardo.basic", "failed", JOB_FAILED))
        == "the job failed: NotImplementedError: beam:transform:teststream:v1"
    )
    assert baseline.reason_of(case("a/b", "pardo.basic", "failed", "x" * 500)).endswith("...")
    assert baseline.reason_of(case("a/b", "pardo.basic", "expected-failure", "boom", known="known why")) == "known why"


def test_a_capability_whose_cases_all_fail_becomes_one_entry():
    doc = baseline.build(first_run(), "results-my-runner.json")
    entries = doc["known_failures"]
    assert {
        "capability": "triggers.count",
        "reason": "the job failed: NotImplementedError: beam:transform:teststream:v1",
    } in entries
    assert {"case": "pardo/flatmap", "reason": baseline.reason_of(first_run()["cases"][1])} in entries
    # a capability with a single (failing) case stays a case entry; so does one with a passing case
    assert {"case": "state/bag", "reason": "RuntimeError: setup broke"} in entries
    assert len(entries) == 3
    exp = Expectations(parse(doc))  # a valid expectations file, covering every failing case
    for c in first_run()["cases"]:
        assert (exp.lookup(c["id"], c["capability"]) is not None) == (c["outcome"] != "passed"), c["id"]


def test_a_narrowed_run_never_collapses():
    run = first_run()
    run["selection"] = {"deselected": 12, "case_modules_not_collected": []}
    assert all("case" in e for e in baseline.build(run)["known_failures"])
    run["selection"] = {"deselected": 0, "case_modules_not_collected": ["test_state"]}
    assert all("case" in e for e in baseline.build(run)["known_failures"])
    del run["selection"]  # results from before the record: assume narrowed
    assert all("case" in e for e in baseline.build(run)["known_failures"])


def test_update_drops_what_passes_keeps_hand_written_entries_and_adds_new_failures():
    existing = {
        "target": "my-runner",
        "description": "mine",
        "known_failures": [
            {"case": "pardo/flatmap", "reason": "hand-written", "issue": "https://example.org/1"},
            {"capability": "triggers", "reason": "no TestStream", "issue": "https://example.org/2"},
            {"case": "state/bag", "reason": "fixed soon"},
            {"case": "timers/flaky_one", "reason": "order varies", "flaky": True},
            {"case": "sdf/not_in_this_run", "reason": "kept: no evidence"},
        ],
    }
    newer = whole_run(
        [
            case("pardo/map", "pardo.basic", "failed", DIFF),  # new failure
            case("pardo/flatmap", "pardo.basic", "expected-failure", DIFF, known="hand-written"),
            case("triggers/count_a", "triggers.count", "unexpected-pass", "UNEXPECTED PASS"),
            case("triggers/count_b", "triggers.count", "expected-failure", JOB_FAILED, known="no TestStream"),
            case("state/bag", "state.bag", "unexpected-pass", "UNEXPECTED PASS"),
            case("timers/flaky_one", "timers.strict_ordering", "passed"),
        ]
    )
    doc, notes = baseline.update(existing, newer)
    assert doc["description"] == "mine"
    assert doc["known_failures"] == [
        {"case": "pardo/flatmap", "reason": "hand-written", "issue": "https://example.org/1"},
        # the capability entry is narrowed to its case still failing, reason and issue kept
        {"case": "triggers/count_b", "reason": "no TestStream", "issue": "https://example.org/2"},
        {"case": "timers/flaky_one", "reason": "order varies", "flaky": True},
        {"case": "sdf/not_in_this_run", "reason": "kept: no evidence"},
        {"case": "pardo/map", "reason": baseline.reason_of(newer["cases"][0])},
    ]
    assert "dropped state/bag: its 1 case now pass" in notes
    assert any(n.startswith("narrowed capability triggers") for n in notes)


def test_cli_writes_refuses_to_clobber_and_updates(tmp_path, capsys):
    results = tmp_path / "results-my-runner.json"
    results.write_text(json.dumps(first_run()))
    out = tmp_path / "exp" / "my-runner.yaml"
    assert main(["baseline", str(results), "-o", str(out)]) == 0
    written = yaml.safe_load(out.read_text())
    assert written["target"] == "my-runner" and len(written["known_failures"]) == 3
    Expectations.load(str(out))  # loads as the plugin loads it
    assert main(["baseline", str(results), "-o", str(out)]) == 2
    assert "--update" in capsys.readouterr().err
    data = yaml.safe_load(out.read_text())
    data["known_failures"][0]["reason"] = "edited by hand"
    out.write_text(yaml.safe_dump(data))
    assert main(["baseline", str(results), "-o", str(out), "--update"]) == 0
    assert yaml.safe_load(out.read_text())["known_failures"][0]["reason"] == "edited by hand"


def test_cli_reports_unreadable_results(tmp_path, capsys):
    bad = tmp_path / "x.json"
    bad.write_text(json.dumps({"format": "something-else"}))
    assert main(["baseline", str(bad), "-o", str(tmp_path / "o.yaml")]) == 2
    assert "not a beam-conformance results file" in capsys.readouterr().err


PANE_ONLY = (
    "output differs from the Beam model only in pane metadata (counted under that property's own capability; "
    "everything else the case checks holds):\ncheck 'check1': only the pane metadata differs (last)"
)


def deviating(id_, capability, prop, outcome="failed", message=PANE_ONLY, known=None):
    record = case(id_, capability, outcome, message, known=known)
    record.update(cross_cutting=prop, judged=True)
    return record


def pane_run():
    return whole_run(
        [
            deviating("gbk/fixed", "gbk.fixed", "pane metadata"),
            deviating("gbk/sliding", "gbk.sliding", "pane metadata"),
            deviating("combine/per_key", "combine.per_key", "pane metadata"),
            case("combine/globally", "combine.globally", "passed"),
            case("pardo/flatmap", "pardo.basic", "failed", DIFF),
            # a property an entry named (lies_in): no failure shows it, so no property entry covers it
            deviating("lateness/a", "lateness.allowed", "TestStream event order", "expected-failure", known="order"),
            deviating("lateness/b", "lateness.allowed", "TestStream event order", "expected-failure", known="order"),
        ]
    )


def test_cases_that_deviate_only_in_one_property_become_one_property_entry():
    # it used to write one entry per case: the peers' files held 262 of them for pane metadata
    doc = baseline.build(pane_run(), "results-my-runner.json")
    entries = doc["known_failures"]
    (prop,) = [e for e in entries if "property" in e]
    assert prop["property"] == "pane metadata"
    assert prop["reason"].startswith("output differs from the Beam model: only the pane metadata differs (last)")
    assert not any(e.get("case", "").startswith(("gbk/", "combine/")) for e in entries), entries
    assert {"capability": "lateness.allowed", "reason": "order"} in entries
    assert {"case": "pardo/flatmap", "reason": baseline.reason_of(pane_run()["cases"][4])} in entries
    exp = Expectations(parse(doc))  # a valid file that gives every failure of the run its verdict again
    for c in pane_run()["cases"]:
        known = exp.lookup(c["id"], c["capability"])
        failed = c["outcome"] != "passed"
        prop_seen = c.get("cross_cutting") if c.get("cross_cutting") == "pane metadata" else None
        assert exp.judge(known, failed, prop_seen).outcome == ("expected-failure" if failed else "passed"), c["id"]


def test_one_case_deviating_in_a_property_stays_a_case_entry():
    run = whole_run([deviating("gbk/fixed", "gbk.fixed", "pane metadata"), case("gbk/x", "gbk.fixed", "passed")])
    assert baseline.build(run)["known_failures"] == [
        {"case": "gbk/fixed", "reason": baseline.reason_of(run["cases"][0])}
    ]


def test_update_keeps_a_property_entry_while_cases_deviate_in_it_and_drops_it_after():
    existing = {"known_failures": [{"property": "pane metadata", "reason": "last pane not marked last"}]}
    doc, notes = baseline.update(existing, pane_run())
    assert doc["known_failures"][0] == {"property": "pane metadata", "reason": "last pane not marked last"}
    assert not any(e.get("case", "").startswith(("gbk/", "combine/")) for e in doc["known_failures"])
    fixed = whole_run([case("gbk/fixed", "gbk.fixed", "passed"), case("gbk/sliding", "gbk.sliding", "passed")])
    doc, notes = baseline.update(existing, fixed)
    assert doc["known_failures"] == []
    assert "dropped property pane metadata: no case deviates only in it now" in notes


def test_the_file_records_the_runner_version_the_run_reported():
    run = pane_run()
    run["target_info"]["runner_version"] = "my-runner 1.4.0"
    doc = baseline.build(run)
    assert doc["runner_version"] == "my-runner 1.4.0"
    assert parse(doc)  # a key a file may hold (it used to be refused as unknown)
    run["target_info"]["runner_version"] = "my-runner 1.5.0"
    updated, notes = baseline.update(doc, run)
    assert updated["runner_version"] == "my-runner 1.5.0"
    assert "runner_version: my-runner 1.4.0 -> my-runner 1.5.0 (the run's)" in notes
    assert "runner_version" not in baseline.build(pane_run())  # a target that reports none
