"""The capability matrix built from results, in each output format."""

import json
import os

import yaml

from conformance import capabilities
from conformance.tools.cli import main, write_reports
from conformance.tools.report import matrix


def case(id_, capability, outcome, message="", known=None):
    from conformance import capabilities

    cap = capabilities.get(capability)
    return {
        "id": id_,
        "nodeid": f"x::{id_}",
        "capability": capability,
        "capability_title": cap.title,
        "matrix_row": cap.row,
        "beam_category": cap.beam_category,
        "streaming": cap.streaming,
        "outcome": outcome,
        "duration_s": 0.1,
        "message": message,
        "known_failure": known,
    }


def results_doc(target, cases):
    from conformance.session import results

    return {
        "format": results.FORMAT,
        "target": target,
        "target_info": {"apache_beam": "2.77.0"},
        "summary": results.summarize(cases),
        "wall_time_s": 1.5,
        "cases": cases,
    }


def java_vr_doc(target, seed=0):
    """A run of Beam's Java ValidatesRunner suite: passes, a failure, a known one, skips."""
    from conformance.session import results

    tests = [
        ("org.apache.beam.sdk.transforms.ParDoTest$BasicTests.testParDo", "pardo.basic"),
        ("org.apache.beam.sdk.transforms.ParDoTest$TimerTests.testEventTimeTimerBounded", "timers.event_time"),
        ("org.apache.beam.sdk.transforms.ViewTest.testSingletonSideInput", "side_inputs.singleton"),
        ("org.apache.beam.sdk.transforms.GroupByKeyTest$BasicTests.testGroupByKey", "gbk.global"),
        ("org.apache.beam.sdk.testing.TestStreamTest.testLateDataAccumulating", "teststream"),
    ]
    outcomes = ["passed", "failed", "expected-failure", "passed", "skipped"]
    cases = []
    for i, (test, cap) in enumerate(tests):
        outcome = outcomes[(i + seed) % len(outcomes)]
        message = {
            "failed": "java.lang.AssertionError: ParDo/ParMultiDo(Anonymous).output: \n"
            "Expected: <3>\n     but: was <2>",
            "expected-failure": "java.lang.RuntimeException: the job failed",
            "skipped": "left out by the portable selection: category UsesTestStream excluded (apache/beam ...)",
        }.get(outcome, "")
        record = case(
            f"java_vr/{test}", cap, outcome, message, known="not yet" if outcome == "expected-failure" else None
        )
        record["suite"] = "java-vr"
        cases.append(record)
    doc = results_doc(target, cases)
    doc["suite"] = "java-vr"
    doc["wall_time_s"] = 42.0
    doc["selection"] = {
        "deselected": 0,
        "java_vr": {
            "beam_java": "2.65.0",
            "profile": "portable",
            "selection": "beam",
            "profile_source": "apache/beam x",
        },
    }
    assert results.suite_of(doc) == "java-vr"
    return doc


def sample():
    a = results_doc(
        "runner-a",
        [
            case("pardo/map", "pardo.basic", "passed"),
            case("pardo/flatmap", "pardo.basic", "passed"),
            case("gbk/sessions", "gbk.sessions", "failed", "check 'x': 1 missing\n  missing: ('k', [1])"),
            case("gbk/global", "gbk.global", "passed"),
            case("state/bag", "state.bag", "expected-failure", "boom", known="no state support"),
            case("state/value", "state.value", "skipped", "known failure, not run"),
        ],
    )
    b = results_doc(
        "runner-b",
        [
            case("pardo/map", "pardo.basic", "passed"),
            case("pardo/flatmap", "pardo.basic", "unexpected-pass", "UNEXPECTED PASS"),
            case("gbk/sessions", "gbk.sessions", "passed"),
            case("gbk/global", "gbk.global", "error", "setup failed"),
        ],
    )
    return [a, b]


