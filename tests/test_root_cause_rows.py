"""One root cause fails one row: a runner that groups and windows right but marks every final
pane as not last shows Yes in every windowing row and No in the pane row.

The runner is ours with one deliberate bug: every GroupByKey's output passes through a DoFn that
re-emits each element of a last pane with ``is_last`` false (and combiners are not lifted, so
Combine groups through that GroupByKey too). It comes in as a runner author's target would, from a
conftest.py through the public ``register()`` call.
"""

import json
import textwrap

from conformance.tools.cli import write_reports
from conformance.tools.report.matrix import build

CONFTEST = textwrap.dedent('''
    import apache_beam as beam
    from apache_beam.pipeline import PTransformOverride
    from apache_beam.utils.windowed_value import PaneInfo, WindowedValue

    from conformance import targets
    from conformance.session.targets.reference import ReferenceTarget
    from reference_runner import ReferenceRunner


    class _NotLast(beam.DoFn):
        def process(self, element, ts=beam.DoFn.TimestampParam, w=beam.DoFn.WindowParam, pane=beam.DoFn.PaneInfoParam):
            if pane.is_last:
                pane = PaneInfo(pane.is_first, False, pane.timing, pane.index, pane.nonspeculative_index)
            yield WindowedValue(element, ts, [w], pane)


    class _Grouped(beam.GroupByKey):
        """The real GroupByKey inside the replacement (not matched again)."""


    class _GroupThenMislabel(beam.PTransform):
        def expand(self, pcoll):
            return pcoll | _Grouped() | beam.ParDo(_NotLast())


    class _Override(PTransformOverride):
        def matches(self, applied):
            return type(applied.transform) is beam.GroupByKey

        def get_replacement_transform_for_applied_ptransform(self, applied):
            return _GroupThenMislabel()


    class _MislabellingRunner(ReferenceRunner):
        def run_pipeline(self, pipeline, options):
            pipeline.replace_all([_Override()])
            return super().run_pipeline(pipeline, options)


    class MislabelsFinalPane(ReferenceTarget):
        """our reference runner with one bug: every final pane is marked not last"""

        name = "mislabels-final-pane"

        def beam_runner(self):
            return _MislabellingRunner(lift=False)


    targets.register("mislabels-final-pane", MislabelsFinalPane)
''')

# the capability groups of the windowing rows (GroupByKey, window and Combine cases), and the pane cases
SELECTION = "(gbk or window or combine or panes) and not streaming and not property"
WINDOWING_ROWS = ("Fixed windows", "Sliding windows", "Session windows", "Timestamp control")


def test_a_runner_that_mislabels_only_the_final_pane_fails_the_pane_row_alone(pytester, tmp_path):
    pytester.makeconftest(CONFTEST)
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--tb=line",
        "-q",
        "--target",
        "mislabels-final-pane",
        "--expectations",
        "none",
        "--results-dir",
        str(tmp_path),
        "-n",
        "2",
        "-m",
        SELECTION,
        "--pyargs",
        "conformance",
    )
    doc = json.loads((tmp_path / "results-mislabels-final-pane.json").read_text())
    outcomes = {c["id"]: c for c in doc["cases"]}
    assert result.ret == 1, result.stdout.str()[-2000:]  # the bug fails cases: the run is red

    matrix = build([doc])
    verdicts = {row: matrix.row_cell(row, "mislabels-final-pane").verdict for row in (*WINDOWING_ROWS, "Pane info")}
    assert verdicts == {**dict.fromkeys(WINDOWING_ROWS, "Yes"), "Pane info": "No"}, verdicts

    # every windowing case that failed did so on the pane alone, and counts under the pane row
    failed = [c for c in outcomes.values() if c["outcome"] == "failed" and c["capability"] != "panes.metadata"]
    assert failed and all(c.get("cross_cutting") == "pane metadata" and c["judged"] for c in failed), failed
    pane_cell = matrix.row_cell("Pane info", "mislabels-final-pane")
    assert {c["id"] for c in pane_cell.attributed} == {c["id"] for c in failed}
    assert "only the pane metadata differs (last)" in failed[0]["message"]

    # both placements show in the case's details
    written = write_reports([str(tmp_path / "results-mislabels-final-pane.json")], str(tmp_path / "out"))
    page = next(p for p in written if p.endswith(".html"))
    with open(page) as f:
        text = f.read()
    assert "is counted under Pane info (panes.metadata)" in text
    assert "whose only deviation is pane metadata: counted here as failing, there as passing" in text


