"""Expectations files as a session meets them: entries that name no case refused at load, and a
file chosen by the target's name that was written for another runner release."""

import textwrap

import pytest

CASES = textwrap.dedent("""
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


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "xdist"])
def test_a_case_entry_that_matches_no_case_fails_the_load_naming_it(suite, workers):
    # it used to be a yellow line after the run (and only after a run of fifty cases or more);
    # under pytest-xdist the workers collect, and the refusal must still reach the user as text
    (suite.path / "exp.yaml").write_text(
        "known_failures:\n"
        "  - case: cases/wrong_expectation_fails\n    reason: deliberately wrong\n"
        "  - case: cases/wrong_expectation_fail\n    reason: misspelled\n"
        "  - case: 'cases/map_*_twice'\n    reason: a glob that matches nothing\n"
    )
    # -k selects one case: the entries are checked against every case the suite defines
    result = run(suite, "--target", "beam-fnapi", "--expectations", "exp.yaml", "-k", "map_passes", *workers)
    assert result.ret == 4, result.stdout.str()[-2000:]
    output = pytest.LineMatcher((result.stdout.str() + result.stderr.str()).splitlines())
    output.fnmatch_lines(
        [
            "*2 expectations entries match no case the suite defines*",
            "*exp.yaml: known_failures entry 2 (case 'cases/wrong_expectation_fail')",
            "*exp.yaml: known_failures entry 3 (case 'cases/map_*_twice')",
        ]
    )
    assert "passed" not in result.stdout.str()
    assert not (suite.path / "out").exists()  # refused before any case ran


def test_entries_of_case_modules_not_collected_are_left_alone(suite):
    # the packaged suite's modules were not collected: this run cannot tell whether gbk/x exists;
    # an entry of a module no one has is refused all the same
    (suite.path / "exp.yaml").write_text(
        "known_failures:\n"
        "  - case: gbk/no_such_case_yet\n    reason: not this run's to judge\n"
        "  - case: cases/wrong_expectation_fails\n    reason: deliberately wrong\n"
    )
    result = run(suite, "--target", "beam-fnapi", "--expectations", "exp.yaml")
    assert result.ret == 0, result.stdout.str()[-2000:]
    (suite.path / "exp.yaml").write_text("known_failures:\n  - case: gbkk/typo\n    reason: a module no one has\n")
    result = run(suite, "--target", "beam-fnapi", "--expectations", "exp.yaml")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*exp.yaml: known_failures entry 1 (case 'gbkk/typo')"])


def test_a_file_chosen_by_name_warns_when_written_for_another_runner_version(suite):
    # the Docker recipe of docs/testing-your-runner.md used to name a 2.77 job server `flink`,
    # which silently applied flink.yaml, written for Beam 2.62.0's job server
    import yaml

    from conformance.session.plugin import EXPECTATIONS_DIR

    with open(f"{EXPECTATIONS_DIR}/flink.yaml") as f:
        written_for = yaml.safe_load(f)["runner_version"]
    result = run(suite, "--target", "grpc://127.0.0.1:9", "--target-name", "flink", "--collect-only")
    out = result.stdout.str()
    assert "WARNING: expectations" in out and "flink.yaml, chosen by the target name" in out, out[-2000:]
    assert f"were written for runner version {written_for!r}; the runner reports no version" in out
    # named with --expectations, the file is chosen deliberately: no warning
    result = run(
        suite, "--target", "grpc://127.0.0.1:9", "--expectations", f"{EXPECTATIONS_DIR}/flink.yaml", "--collect-only"
    )
    assert "WARNING: expectations" not in result.stdout.str()


def test_the_warning_names_both_versions_and_is_quiet_when_they_agree():
    from conformance.session.expectations import NAMED_BY_OPTION, Expectations

    by_name = Expectations(
        [], "flink.yaml", runner_version="Beam 2.62.0, Flink 1.19.0", how="chosen by the target's name"
    )
    warning = by_name.version_warning("Beam 2.77.0, Flink 1.19.3")
    assert "'Beam 2.62.0, Flink 1.19.0'" in warning and "the runner reports 'Beam 2.77.0, Flink 1.19.3'" in warning
    assert by_name.version_warning("Beam 2.62.0, Flink 1.19.0") is None
    named = Expectations([], "flink.yaml", runner_version="Beam 2.62.0, Flink 1.19.0", how=NAMED_BY_OPTION)
    assert named.version_warning("Beam 2.77.0") is None


def test_every_committed_file_written_for_a_versioned_target_says_which_version():
    # the targets that report their runner's version: their files say the one they were written for
    from conformance.session import targets
    from conformance.session.expectations import Expectations
    from conformance.session.plugin import EXPECTATIONS_DIR

    for name in ("flink", "beam-spark-job-server", "prism"):
        target = targets.create(name, targets.TargetSettings())
        loaded = Expectations.load(f"{EXPECTATIONS_DIR}/{name}.yaml", how="shipped with the kit")
        assert loaded.runner_version, name
        assert loaded.version_warning(target.describe().get("runner_version")) is None, name


def test_no_guide_names_a_job_server_run_after_a_file_written_for_a_pinned_release():
    # docs/testing-your-runner.md told Docker users to run a 2.77 Flink job server as `--target-name
    # flink`, which applied flink.yaml, written for the 2.62 job server the `flink` target pins
    import re
    from pathlib import Path

    from conformance.session.expectations import Expectations
    from conformance.session.plugin import EXPECTATIONS_DIR

    root = Path(__file__).resolve().parents[1]
    named = re.compile(r"--target[ =]grpc\S*\s+(?:\\\s+)?--target-name[ =](\S+)")
    wrong = []
    for guide in [root / "README.md", *sorted((root / "docs").rglob("*.md"))]:
        for name in named.findall(guide.read_text()):
            path = Path(EXPECTATIONS_DIR) / f"{name}.yaml"
            if path.exists() and Expectations.load(str(path)).runner_version is not None:
                wrong.append(f"{guide.relative_to(root)}: --target-name {name}")
    assert not wrong, wrong