def test_verdicts_count_cases_that_ran():
    m = matrix.build(sample())
    assert m.row_cell("ParDo", "runner-a").verdict == "Yes"
    assert m.row_cell("ParDo", "runner-a").qualifier == "all 2 cases pass"
    assert m.row_cell("GroupByKey", "runner-b").verdict == "No"  # the only case errored
    assert m.row_cell("Session windows", "runner-a").verdict == "No"
    assert m.row_cell("Stateful Processing", "runner-a").verdict == "No"  # known failures still fail
    assert m.capability_cell("state.value", "runner-a").verdict == ""  # skipped only: not tested
    assert m.capability_cell("state.value", "runner-a").qualifier == "1 case skipped"
    assert m.row_cell("Stateful Processing", "runner-b").qualifier == "not tested"
    assert "no state support" in m.row_cell("Stateful Processing", "runner-a").note()


def test_partial_verdict_and_merge_replaces_earlier_run_of_same_target():
    docs = sample()
    newer = results_doc(
        "runner-a", [case("pardo/map", "pardo.basic", "passed"), case("pardo/flatmap", "pardo.basic", "failed", "x")]
    )
    m = matrix.build(docs + [newer])
    assert [c.name for c in m.columns] == ["runner-a", "runner-b"]
    assert m.row_cell("ParDo", "runner-a").verdict == "Partially"
    assert m.row_cell("ParDo", "runner-a").qualifier == "1 of 2 cases pass"
    assert not m.row_cell("GroupByKey", "runner-a").cases


def test_beam_website_yaml_shape(tmp_path):
    paths = []
    for doc in sample():
        p = tmp_path / f"results-{doc['target']}.json"
        p.write_text(json.dumps(doc))
        paths.append(str(p))
    write_reports(paths, str(tmp_path))
    data = yaml.safe_load((tmp_path / "capability-matrix.yaml").read_text())["capability-matrix"]
    assert [c["class"] for c in data["columns"]] == ["runner-a", "runner-b"]
    anchors = [c["anchor"] for c in data["categories"]]
    assert anchors[:2] == ["what", "where"]
    for category in data["categories"]:
        assert {"description", "anchor", "rows"} <= set(category)
        for row in category["rows"]:
            # one value per column, in column order, each a verdict with a qualifier and a note
            assert [v["class"] for v in row["values"]] == ["runner-a", "runner-b"]
            for v in row["values"]:
                assert v["l1"] in ("Yes", "Partially", "No", "")
                assert isinstance(v["l2"], str) and isinstance(v["l3"], str)
    pardo = next(r for c in data["categories"] for r in c["rows"] if r["name"] == "ParDo")
    assert [v["l1"] for v in pardo["values"]] == ["Yes", "Yes"]


def test_markdown_and_json_outputs(tmp_path):
    paths = []
    for doc in sample():
        p = tmp_path / f"results-{doc['target']}.json"
        p.write_text(json.dumps(doc))
        paths.append(str(p))
    write_reports(paths, str(tmp_path))
    md = (tmp_path / "capability-matrix.md").read_text()
    assert "| capability | runner-a | runner-b |" in md
    assert "`gbk/sessions`" in md and "no state support" in md
    gaps = [c.id for c in capabilities.CAPABILITIES if c.untestable]  # (each says why no case can exist)
    assert ("## Not covered by the suite" in md) == bool(gaps) and all(f"`{c}`" in md for c in gaps)
    js = json.loads((tmp_path / "capability-matrix.json").read_text())
    assert [t["name"] for t in js["targets"]] == ["runner-a", "runner-b"]
    rows = {r["name"]: r for s in js["sections"] for r in s["rows"]}
    assert rows["Session windows"]["values"]["runner-a"]["failing"][0]["message"].startswith("check 'x'")


def test_cli_report_without_results_says_what_to_do(tmp_path, capsys):
    assert main(["report", "--results-dir", str(tmp_path), "--out", str(tmp_path)]) == 2
    assert "run the suite first" in capsys.readouterr().err


def test_cli_rejects_files_that_are_not_results(tmp_path, capsys):
    bogus = tmp_path / "results-x.json"
    bogus.write_text('{"format": "something-else"}')
    assert main(["report", str(bogus), "--out", str(tmp_path)]) == 2
    assert "not a beam-conformance results file" in capsys.readouterr().err