def test_one_property_entry_covers_every_case_that_deviates_only_in_pane_metadata(pytester, tmp_path):
    # one entry says what a runner's file used to say once per case (beam-direct.yaml had 64 of them)
    pytester.makeconftest(CONFTEST)
    (pytester.path / "exp.yaml").write_text(
        "known_failures:\n"
        "  - property: panes.metadata\n"
        "    reason: every final pane is marked not last\n"
        "  - case: 'gbk/sessions_java_vector'\n"
        "    reason: its own entry wins over the property's\n"
    )
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "-q",
        "--target",
        "mislabels-final-pane",
        "--expectations",
        "exp.yaml",
        "--results-dir",
        str(tmp_path),
        "-m",
        "gbk and not streaming and not property",
        "--pyargs",
        "conformance",
    )
    assert result.ret == 0, result.stdout.str()[-3000:]
    cases = {c["id"]: c for c in json.loads((tmp_path / "results-mislabels-final-pane.json").read_text())["cases"]}
    covered = [c for c in cases.values() if c["known_failure"] == "every final pane is marked not last"]
    assert len(covered) >= 5, sorted(cases)
    assert all(c["outcome"] == "expected-failure" and c["cross_cutting"] == "pane metadata" for c in covered)
    own = cases["gbk/sessions_java_vector"]
    assert own["outcome"] == "expected-failure" and own["known_failure"] == "its own entry wins over the property's"
    # a case the property entry would cover that passes is a pass, not an unexpected pass
    assert cases["gbk/empty_input_gives_empty_output_and_downstream_pardo_runs"]["outcome"] == "passed"


# writes where pytest's report of each failed case starts: FILE:LINE, then the line it marks. A
# plugin of its own: a conftest's hooks see only the items below it, and the cases are packaged.
FIRST_FRAME = textwrap.dedent("""
    class _FirstFrames:
        def pytest_runtest_logreport(self, report):
            if report.when != "call" or not report.failed:
                return
            first = (report.longrepr.reprtraceback.reprentries or [None])[0]
            place = getattr(first, "reprfileloc", None)  # none where pytest hid every entry
            where = f"{place.path}:{place.lineno}" if place is not None else "(no frame)"
            marked = [line for line in first.lines if line.startswith(">")] if place is not None else []
            with open("first_frames.txt", "a") as f:
                f.write(f"{report.nodeid}\\t{where}\\t{marked}\\n")


    def pytest_configure(config):
        config.pluginmanager.register(_FirstFrames(), "first-frames")
""")


def test_a_case_failing_only_in_a_property_is_reported_from_its_own_line(pytester):
    # The pane deviation fails the case after its body returned (CaseRunner.finish): its traceback
    # used to start in the plugin (later: every entry hidden), not at the case's runner.run line.
    pytester.makeconftest(CONFTEST + FIRST_FRAME)
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--tb=long",
        "--target",
        "mislabels-final-pane",
        "--expectations",
        "none",
        "--no-results",
        "-k",
        "fixed_windows",
        "--pyargs",
        "conformance.cases.test_combine",
    )
    assert result.ret == 1, result.stdout.str()[-2000:]
    frames = (pytester.path / "first_frames.txt").read_text().splitlines()
    assert frames, result.stdout.str()[-2000:]
    for line in frames:
        case, where, marked = line.split("\t")
        assert "/conformance/cases/test_combine.py:" in where, line
        assert "runner.run(" in marked, line
    assert "All traceback entries are hidden" not in result.stdout.str()
