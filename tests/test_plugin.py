"""The pytest plugin, exercised the way a user runs it: pytest in a subprocess on real pipelines."""

import json
import textwrap

import pytest

CASES = textwrap.dedent("""
    import time
    import apache_beam as beam
    from conformance.api import capability, check

    @capability("pardo.basic")
    def test_map_passes(runner):
        p = runner.pipeline()
        check(p | beam.Create([1, 2]) | beam.Map(lambda x: x * 10), [10, 20])
        runner.run(p)

    @capability("gbk.global")
    def test_wrong_expectation_fails(runner):
        p = runner.pipeline()
        check(p | beam.Create([("k", 1)]) | beam.GroupByKey() | beam.MapTuple(lambda k, vs: (k, sorted(vs))),
              [("k", [1, 2])])
        runner.run(p)
""")


@pytest.fixture
def suite(pytester):
    pytester.makepyfile(test_cases=CASES)
    return pytester


def run(pytester, *args):
    return pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--show-capture=no", "--results-dir", str(pytester.path / "out"), *args
    )


def load_results(pytester, target="beam-fnapi"):
    return json.loads((pytester.path / "out" / f"results-{target}.json").read_text())


def test_results_record_outcome_capability_and_diff(suite):
    result = run(suite, "--target", "beam-fnapi")
    assert result.ret == 1
    out = result.stdout.str()
    diff = out[out.index("missing (expected, not produced) (1):") :]
    assert "expected 1 element(s), runner produced 1; 1 missing, 1 unexpected" in out
    assert (
        diff.index("('k', [1, 2])")
        < diff.index("unexpected (produced, not expected) (1):")
        < diff.index("('k', [1]) @ END_OF_GLOBAL_WINDOW in GLOBAL")
    )
    doc = load_results(suite)
    by_id = {c["id"]: c for c in doc["cases"]}
    assert by_id["cases/map_passes"]["outcome"] == "passed"
    assert by_id["cases/map_passes"]["capability"] == "pardo.basic"
    assert by_id["cases/map_passes"]["beam_category"] == "ValidatesRunner"
    failed = by_id["cases/wrong_expectation_fails"]
    assert failed["outcome"] == "failed"
    assert "('k', [1, 2])" in failed["message"] and "('k', [1])" in failed["message"]
    assert doc["summary"]["passed"] == 1 and doc["summary"]["failed"] == 1
    assert doc["target_info"]["apache_beam"]


def test_known_failure_is_expected_and_the_run_passes(suite):
    (suite.path / "exp.yaml").write_text(
        "known_failures:\n  - case: cases/wrong_expectation_fails\n    reason: deliberately wrong\n"
    )
    result = run(suite, "--target", "beam-fnapi", "--expectations", "exp.yaml")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*1 passed, 1 xfailed*"])
    cases = {c["id"]: c for c in load_results(suite)["cases"]}
    assert cases["cases/wrong_expectation_fails"]["outcome"] == "expected-failure"
    assert cases["cases/wrong_expectation_fails"]["known_failure"] == "deliberately wrong"


def test_a_known_failure_that_lies_in_a_property_counts_there_and_leaves_its_row_not_judged(suite):
    (suite.path / "exp.yaml").write_text(
        "known_failures:\n  - case: cases/wrong_expectation_fails\n    reason: the stream's order\n"
        "    lies_in: TestStream event order\n"
    )
    result = run(suite, "--target", "beam-fnapi", "--expectations", "exp.yaml")
    assert result.ret == 0
    failed = {c["id"]: c for c in load_results(suite)["cases"]}["cases/wrong_expectation_fails"]
    assert failed["outcome"] == "expected-failure"
    assert (failed["cross_cutting"], failed["judged"]) == ("TestStream event order", False)
    # without the entry the same failure is the case's own: nothing is attributed elsewhere
    result = run(suite, "--target", "beam-fnapi", "-k", "wrong_expectation")
    assert "cross_cutting" not in load_results(suite)["cases"][0]


def test_unexpected_pass_fails_the_run(suite):
    (suite.path / "exp.yaml").write_text("known_failures:\n  - capability: pardo\n    reason: thought broken\n")
    result = run(suite, "--target", "beam-fnapi", "--expectations", "exp.yaml", "-k", "map_passes")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*UNEXPECTED PASS*cases/map_passes*thought broken*"])
    assert load_results(suite)["cases"][0]["outcome"] == "unexpected-pass"


