"""Batched jobs (conformance/session/batching.py) on planted one-bug runners: our reference runner
with one deliberate bug that shows only when a job holds more than one case, brought in as a
runner author's target would be (a conftest.py and the public ``register()`` call).

- ``shared-job-miscounts``: in a job of several cases it multiplies by 11 where a transform
  labelled "Scale" says 10. The case with that transform must fail, naming its batch; its
  neighbours pass.
- ``shared-job-crashes``: it refuses any job of several cases. Every case still gets its own
  verdict, and the run says that a shared job failed whose cases each pass alone.
"""

import json
import textwrap

import pytest

CONFTEST = textwrap.dedent('''
    import apache_beam as beam

    from conformance import targets
    from conformance.session.targets.reference import ReferenceTarget
    from reference_runner import ReferenceRunner


    def _cases_in(pipeline):
        return [p for p in pipeline._root_transform().parts if type(p.transform).__name__ == "_CaseScope"]


    def _all(node):
        yield node
        for part in node.parts:
            yield from _all(part)


    class _Miscounts(ReferenceRunner):
        def run_pipeline(self, pipeline, options):
            if len(_cases_in(pipeline)) > 1:
                for node in _all(pipeline._root_transform()):
                    if node.full_label.endswith("/Scale"):
                        node.transform = beam.Map(lambda x: x * 11)
            return super().run_pipeline(pipeline, options)


    class _Crashes(ReferenceRunner):
        def run_pipeline(self, pipeline, options):
            if len(_cases_in(pipeline)) > 1:
                raise RuntimeError("planted bug: this runner cannot run a pipeline of several cases")
            return super().run_pipeline(pipeline, options)


    class _Hangs(ReferenceRunner):
        def run_pipeline(self, pipeline, options):
            if len(_cases_in(pipeline)) > 1:
                import time
                time.sleep(3600)
            return super().run_pipeline(pipeline, options)


    class SharedJobHangs(ReferenceTarget):
        """our reference runner with one bug: a job of several cases never finishes"""

        name = "shared-job-hangs"
        default_batch_size = 8

        def beam_runner(self):
            return _Hangs(**self.knobs)


    class SharedJobMiscounts(ReferenceTarget):
        """our reference runner with one bug: in a job of several cases, Scale multiplies by 11"""

        name = "shared-job-miscounts"
        default_batch_size = 8

        def beam_runner(self):
            return _Miscounts(**self.knobs)


    class SharedJobCrashes(ReferenceTarget):
        """our reference runner with one bug: it refuses a job of several cases"""

        name = "shared-job-crashes"
        default_batch_size = 8

        def beam_runner(self):
            return _Crashes(**self.knobs)


    targets.register("shared-job-miscounts", SharedJobMiscounts)
    targets.register("shared-job-crashes", SharedJobCrashes)
    targets.register("shared-job-hangs", SharedJobHangs)
''')

