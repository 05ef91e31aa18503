"""Beam's published capability matrix beside ours (conformance.tools.report.published, beam_comparison)."""

import json

from conformance import capabilities
from conformance.tools.cli import main
from conformance.tools.report import beam_comparison, matrix, published
from test_report import case, results_doc


def compared(docs, target):
    comparison = beam_comparison.compare(matrix.build(docs))
    return next(t for t in comparison.targets if t.target == target)


def by_row(entries):
    return {e.row.key: e for e in entries}


def test_the_data_is_beams_matrix_as_read():
    # spot checks against the source file at the recorded commit
    assert published.SOURCE["commit"] == "06f56f5126567f65ad6b44c444a581546a556233"
    rows = published.BEAM_ROWS_BY_KEY
    assert rows["what/ParDo"].claim("flink") == "Yes" and rows["what/ParDo"].claim("python direct") == ""
    assert rows["what/GroupByKey"].claim("spark-rdd") == "Partially"
    assert rows["when/Allowed lateness"].claim("spark-rdd") == "No"
    assert rows["how/Accumulating"].claim("spark-rdd") == "No"
    assert rows["sdf-bounded/Bundle Finalization"].claim("flink") == "No"
    assert rows["sdf-unbounded/Base"].claim("go direct") == "No"
    assert rows["where/Fixed windows"].claim("go direct") is None  # no entry for the direct runners
    assert rows["misc/Key-ordered delivery"].claim("spark-rdd") == "Unverified"
    # facts only: no prose from Beam's l2/l3 travels with the rows
    assert all(
        set(r.claims.values()) <= {"Yes", "Partially", "No", "Unverified", "", None} for r in published.BEAM_ROWS
    )


def test_every_beam_row_maps_to_our_rows_or_says_why_not():
    ours = {r.name for r in capabilities.ROWS}
    for row in published.BEAM_ROWS:
        counterpart = published.BEAM_TO_OURS.get(row.key)
        if counterpart is None:
            assert published.NO_COUNTERPART.get(row.key), row.key
            continue
        assert row.key not in published.NO_COUNTERPART, row.key
        assert counterpart.rows and set(counterpart.rows) <= ours, row.key
        assert all(capabilities.get(c).row in counterpart.rows for c in counterpart.capabilities), row.key
    for name in ("what/Source API", "what/Composite Transforms", "when/Configurable triggering"):
        assert name in published.NO_COUNTERPART


def test_columns_map_to_our_targets():
    assert published.TARGET_COLUMN == {
        "flink": "flink",
        "beam-spark-job-server": "spark-rdd",
        "samza": "samza",
        "beam-direct": "python direct",
        "beam-fnapi": "python direct",
        "prism": "go direct",
    }
    assert "Prism replaced" in published.COLUMN_TARGETS["go direct"].note


def test_a_claimed_row_our_cases_fail_is_listed_with_its_failing_cases():
    doc = results_doc(
        "flink",
        [
            case("gbk/global", "gbk.global", "passed"),
            case("gbk/empty", "gbk.empty", "expected-failure", "boom", known="empty groups are dropped"),
            case("gbk/encoded", "gbk.encoded_keys", "failed", "check 'x': 1 missing"),
        ]
        + [case(f"pardo/map{i}", "pardo.basic", "failed", "nope") for i in range(7)],
    )
    t = compared([doc], "flink")
    listed = by_row(t.claimed_but_failing)
    gbk = listed["what/GroupByKey"]  # Beam: flink Yes
    assert gbk.claim == "Yes" and gbk.cell.verdict == "Partially"
    assert sorted(c["id"] for c in gbk.cell.failing) == ["gbk/empty", "gbk/encoded"]
    assert listed["what/ParDo"].cell.verdict == "No"

    md = beam_comparison.render_markdown(matrix.build([doc]))
    assert "## flink (Beam's column `flink`)" in md
    gbk_line = next(line for line in md.splitlines() if line.startswith("| GroupByKey |"))
    assert "| Yes |" in gbk_line and "| Partially |" in gbk_line and "1 of 3" in gbk_line
    assert "`gbk/empty`" in gbk_line and "empty groups are dropped" in gbk_line
    assert "1 without a known-failure reason" in gbk_line
    pardo_line = next(line for line in md.splitlines() if line.startswith("| ParDo |"))
    assert pardo_line.count("`pardo/map") == beam_comparison.SHOWN_CASES and "7: " in pardo_line
    assert "and 2 more" in pardo_line

    js = json.loads(beam_comparison.render_json(matrix.build([doc])))
    (flink,) = js["targets"]
    row = next(r for r in flink["claimed_but_failing"] if r["beam_row"] == "GroupByKey")
    assert {c["id"]: c["known_failure"] for c in row["failing"]} == {
        "gbk/empty": "empty groups are dropped",
        "gbk/encoded": None,
    }
    assert js["source"]["commit"] == published.SOURCE["commit"]