def test_flaky_entries_accept_both_outcomes(suite):
    (suite.path / "exp.yaml").write_text(
        "known_failures:\n  - case: 'cases/*'\n    reason: fails in some runs\n    flaky: true\n"
    )
    result = run(suite, "--target", "beam-fnapi", "--expectations", "exp.yaml")
    assert result.ret == 0
    cases = {c["id"]: c for c in load_results(suite)["cases"]}
    assert cases["cases/map_passes"]["outcome"] == "passed"
    assert "fails in some runs" in cases["cases/map_passes"]["message"]
    assert cases["cases/wrong_expectation_fails"]["outcome"] == "expected-failure"


def test_skip_entries_are_not_run_and_carry_their_reason(suite):
    (suite.path / "exp.yaml").write_text(
        "known_failures:\n  - case: 'cases/wrong_*'\n    reason: hangs this runner\n    skip: true\n"
    )
    result = run(suite, "--target", "beam-fnapi", "--expectations", "exp.yaml")
    assert result.ret == 0
    cases = {c["id"]: c for c in load_results(suite)["cases"]}
    assert cases["cases/wrong_expectation_fails"]["outcome"] == "skipped"
    assert "hangs this runner" in cases["cases/wrong_expectation_fails"]["message"]


def test_capability_groups_are_markers(suite):
    result = run(suite, "--target", "beam-fnapi", "-m", "pardo and not streaming")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*1 passed, 1 deselected*"])


def test_per_capability_keeps_the_first_cases_of_each_capability(pytester):
    pytester.makepyfile(
        test_cases=CASES
        + textwrap.dedent("""
            @capability("pardo.basic")
            def test_second_map(runner):
                p = runner.pipeline()
                check(p | beam.Create([3]), [3])
                runner.run(p)
        """)
    )
    result = run(pytester, "--target", "beam-fnapi", "--per-capability", "1", "-k", "map or wrong")
    assert result.ret == 1  # the one gbk.global case ran, and fails
    doc = load_results(pytester)
    ran = sorted(c["id"] for c in doc["cases"])
    assert ran == ["cases/map_passes", "cases/wrong_expectation_fails"]
    # a narrowed run: the case left out is counted, so its baseline collapses nothing
    assert doc["selection"]["deselected"] == 1
    assert run(pytester, "--target", "beam-fnapi", "--per-capability", "0").ret == 4


def test_runs_in_parallel_with_xdist(suite):
    result = run(suite, "--target", "beam-fnapi", "-n", "2")
    assert result.ret == 1
    assert load_results(suite)["summary"] == {
        "passed": 1,
        "failed": 1,
        "expected-failure": 0,
        "unexpected-pass": 0,
        "skipped": 0,
        "error": 0,
    }


# pytest fails to show these tracebacks: the first time only, or every time
AST_RACE = textwrap.dedent("""
    import pytest

    FAILURES = {"first": 1, "every": 10**6}["%s"]

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(items):
        for item in items:
            def racing(*args, __left=[FAILURES], __real=item.repr_failure, **kwargs):
                if __left[0] > 0:
                    __left[0] -= 1
                    raise SystemError("AST constructor recursion depth mismatch (before=147, after=61)")
                return __real(*args, **kwargs)
            item.repr_failure = racing
""")


@pytest.mark.parametrize("failures", ["first", "every"])
def test_a_failure_whose_traceback_hits_the_ast_race_is_still_reported(suite, failures):
    """CPython 3.11's ast.parse is not thread-safe (python/cpython#106905): pytest parsing source for
    a traceback while a runner's thread formats one could end the session with an INTERNALERROR."""
    suite.makeconftest(AST_RACE % failures)
    result = run(suite, "--target", "beam-fnapi")
    assert result.ret == 1
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(["*1 failed, 1 passed*"])
    cases = {c["id"]: c for c in load_results(suite)["cases"]}
    assert cases["cases/wrong_expectation_fails"]["outcome"] == "failed"
    assert "('k', [1, 2])" in cases["cases/wrong_expectation_fails"]["message"]
    if failures == "every":
        result.stdout.fnmatch_lines(["*traceback not shown: AST constructor recursion depth mismatch*"])