CASES = textwrap.dedent("""
    import apache_beam as beam
    from apache_beam.metrics import Metrics
    from conformance.api import capability, check

    @capability("pardo.basic")
    def test_scaled(runner):
        p = runner.pipeline()
        check(p | beam.Create([1, 2, 3]) | "Scale" >> beam.Map(lambda x: x * 10), [10, 20, 30])
        runner.run(p)

    @capability("pardo.basic")
    def test_plus_one(runner):
        p = runner.pipeline()
        check(p | beam.Create([1, 2]) | beam.Map(lambda x: x + 1), [2, 3])
        runner.run(p)

    @capability("gbk.global")
    def test_grouped(runner):
        p = runner.pipeline()
        grouped = p | beam.Create([("k", 1), ("k", 2)]) | beam.GroupByKey()
        check(grouped | beam.MapTuple(lambda k, vs: (k, sorted(vs))), [("k", [1, 2])])
        runner.run(p)

    @capability("pardo.basic")
    def test_wrong_expectation(runner):
        p = runner.pipeline()
        check(p | beam.Create([1]) | beam.Map(lambda x: x), [2])
        runner.run(p)

    @capability("pardo.basic")
    def test_wrong_expectation_too(runner):
        p = runner.pipeline()
        check(p | beam.Create([1]) | beam.Map(lambda x: x), [3])
        runner.run(p)

    @capability("pardo.basic")
    def test_expects_failure(runner):
        def boom(x):
            raise ValueError("boom")
        p = runner.pipeline()
        p | beam.Create([1]) | beam.Map(boom)
        runner.run_expecting_failure(p, "boom")

    @capability("pardo.basic")
    def test_own_options(runner):
        p = runner.pipeline("--experiments=some_experiment")
        check(p | beam.Create([5]), [5])
        runner.run(p)

    @capability("metrics.counters")
    def test_reads_metrics(runner):
        class Count(beam.DoFn):
            def process(self, x):
                Metrics.counter("planted", "seen").inc()
                yield x
        p = runner.pipeline()
        check(p | beam.Create([1, 2, 3]) | beam.ParDo(Count()), [1, 2, 3])
        assert runner.run(p).counter("seen", "planted") == 3
""")


# what each case gives in a job of its own: the planted bugs show only in shared jobs
SOLO_OUTCOMES = {
    "scaled": "passed",
    "plus_one": "passed",
    "grouped": "passed",
    "wrong_expectation": "failed",
    "wrong_expectation_too": "failed",
    "expects_failure": "passed",
    "own_options": "passed",
    "reads_metrics": "passed",
}


def _run(pytester, tmp_path, target, *args, expectations="none"):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_cases=CASES)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--tb=short", "--target", target, "--expectations", expectations,
        "--results-dir", str(tmp_path), *args,
    )  # fmt: skip
    doc = json.loads((tmp_path / f"results-{target}.json").read_text())
    return result, {c["id"].split("/", 1)[1]: c for c in doc["cases"]}


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_a_case_that_fails_only_in_a_shared_job_fails_naming_its_batch_and_its_neighbours_pass(
    pytester, tmp_path, workers
):
    result, cases = _run(pytester, tmp_path, "shared-job-miscounts", *workers)
    assert result.ret == 1, result.stdout.str()[-3000:]
    outcomes = {name: c["outcome"] for name, c in cases.items()}
    assert outcomes == {**SOLO_OUTCOMES, "scaled": "failed"}, outcomes
    scaled = cases["scaled"]
    assert "passes in a job of its own, but failed in a job it shared with other cases (cases#1" in scaled["message"]
    assert "expected 3 element(s)" in scaled["message"] and "30" in scaled["message"], scaled["message"]
    # its traceback starts at its own runner.run line, not in the plugin that judged it after its body
    if not workers:
        result.stdout.fnmatch_lines(["*_ test_scaled _*", "test_cases.py:9: in test_scaled", "    runner.run(p)"])
    # the neighbours' verdicts came from the shared job
    assert cases["plus_one"]["batch"].startswith("cases#1 (")
    assert cases["grouped"]["batch"] == cases["plus_one"]["batch"]
    # the case that fails on any runner keeps its own failure (its diff), judged alone
    assert "expected 1 element(s)" in cases["wrong_expectation"]["message"]
    assert "passes in a job of its own" not in cases["wrong_expectation"]["message"]
    # what cannot share a job said so, and ran alone
    assert cases["expects_failure"]["batch"] == "ran alone: it expects its job to fail"
    assert cases["own_options"]["batch"].startswith("ran alone: it sets pipeline options of its own")
    assert cases["reads_metrics"]["batch"].startswith("ran alone: it reads the job's metrics")