def test_results_name_installed_modules_without_machine_paths():
    from conformance.session.results import portable_paths

    text = 'File "/home/me/.tox/x/lib/python3.11/site-packages/apache_beam/runners/a.py", line 3'
    assert portable_paths(text) == 'File "<site-packages>/apache_beam/runners/a.py", line 3'


def test_a_deviation_only_in_a_cross_cutting_property_counts_in_that_propertys_row():
    def deviating(id_, capability, prop, judged=True):
        c = case(id_, capability, "expected-failure", f"only {prop}", known="a known pane bug")
        return {**c, "cross_cutting": prop, "judged": judged}

    doc = results_doc(
        "r",
        [
            deviating("gbk/fixed_a", "gbk.fixed", "pane metadata"),
            case("gbk/fixed_b", "gbk.fixed", "passed"),
            case("panes/own", "panes.metadata", "failed", "pane"),
            # a case whose subject is the panes (it owns the property): stays where it is
            deviating("triggers_batch/early", "triggers.batch_count", "pane metadata"),
            # could not read its metric: not judged in its own row, failing under Metrics
            deviating("pardo/lifecycle", "pardo.lifecycle", "metrics reporting", judged=False),
            case("pardo/map", "pardo.basic", "passed"),
        ],
    )
    m = matrix.build([doc])
    assert m.row_cell("Fixed windows", "r").verdict == "Yes"
    assert "1 case deviating only in another row's property" in m.row_cell("Fixed windows", "r").qualifier
    panes = m.row_cell("Pane info", "r")
    assert panes.verdict == "No" and [c["id"] for c in panes.attributed] == ["gbk/fixed_a"]
    assert m.row_cell("Count triggers", "r").verdict == "No"  # owns pane metadata
    parde = m.row_cell("ParDo", "r")
    assert parde.verdict == "Yes" and [c["id"] for c in parde.not_judged] == ["pardo/lifecycle"]
    assert m.row_cell("Metrics", "r").verdict == "No"
    # the totals still count what happened: the case did fail
    assert doc["summary"]["expected-failure"] == 3
    text = json.dumps(matrix.to_json(m))
    assert '"attributed_from": "gbk.fixed"' in text and '"not_judged": [{"id": "pardo/lifecycle"' in text


def test_a_job_server_older_than_the_sdk_is_said_in_the_matrix(tmp_path):
    doc = results_doc("flink", [case("pardo/map", "pardo.basic", "passed")])
    doc["target_info"].update(
        runner_version="Beam 2.62.0, Flink 1.19.0 (embedded local cluster)",
        version_skew="the job server is Beam 2.62.0, older than the submitting Python SDK (apache-beam 2.77.0)",
    )
    path = tmp_path / "results-flink.json"
    path.write_text(json.dumps(doc))
    written = {p.rsplit("/", 1)[-1]: p for p in write_reports([str(path)], str(tmp_path))}
    for name in ("capability-matrix.md", "capability-matrix.html"):
        with open(written[name]) as f:
            text = f.read()
        assert "Beam 2.62.0, Flink 1.19.0" in text and "older than the submitting Python SDK" in text, name


def test_job_server_targets_name_their_version_skew():
    from conformance.peers.java_job_servers import FlinkTarget
    from conformance.peers.prism import PrismTarget
    from conformance.targets import TargetSettings

    assert "Beam 2.62.0, older than" in FlinkTarget("flink", TargetSettings()).version_skew()
    assert PrismTarget("prism", TargetSettings()).version_skew() == ""  # go install'ed at the SDK's version


def test_a_streaming_case_refused_for_its_test_stream_is_not_judged_in_its_own_row():
    refused = {
        **case("gbk/sessions_in_a_stream", "gbk.sessions", "expected-failure", "NotImplementedError: teststream"),
        "cross_cutting": "TestStream",
        "judged": False,
    }
    doc = results_doc("r", [refused, case("gbk/sessions_batch", "gbk.sessions", "passed")])
    m = matrix.build([doc])
    sessions = m.row_cell("Session windows", "r")
    assert sessions.verdict == "Yes" and [c["id"] for c in sessions.not_judged] == ["gbk/sessions_in_a_stream"]
    assert sessions.qualifier == "the only case passes; 1 case not judged (TestStream)"
    assert m.row_cell("TestStream", "r").verdict == "No"