def test_a_row_beam_denies_and_our_cases_pass_is_listed():
    doc = results_doc(
        "beam-spark-job-server",
        [
            case("lateness/allowed", "lateness.allowed", "passed"),  # Beam: spark-rdd No
            case("lateness/dropping", "lateness.dropping", "failed", "x"),
            case("triggers/accumulating", "triggers.accumulating", "failed", "x"),  # Beam: No, ours No
        ],
    )
    t = compared([doc], "beam-spark-job-server")
    listed = by_row(t.denied_but_passing)
    assert set(listed) == {"when/Allowed lateness"}
    assert listed["when/Allowed lateness"].claim == "No"
    assert [c["id"] for c in listed["when/Allowed lateness"].cell.passing] == ["lateness/allowed"]
    assert "how/Accumulating" in by_row(t.consistent)
    md = beam_comparison.render_markdown(matrix.build([doc]))
    assert "### Beam claims no support, our cases pass" in md and "`lateness/allowed`" in md


def test_agreeing_rows_are_not_listed():
    doc = results_doc(
        "flink",
        [
            case("pardo/map", "pardo.basic", "passed"),  # Beam: Yes, ours Yes
            case("window/fixed", "gbk.fixed", "passed"),
            case("sdf/finalize", "sdf.bundle_finalization", "failed", "x"),  # bounded: Beam No, ours No
        ],
    )
    t = compared([doc], "flink")
    assert not t.claimed_but_failing and not t.denied_but_passing
    consistent = by_row(t.consistent)
    assert {"what/ParDo", "where/Fixed windows", "sdf-bounded/Bundle Finalization"} <= set(consistent)
    assert "what/Combine" in by_row(t.not_tested)
    md = beam_comparison.render_markdown(matrix.build([doc]))
    assert "### Beam claims support" not in md and "### Beam claims no support" not in md


def test_rows_beam_states_nothing_for_are_listed_apart():
    doc = results_doc("prism", [case("pardo/map", "pardo.basic", "failed", "x")])  # Beam: go direct ''
    t = compared([doc], "prism")
    assert "what/ParDo" in by_row(t.not_stated) and not t.claimed_but_failing
    assert by_row(t.not_stated)["where/Fixed windows"].claim is None
    md = beam_comparison.render_markdown(matrix.build([doc]))
    assert "### Beam states no verdict" in md
    assert "| ParDo | empty | ParDo | No | 0 of 1 |" in md


def test_targets_without_a_beam_column_are_left_out():
    docs = [
        results_doc("reference", [case("pardo/map", "pardo.basic", "failed", "x")]),
        results_doc("beam-fnapi", [case("pardo/map", "pardo.basic", "passed")]),
        results_doc("beam-direct", [case("pardo/map", "pardo.basic", "passed")]),
    ]
    comparison = beam_comparison.compare(matrix.build(docs))
    assert [(t.target, t.column) for t in comparison.targets] == [
        ("beam-fnapi", "python direct"),
        ("beam-direct", "python direct"),
    ]
    assert comparison.not_compared == ["reference"]
    md = beam_comparison.render_markdown(matrix.build(docs))
    assert "## reference" not in md and "Not compared (no Beam column): reference." in md


def test_results_without_a_compared_target_write_a_short_note():
    m = matrix.build([results_doc("reference", [case("pardo/map", "pardo.basic", "passed")])])
    md = beam_comparison.render_markdown(m)
    assert "nothing to compare" in md and "(reference)" in md and "##" not in md
    js = json.loads(beam_comparison.render_json(m))
    assert js["targets"] == [] and "nothing to compare" in js["note"]


def test_cli_report_writes_the_comparison(tmp_path, capsys):
    docs = [
        results_doc("flink", [case("gbk/global", "gbk.global", "failed", "x")]),
        results_doc("reference", [case("gbk/global", "gbk.global", "passed")]),
    ]
    for doc in docs:
        (tmp_path / f"results-{doc['target']}.json").write_text(json.dumps(doc))
    out = tmp_path / "out"
    assert main(["report", "--results-dir", str(tmp_path), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    for name in ("beam-matrix-comparison.md", "beam-matrix-comparison.json"):
        assert f"wrote {out / name}" in printed
    assert "`gbk/global`" in (out / "beam-matrix-comparison.md").read_text()
    js = json.loads((out / "beam-matrix-comparison.json").read_text())
    assert js["format"] == beam_comparison.FORMAT
    assert [t["target"] for t in js["targets"]] == ["flink"] and js["not_compared"] == ["reference"]
    assert [r["beam_row"] for r in js["targets"][0]["claimed_but_failing"]] == ["GroupByKey"]