def test_a_hanging_case_times_out(pytester):
    pytester.makepyfile(
        test_hang="""
        import time
        import apache_beam as beam
        from conformance.api import capability, check

        @capability("pardo.basic")
        def test_hangs(runner):
            p = runner.pipeline()
            check(p | beam.Create([1]) | beam.Map(lambda x: time.sleep(120) or x), [1])
            runner.run(p)
    """
    )
    result = run(pytester, "--target", "beam-fnapi", "--case-timeout", "5")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*Timeout*"])
    assert load_results(pytester)["cases"][0]["outcome"] == "failed"


def test_malformed_cases_are_reported_at_collection(pytester):
    pytester.makepyfile(
        test_bad="""
        from conformance.api import capability

        @capability("no.such.capability")
        def test_x(runner):
            pass
    """
    )
    result = run(pytester, "--target", "beam-fnapi")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*unknown capability 'no.such.capability'*"])


def test_unknown_target_lists_the_known_ones(suite):
    result = run(suite, "--target", "flink-of-my-dreams")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*unknown target 'flink-of-my-dreams'*", "*beam-direct*"])


def test_bad_expectations_file_is_a_usage_error(suite):
    (suite.path / "exp.yaml").write_text("known_failures:\n  - case: a/b\n")
    result = run(suite, "--target", "beam-fnapi", "--expectations", "exp.yaml")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*needs a 'reason'*"])


def test_help_documents_every_option(pytester):
    result = pytester.runpytest_subprocess("--help")
    for option in (
        "--target",
        "--target-name",
        "--expectations",
        "--environment-type",
        "--environment-config",
        "--job-server-cmd",
        "--job-server-timeout",
        "--case-timeout",
        "--results-dir",
        "--no-results",
        "--trust-unconfirmed-checks",
        "--per-capability",
        "--property-examples",
        "--capture-pipelines",
    ):
        result.stdout.fnmatch_lines([f"*{option}*"])