def test_a_case_whose_python_only_test_stream_the_runner_cannot_decode_names_that_where_not_judged(tmp_path):
    from conformance.capabilities import TEST_STREAM_PYTHON_ONLY

    def undecoded(id_, capability):
        message = "the runner could not decode the case's TestStream events (Python-only coder ...)"
        return {**case(id_, capability, "failed", message), "cross_cutting": TEST_STREAM_PYTHON_ONLY, "judged": False}

    doc = results_doc(
        "r",
        [
            undecoded("gbk/sessions_of_pickled_values", "gbk.sessions"),
            case("gbk/sessions_batch", "gbk.sessions", "passed"),
            # its subject is that very decoding: it fails in its own row
            undecoded("user_types/user_types_from_a_test_stream", "coders.opaque_user_types.streaming"),
        ],
    )
    m = matrix.build([doc])
    sessions = m.row_cell("Session windows", "r")
    assert sessions.verdict == "Yes"
    assert sessions.qualifier == f"the only case passes; 1 case not judged ({TEST_STREAM_PYTHON_ONLY})"
    stream_row = m.row_cell("TestStream", "r")
    assert stream_row.verdict == "No" and [c["id"] for c in stream_row.attributed] == ["gbk/sessions_of_pickled_values"]
    assert m.row_cell("Submitted pipelines", "r").verdict == "No"
    path = tmp_path / "results-r.json"
    path.write_text(json.dumps(doc))
    written = {p.rsplit("/", 1)[-1]: p for p in write_reports([str(path)], str(tmp_path))}
    for name in ("capability-matrix.md", "capability-matrix.html"):
        with open(written[name]) as f:
            assert f"1 case not judged ({TEST_STREAM_PYTHON_ONLY})" in f.read(), name


def test_results_name_the_kits_modules_and_cached_builds_without_machine_paths(monkeypatch, tmp_path):
    import reference_runner.worker.embedded as embedded
    from conformance.session.results import portable_paths

    monkeypatch.setenv("BEAM_CONFORMANCE_CACHE", str(tmp_path))
    text = f'File "{embedded.__file__}", line 139; at main ({tmp_path}/sdk-pipelines/ts-1/pipelines.js:154:3)'
    expected = (
        'File "reference_runner/worker/embedded.py", line 139; at main (<cache>/sdk-pipelines/ts-1/pipelines.js:154:3)'
    )
    assert portable_paths(text) == expected


def test_results_name_temporary_files_and_this_interpreter_without_machine_paths(tmp_path):
    import sys
    import tempfile

    from conformance.session.results import portable_info

    written = f"{tempfile.gettempdir()}/conformance-user-types-x1/user_types.py"
    info = {"name": "t", "job_server_cmd": f"{sys.executable} -m server --port {{port}}", "cpus": 2}
    assert portable_info({**info, "error": f'File "{written}", line 3'}) == {
        "name": "t",
        "job_server_cmd": "python -m server --port {port}",
        "cpus": 2,
        "error": 'File "<tmp>/conformance-user-types-x1/user_types.py", line 3',
    }


def test_results_name_files_under_the_home_directory_from_tilde(monkeypatch, tmp_path):
    from conformance.session.results import portable_paths

    monkeypatch.setenv("HOME", "/home/someone")  # outside the temporary directory, as a home is
    monkeypatch.setenv("BEAM_CONFORMANCE_CACHE", str(tmp_path / "cache"))
    trace = "\t/home/someone/go/pkg/mod/github.com/apache/beam/sdks/v2@v2.77.0/go/worker.go:12"
    assert portable_paths(trace) == "\t~/go/pkg/mod/github.com/apache/beam/sdks/v2@v2.77.0/go/worker.go:12"