def test_a_runner_that_crashes_every_shared_job_still_gives_every_case_its_own_verdict(pytester, tmp_path):
    result, cases = _run(pytester, tmp_path, "shared-job-crashes")
    outcomes = {name: c["outcome"] for name, c in cases.items()}
    assert outcomes == SOLO_OUTCOMES, outcomes
    assert "expected 1 element(s)" in cases["wrong_expectation"]["message"]
    failure = cases["plus_one"]["batch_failure"]
    assert "failed as a whole" in failure and "planted bug" in failure, failure
    # the run names the shared job that failed although each of its cases passes alone
    out = result.stdout.str()
    assert "a shared job failed as a whole, yet each of its cases passes alone" in out, out[-3000:]


def test_batch_size_one_runs_every_case_in_a_job_of_its_own(pytester, tmp_path):
    result, cases = _run(pytester, tmp_path, "shared-job-miscounts", "--batch-size", "1")
    assert {name: c["outcome"] for name, c in cases.items()}["scaled"] == "passed"
    assert not any("batch" in c for c in cases.values())


def test_known_failures_of_one_reason_share_a_job_and_keep_their_expected_failures(pytester, tmp_path):
    pytester.makefile(
        ".yaml",
        known=textwrap.dedent("""
            known_failures:
              - case: "cases/wrong_expectation"
                reason: "planted: the case expects what the model does not say"
              - case: "cases/wrong_expectation_too"
                reason: "planted: the case expects what the model does not say"
        """),
    )
    result, cases = _run(pytester, tmp_path, "shared-job-miscounts", "-k", "wrong_exp", expectations="known.yaml")
    assert result.ret == 0, result.stdout.str()[-3000:]
    for name in ("wrong_expectation", "wrong_expectation_too"):
        case = cases[name]
        assert case["outcome"] == "expected-failure", case
        assert "expected 1 element(s)" in case["message"], case["message"]
    # judged in one shared job: each failure is its own diff, read from the job they shared
    assert (
        cases["wrong_expectation"]["batch"] == cases["wrong_expectation_too"]["batch"] == "cases#1 (2 cases in one job)"
    )


def test_a_shared_job_that_hangs_is_given_up_at_the_time_limit_and_its_cases_run_alone(pytester, tmp_path):
    result, cases = _run(pytester, tmp_path, "shared-job-hangs", "-k", "plus_one or grouped", "--case-timeout", "20")
    assert result.ret == 0, result.stdout.str()[-3000:]
    for name in ("plus_one", "grouped"):
        assert cases[name]["outcome"] == "passed", cases[name]
        assert cases[name]["batch"].startswith(
            "ran alone: the job of cases#1 (2 cases in one job) failed as a whole: it did not finish within 20 s"
        ), cases[name]["batch"]


@pytest.mark.parametrize(
    "make_trigger, alone",
    [
        (lambda t: t.AfterWatermark(early=t.AfterProcessingTime(5)), True),
        (lambda t: t.Repeatedly(t.AfterAny(t.AfterCount(3), t.AfterProcessingTime(1))), True),
        (lambda t: t.AfterWatermark(early=t.AfterCount(2), late=t.AfterCount(1)), False),
        (lambda t: t._AfterSynchronizedProcessingTime(), True),
    ],
    ids=["early-processing-time", "nested-processing-time", "counts-only", "synchronized-processing-time"],
)
def test_a_case_whose_trigger_waits_for_processing_time_runs_alone(make_trigger, alone):
    """The engine's rule decides (one owner): a synchronized processing-time trigger waits for
    processing time too, which the kit's own walk of the SDK's trigger objects missed."""
    import apache_beam as beam
    from apache_beam.transforms import trigger, window

    from conformance.authoring import sharing

    p = beam.Pipeline()
    _ = (
        p
        | beam.Create([("k", 1)])
        | beam.WindowInto(
            window.FixedWindows(10),
            trigger=make_trigger(trigger),
            accumulation_mode=trigger.AccumulationMode.DISCARDING,
        )
        | beam.GroupByKey()
    )
    reason = sharing.alone_reason(p)
    assert (reason is not None and "processing time" in reason) == alone, reason
