"""beam-conformance merge: a partial run's records merged into a results file, its summary counted
again and the merged run recorded with the cases it gave."""

import json

import pytest

from conformance.session import results
from conformance.tools import merge
from conformance.tools.cli import main
from test_report import case, results_doc


def run(cases, started="2026-11-27T16:35:55+00:00", **info):
    doc = results_doc("my-runner", cases)
    doc["target_info"] = {"spec": "grpc", "apache_beam": "2.77.0", "python": "3.11.7", **info}
    doc.update(
        suite="cases",
        expectations="conformance/expectations/my-runner.yaml",
        started=started,
        finished=started,
        selection={"deselected": 0, "case_modules_not_collected": []},
    )
    return doc


def base():
    return run([case("pardo/map", "pardo.basic", "passed"), case("gbk/sum", "gbk.global", "failed", "diff")])


def partial():
    doc = run(
        [case("timers/new_one", "timers.event_time", "expected-failure", "boom", known="why")],
        started="2026-12-02T05:00:00+00:00",
    )
    doc["wall_time_s"] = 12.5
    doc["selection"] = {"deselected": 9, "case_modules_not_collected": []}
    return doc


def test_records_are_added_in_id_order_and_the_summary_counted_again():
    merged = merge.merge(base(), partial())
    assert [c["id"] for c in merged["cases"]] == ["gbk/sum", "pardo/map", "timers/new_one"]
    assert merged["summary"] == results.summarize(merged["cases"])
    assert merged["summary"]["expected-failure"] == 1 and merged["summary"]["passed"] == 1
    # the base run's description stays: it is the run of every case not listed as merged
    assert merged["started"] == "2026-11-27T16:35:55+00:00" and merged["selection"]["deselected"] == 0
    [entry] = merged["merged_runs"]
    assert entry["added"] == ["timers/new_one"] and entry["replaced"] == []
    assert entry["started"] == "2026-12-02T05:00:00+00:00" and entry["wall_time_s"] == 12.5
    assert entry["selection"] == {"deselected": 9, "case_modules_not_collected": []}


def test_a_second_merge_appends_to_the_merged_runs():
    again = partial()
    again["cases"] = [case("timers/another", "timers.event_time", "passed")]
    merged = merge.merge(merge.merge(base(), partial()), again)
    assert [e["added"] for e in merged["merged_runs"]] == [["timers/new_one"], ["timers/another"]]
    assert len(merged["cases"]) == 4


def test_a_case_the_base_holds_is_replaced_only_when_asked():
    redo = partial()
    redo["cases"] = [case("gbk/sum", "gbk.global", "passed")]
    with pytest.raises(merge.MergeError, match="in the base already.*gbk/sum"):
        merge.merge(base(), redo)
    merged = merge.merge(base(), redo, replace=True)
    assert merged["merged_runs"][0]["replaced"] == ["gbk/sum"]
    assert merged["summary"]["passed"] == 2 and merged["summary"]["failed"] == 0


@pytest.mark.parametrize(
    "change, refusal",
    [
        (lambda d: d.update(target="other"), "different targets"),
        (lambda d: d.update(suite="java-vr"), "different targets"),
        (lambda d: d["target_info"].update(apache_beam="2.62.0"), "apache_beam"),
        (lambda d: d["target_info"].update(runner_version="v2.78.0"), "runner_version"),
        (lambda d: d.update(expectations="elsewhere.yaml"), "different expectations"),
        (lambda d: d.update(cases=[]), "no case"),
    ],
)
def test_runs_that_cannot_be_one_file_are_refused(change, refusal):
    other = partial()
    change(other)
    with pytest.raises(merge.MergeError, match=refusal):
        merge.merge(base(), other)


def test_the_command_merges_in_place_and_leaves_the_partial_run_alone(tmp_path, capsys):
    base_path, partial_path = tmp_path / "results-my-runner.json", tmp_path / "partial.json"
    base_path.write_text(json.dumps(base()))
    partial_path.write_text(json.dumps(partial()))
    before = partial_path.read_text()
    assert main(["merge", str(base_path), str(partial_path)]) == 0
    merged = results.load(str(base_path))
    assert len(merged["cases"]) == 3 and merged["merged_runs"][0]["added"] == ["timers/new_one"]
    assert partial_path.read_text() == before
    assert "1 new and 0 replaced" in capsys.readouterr().out
    # merging it again is refused (the case is there now), the file unchanged
    assert main(["merge", str(base_path), str(partial_path)]) == 2
    assert "in the base already" in capsys.readouterr().err
    assert results.load(str(base_path)) == merged


def test_the_command_writes_elsewhere_with_output(tmp_path):
    base_path, partial_path, out = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "out.json"
    base_path.write_text(json.dumps(base()))
    partial_path.write_text(json.dumps(partial()))
    assert main(["merge", str(base_path), str(partial_path), "-o", str(out)]) == 0
    assert len(results.load(str(base_path))["cases"]) == 2
    assert len(results.load(str(out))["cases"]) == 3