def test_java_vr_runs_are_a_section_of_their_own(tmp_path):
    from conformance.tools.cli import write_reports

    docs = [*sample(), java_vr_doc("runner-a")]
    paths = []
    for doc in docs:
        from conformance.session import results

        p = tmp_path / results.results_file_name(doc["target"], results.suite_of(doc))
        p.write_text(json.dumps(doc))
        paths.append(str(p))
    assert sorted(os.path.basename(p) for p in paths)[-1] == "results-runner-b.json"
    write_reports(paths, str(tmp_path))
    data = json.loads((tmp_path / "capability-matrix.json").read_text())
    # the Java run is no column of the matrix, and does not replace runner-a's cases
    assert [t["name"] for t in data["targets"]] == ["runner-a", "runner-b"]
    assert data["targets"][0]["summary"] == sample()[0]["summary"]
    (java,) = data["java_vr"]
    assert java["name"] == "runner-a" and java["summary"]["failed"] == 1
    assert java["rows"]["Timers"]["failing"][0]["id"].endswith("testEventTimeTimerBounded")
    assert java["rows"]["TestStream"]["skipped"] == 1 and java["rows"]["TestStream"]["ran"] == 0
    md = (tmp_path / "capability-matrix.md").read_text()
    section = md[md.index("## Beam's Java ValidatesRunner suite") :]
    assert "| runner-a | 2.65.0 | portable | 2 | 1 | 1 | 0 | 0 | 1 | 42 s |" in section
    assert "`org.apache.beam.sdk.transforms.ParDoTest$TimerTests.testEventTimeTimerBounded` | failed" in section
    # the first line, with the next where the first only introduces it
    assert "ParDo/ParMultiDo(Anonymous).output: Expected: <3> |" in section and "but: was" not in section
    page = (tmp_path / "capability-matrix.html").read_text()
    assert 'id="java-vr-heading"' in page and "Failing Java tests on runner-a (2)" in page


def test_a_partial_cell_is_shaded_by_the_fifth_of_its_cases_that_pass(tmp_path):
    from conformance.tools.report import html

    def cell(passing, ran):
        return matrix.Cell([{"outcome": "passed"}] * passing + [{"outcome": "failed"}] * (ran - passing))

    # the two cells: 31 of 32 and 1 of 15 get the ends of the scale
    steps = {(p, r): html.rate_step(cell(p, r)) for p, r in ((1, 15), (1, 5), (2, 5), (79, 100), (4, 5), (31, 32))}
    assert steps == {(1, 15): 0, (1, 5): 1, (2, 5): 2, (79, 100): 3, (4, 5): 4, (31, 32): 4}
    doc = results_doc(
        "r",
        [case(f"pardo/{i}", "pardo.basic", "passed" if i else "failed") for i in range(32)]
        + [case(f"gbk/{i}", "gbk.global", "failed" if i else "passed") for i in range(15)],
    )
    page = html.render(matrix.build([doc]))
    assert 'class="v-partially rate-4" data-target="t0"' in page and 'data-passed="31" data-ran="32"' in page
    assert 'class="v-partially rate-0" data-target="t0"' in page and 'data-passed="1" data-ran="15"' in page


def test_the_kits_own_runners_are_told_apart_by_their_target_description():
    from conformance.tools.report.own_runners import is_own

    assert is_own({"spec": "reference:bundle_size=1"}) and is_own({"spec": "spark"})
    ours = "python -m reference_runner.jobserver --port {port} --backend spark"
    assert is_own({"spec": "grpc", "job_server_cmd": ours})
    assert is_own({"spec": "grpc", "job_server_cmd": "/venv/bin/reference-runner --port {port}"})
    assert not is_own(
        {"spec": "grpc", "job_server_cmd": "python -m apache_beam.runners.portability.local_job_service_main"}
    )
    assert not is_own({"spec": "flink"}) and not is_own({"spec": "referenced"}) and not is_own({})