def test_the_packaged_suite_collects_cases_only():
    # `pytest --pyargs conformance` is the main command: it runs the suite, never the kit's own tests
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--pyargs", "conformance", "--target", "reference", "--collect-only", "-q"]
        + ["-p", "no:cacheprovider"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    ids = [line for line in done.stdout.splitlines() if "::" in line]
    assert len(ids) > 400, done.stdout[-2000:]
    assert [i for i in ids if not i.startswith("conformance/cases/")] == []


@pytest.mark.parametrize("endpoint", ["localhost:notaport", "localhost", "localhost:70000", ":8099", "host name:1"])
def test_a_malformed_endpoint_is_refused_at_once_naming_it(suite, endpoint):
    # it used to be waited on for the whole --job-server-timeout, then reported as "no server answered"
    result = run(suite, "--target", f"grpc://{endpoint}", "--job-server-timeout", "20")
    assert result.ret != 0
    output = result.stdout.str() + result.stderr.str()
    assert f"grpc://{endpoint} is not a Job API endpoint: give grpc://HOST:PORT" in output, output[-2000:]


def test_well_formed_endpoints_are_taken_as_they_are():
    from conformance.session.targets.grpc_endpoint import checked_endpoint

    for endpoint in ("localhost:8099", "127.0.0.1:1", "[::1]:65535", "job-server.example.com:443"):
        assert checked_endpoint(endpoint) == endpoint


def test_target_list_prints_the_targets_on_stdout_and_succeeds(pytester):
    # it used to end the run as a usage error: "ERROR: registered targets:" on stderr, exit code 4
    result = run(pytester, "--target", "list")
    assert result.ret == 0, result.stderr.str()[-2000:]
    result.stdout.fnmatch_lines(["registered targets:", "*beam-fnapi*", "*reference*our reference runner*"])
    assert "ERROR" not in result.stderr.str()


def test_the_summary_names_the_target_by_its_name(suite):
    # it said "target beam-fnapi" although the results file and the matrix column are "my-runner"
    result = run(suite, "--target", "beam-fnapi", "--target-name", "my-runner")
    result.stdout.fnmatch_lines(["target my-runner (beam-fnapi): 1 passed, 1 failed"])
    assert load_results(suite, "my-runner")["target"] == "my-runner"


UNNAMED = textwrap.dedent("""
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner
    from conformance.targets import Target, register

    class Unnamed(Target):
        \"\"\"a runner whose author forgot its name\"\"\"

        def beam_runner(self):
            return FnApiRunner()

    register("unnamed", Unnamed)
""")


def test_a_target_class_that_does_not_name_itself_is_refused(suite):
    # it used to run, and write results-target.json
    suite.makeconftest(UNNAMED)
    result = run(suite, "--target", "unnamed")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*target class conftest.Unnamed does not name itself: give it a class attribute*"])
    assert not (suite.path / "out").exists()


def test_a_target_factory_that_creates_an_unnamed_target_is_refused():
    from conformance.session import targets

    class Unnamed(targets.Target):
        pass

    targets.register("made-unnamed", lambda spec, settings: Unnamed(spec, settings))
    with pytest.raises(targets.TargetUnavailable, match="Unnamed does not name itself"):
        targets.create("made-unnamed", targets.TargetSettings())
    with pytest.raises(ValueError, match="Unnamed does not name itself"):
        targets.register("unnamed-class", Unnamed)


COUNTED = textwrap.dedent("""
    from conformance.session.targets.beam_peers import BeamFnApiTarget
    from conformance.targets import register

    class Counted(BeamFnApiTarget):
        \"\"\"Beam's FnApiRunner, counting the Target objects a session makes\"\"\"

        name = "counted"

        def __init__(self, spec, settings):
            super().__init__(spec, settings)
            with open("targets-made.txt", "a") as f:
                f.write(spec + "\\n")

    register("counted", Counted)
""")


def test_a_session_makes_one_target(suite):
    # the plugin made one for each question it had (property examples, batch size, its name for the
    # expectations, fetching, the cases, the results) and again for the results: five or more
    suite.makeconftest(COUNTED)
    result = run(suite, "--target", "counted", "--target-name", "my-runner")
    assert (suite.path / "targets-made.txt").read_text().splitlines() == ["counted"]
    result.stdout.fnmatch_lines(["target my-runner (counted): 1 passed, 1 failed"])
    assert load_results(suite, "my-runner")["target_info"]["name"] == "my-runner"


def test_the_junit_xml_is_named_by_the_targets_own_name_like_its_results(tmp_path):
    """The CLI guessed the JUnit file's name from the target spec (reference:seed=7 ->
    junit-reference-seed-7.xml beside results-reference.json); the session's one name decides."""
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    done = subprocess.run(
        [sys.executable, "-m", "conformance.tools.cli", "run", "--workers", "0", "--target", "reference:seed=7"]
        + ["--results-dir", str(tmp_path), "--out", str(tmp_path), "--"]
        + ["-k", "map_applies_function_to_every_element"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    written = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(("junit-", "results-")))
    assert written == ["junit-reference.xml", "results-reference.json"], written


def test_cases_of_sdks_not_asked_for_do_not_narrow_a_run_and_k_does(pytester):
    pytester.makepyfile(
        test_mixed="""
        import apache_beam as beam
        import pytest
        from conformance.api import *

        @capability("pardo.basic")
        def test_map(runner):
            p = runner.pipeline()
            check(p | beam.Create([1]), [1])
            runner.run(p)

        @capability("pardo.basic")
        def test_other(runner):
            p = runner.pipeline()
            check(p | beam.Create([2]), [2])
            runner.run(p)

        @pytest.mark.sdk("java")
        @capability("pardo.basic")
        def test_of_java(runner):
            pass
        """
    )
    whole = run(pytester, "--target", "reference")
    assert whole.ret == 0, whole.stdout.str()[-2000:]
    selection = load_results(pytester, "reference")["selection"]
    # the Java case is not part of a run without --sdks java: nothing narrowed it
    assert selection["deselected"] == 0 and selection["narrowed_by"] == [], selection
    narrowed = run(pytester, "--target", "reference", "-k", "test_map")
    assert narrowed.ret == 0
    selection = load_results(pytester, "reference")["selection"]
    assert selection["deselected"] == 1 and selection["narrowed_by"] == ["-k 'test_map'"], selection