def test_the_page_notes_the_kits_own_columns_and_tables_the_targets():
    from conformance.tools.report import html

    docs = [results_doc(name, [case("pardo/map", "pardo.basic", "passed")]) for name in ("reference", "spark", "flink")]
    for doc in docs:
        doc["target_info"]["spec"] = doc["target"]
    page = html.render(matrix.build(docs))
    note = page[page.index('<p class="own-note"') : page.index("</p>", page.index('<p class="own-note"'))]
    assert "<strong>reference and spark</strong> are the kit's own runners" in note
    assert "not evidence" in note and "The other columns are runners the kit did not write." in note
    table = page[page.index('<table class="targets"') : page.index("</table>", page.index('<table class="targets"'))]
    assert table.count('<th scope="rowgroup"') == 3
    # without a runner of the kit's there is no note
    assert 'class="own-note"' not in html.render(matrix.build(docs[2:]))


def generated_doc(target):
    """A run of generated pipelines: passes, two deviations of one signature (one known), one of another."""
    pipelines = [
        case("generated/pipeline[s1-00000]", "gbk.fixed", "passed"),
        {
            **case("generated/pipeline[s1-00001]", "triggers.count", "failed", "model deviation [pane timing] ..."),
            "signature": "pane timing @ GroupByKey+TestStream+WindowInto",
            "counts_against": "triggers.count",
        },
        {
            **case("generated/pipeline[s1-00002]", "lateness.allowed", "failed", "model deviation [pane timing] ..."),
            "signature": "pane timing @ GroupByKey+TestStream+WindowInto",
            "counts_against": "triggers.count",
        },
        {
            **case("generated/pipeline[s1-00003]", "state.bag", "expected-failure", known="known: state leaks"),
            "signature": "contents @ Create+StatefulDoFn",
            "counts_against": "state.bag",
        },
        case("generated/pipeline[s1-00004]", "gbk.fixed", "skipped", "not run: the run's time budget"),
    ]
    doc = results_doc(target, pipelines)
    doc["suite"] = "generated"
    doc["selection"] = {"generated": {"seed": 1, "examples": 5, "capabilities": [], "minutes": 2.0}}
    return doc


def test_generated_runs_are_a_section_of_their_own(tmp_path):
    # a target's generated run beside its cases' run: the column stays the cases', the section lists signatures
    built = matrix.build([results_doc("mine", [case("gbk/a", "gbk.fixed", "passed")]), generated_doc("mine")])
    assert [c.name for c in built.columns] == ["mine"]
    assert built.row_cell("Fixed windows", "mine").verdict == "Yes"
    [run] = built.generated
    assert run.ran == 4 and run.drawn_text == "seed 1, 5 drawn, within 2 min"
    assert [(d.signature, d.pipelines, d.row, d.known) for d in run.deviations] == [
        ("pane timing @ GroupByKey+TestStream+WindowInto", 2, "Count triggers", None),
        ("contents @ Create+StatefulDoFn", 1, "Stateful Processing", "known: state leaks"),
    ]
    results_dir = tmp_path / "r"
    results_dir.mkdir()
    cases_run = results_doc("mine", [case("gbk/a", "gbk.fixed", "passed")])
    (results_dir / "results-mine.json").write_text(json.dumps(cases_run))
    (results_dir / "results-mine.generated.json").write_text(json.dumps(generated_doc("mine")))
    assert main(["report", "--results-dir", str(results_dir), "--out", str(tmp_path)]) == 0
    md = (tmp_path / "capability-matrix.md").read_text()
    assert "## Generated pipelines" in md and "### Deviations on mine" in md
    assert "| `pane timing @ GroupByKey+TestStream+WindowInto` | 2 | Count triggers (`triggers.count`) |" in md
    html = (tmp_path / "capability-matrix.html").read_text()
    assert 'id="generated-heading"' in html and "pane timing @ GroupByKey+TestStream+WindowInto" in html
    as_json = json.loads((tmp_path / "capability-matrix.json").read_text())
    assert as_json["generated"][0]["pipelines_run"] == 4
    assert as_json["generated"][0]["deviations"][0]["row"] == "Count triggers"
