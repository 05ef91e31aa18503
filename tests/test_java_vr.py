"""Beam's Java ValidatesRunner suite (--suite java-vr), as a runner author runs it: the launcher
built with Maven into the cache, Beam 2.65.0's real tests, real job servers.

The listing finds the tests with their categories; Beam's exclusions (by category and by name)
leave tests out as skipped with their source; a real test passes and a real one fails with its own
message on our reference runner's job server, and an expectations entry turns that failure into an
expected one; the time cap kills a test whose job never answers, and the next test still runs (a
real gRPC Job API server on loopback that forwards to our job server but holds the first Prepare
forever)."""

from __future__ import annotations

import json
import os
import shutil
import threading
from concurrent import futures
from pathlib import Path

import pytest

from conformance.java_vr import driver, placement, selections

pytestmark = pytest.mark.skipif(
    shutil.which("mvn") is None or shutil.which(driver.java()) is None, reason="needs Java 17 and Maven"
)

MODULE = Path(__file__).resolve().parent.parent / "conformance" / "cases" / "test_java_vr.py"
PASSING = "org.apache.beam.sdk.transforms.KvSwapTest.testKvSwap"
IMPULSE = "org.apache.beam.sdk.transforms.ImpulseTest.testImpulse"
# A Beam test every runner fails, beyond Beam's portable profile (docs/findings/beam-java-vr-tests.md,
# T1: the Java harness skips the skew check it asserts); its message must come back.
FAILING = "org.apache.beam.sdk.transforms.ParDoTest$TimestampTests.testProcessElementSkew"
FAILING_MESSAGE = "AssertionError: noSkew/ParMultiDo(ProcessElementTimestampSkewing).output"
BY_CATEGORY = "org.apache.beam.sdk.testing.TestStreamTest.testLateDataAccumulating"  # UsesTestStream
BY_NAME = "org.apache.beam.sdk.testing.PAssertTest.testWindowedIsEqualTo"  # excluded by name (apache/beam#20373)


@pytest.fixture(scope="module")
def launcher():
    return driver.build(lambda line: None)


@pytest.fixture(scope="module")
def listed(launcher):
    return {t.junit_id: t for t in driver.listing(launcher, lambda line: None).tests}


def test_the_listing_finds_the_validates_runner_tests_with_their_categories(launcher, listed):
    assert not driver.listing(launcher, lambda line: None).unloadable  # every test dependency is there
    timer = listed["org.apache.beam.sdk.transforms.ParDoTest$TimerTests.testEventTimeTimerBounded"]
    # the method's and its class's categories, each with its super-interfaces (ValidatesRunner extends NeedsRunner)
    assert {selections.BEAM + c for c in ("UsesTimersInParDo", "ValidatesRunner", "NeedsRunner")} <= timer.categories
    assert listed[IMPULSE].categories >= {selections.VALIDATES_RUNNER}
    # only ValidatesRunner tests: NeedsRunner-only tests of the jar are not listed
    assert all(selections.VALIDATES_RUNNER in t.categories for t in listed.values())
    # every listed test lands in a row of the matrix
    for t in listed.values():
        assert placement.capability_of(t.class_name, t.method, t.categories)


def test_beam_exclusions_by_category_and_by_name(listed):
    portable = selections.PORTABLE
    late = listed[BY_CATEGORY]
    reason = selections.left_out(portable, late.class_name, late.method, late.categories)
    assert reason and "UsesTestStream" in reason and "runners/portability/java/build.gradle" in reason
    windowed = listed[BY_NAME]
    reason = selections.left_out(portable, windowed.class_name, windowed.method, windowed.categories)
    assert reason and "excluded by name" in reason and "apache/beam#20373" in reason
    kv = listed[PASSING]
    assert selections.left_out(portable, kv.class_name, kv.method, kv.categories) is None
    # Prism's list keeps TestStream tests that the ULR's leaves out
    assert selections.left_out(selections.PRISM, late.class_name, late.method, late.categories) is None


def test_the_all_selection_leaves_out_committed_metrics_tests_naming_the_java_client():
    # Beam's Java PortableRunner cannot read committed metrics from any runner (selections.ALL_EXCLUDED)
    categories = {selections.VALIDATES_RUNNER, selections.BEAM + "UsesCommittedMetrics"}
    test = ("org.apache.beam.sdk.metrics.MetricsTest$CommittedMetricTests", "testCommittedCounterMetrics")
    reason = selections.left_out(selections.ALL, *test, categories)
    assert reason and "UsesCommittedMetrics" in reason and "PortableMetrics" in reason


# Beam 2.65.0's UsesMultimapState tests (ParDoTest.java): the six that failed on our own runners in a
# run of --java-vr-selection all before the category was left out, and the seventh, whose pipeline
# is refused at construction, before any harness runs.
MULTIMAP_TESTS = [
    *(
        ("org.apache.beam.sdk.transforms.ParDoTest$StateTests", f"testMultimapState{what}")
        for what in ("Put", "Remove", "IsEmptyAfterRemove", "Clear", "StructuralValue")
    ),
    ("org.apache.beam.sdk.transforms.ParDoTest$StateCoderInferenceTests", "testMultimapStateCoderInference"),
    ("org.apache.beam.sdk.transforms.ParDoTest$StateCoderInferenceTests", "testMultimapStateCoderInferenceFailure"),
]


@pytest.mark.parametrize("class_name, method", MULTIMAP_TESTS)
def test_the_all_selection_leaves_out_multimap_state_tests_naming_the_java_harness(class_name, method):
    # Beam's Java harness (2.65.0, 2.62.0) throws for MultimapState whatever the runner: left out of
    # --java-vr-selection all with its reason and where it was read, as committed metrics are
    # the test's categories as the launcher lists them: the method's, with ValidatesRunner's super-interface
    multimap = selections.BEAM + "UsesMultimapState"
    stateful = (selections.BEAM + "NeedsRunner", selections.BEAM + "UsesStatefulParDo")
    categories = {selections.VALIDATES_RUNNER, multimap, *stateful}
    reason = selections.left_out(selections.ALL, class_name, method, categories)
    assert reason and "category UsesMultimapState" in reason
    assert "FnApiStateAccessor.bindMultimap" in reason and "apache/beam#23616" in reason and "2.65.0" in reason
    # a stateful test without multimap state still runs in that selection
    assert selections.left_out(selections.ALL, class_name, "testValueStateSimple", categories - {multimap}) is None


def test_the_time_cap_is_the_targets_own_unless_given():
    from conformance.java_vr import suite
    from conformance.session.targets.reference import ReferenceTarget
    from conformance.session.targets.spark import SparkTarget

    class Config:
        def __init__(self, given):
            self.given = given

        def getoption(self, name):
            assert name == "java_vr_timeout"
            return self.given

    # the Spark backend's TestStream-heavy ParDoTests take minutes each on local[2]
    assert suite.timeout_of(Config(None), SparkTarget) == SparkTarget.java_vr_timeout == 600
    assert suite.timeout_of(Config(None), ReferenceTarget) == driver.DEFAULT_TIMEOUT_S  # the kit's default
    assert suite.timeout_of(Config(45.0), SparkTarget) == 45.0  # --java-vr-timeout overrides both


def test_gradle_patterns():
    match = selections.pattern_matches
    cls = "org.apache.beam.sdk.transforms.CombineTest$BasicTests"
    assert match(
        "org.apache.beam.sdk.transforms.CombineTest$BasicTests.testHotKeyCombining", cls, "testHotKeyCombining"
    )
    assert not match(
        "org.apache.beam.sdk.transforms.CombineTest$BasicTests.testHotKeyCombining", cls, "testHotKeyCombiningX"
    )
    assert match("org.apache.beam.sdk.transforms.CombineTest$BasicTests", cls, "anything")  # a whole class
    assert match("CombineTest$BasicTests.testHotKeyCombining", cls, "testHotKeyCombining")  # without the package
    assert not match("combineTest$BasicTests.testHotKeyCombining", cls, "testHotKeyCombining")
    assert match("org.apache.beam.sdk.transforms.Combine*", cls, "x")


# --------------------------------------------------------------------------- in a pytest session


def _session(pytester, *args):
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--show-capture=no", "--results-dir", str(pytester.path / "out"), *args
    )
    return result


def test_pass_fail_expected_failure_and_left_out_tests_on_the_reference_job_server(pytester):
    common = ["--target", "reference", "--target-name", "ref", "--suite", "java-vr"]

    def nodes(*ids):
        return [f"{MODULE}::test_java_vr[{i}]" for i in ids]

    def outcomes(profile: str) -> dict:
        doc = json.loads((pytester.path / "out" / "results-ref.java-vr.json").read_text())
        assert doc["suite"] == "java-vr" and doc["selection"]["java_vr"]["profile"] == profile
        return {c["id"].removeprefix("java_vr/"): c for c in doc["cases"]}

    # Beam's portable profile: one test passes, two are left out (by category, by name)
    result = _session(pytester, *common, *nodes(PASSING, BY_CATEGORY, BY_NAME), "--expectations", "none")
    assert result.ret == 0, result.stdout.str()[-3000:]
    by_id = outcomes("portable")
    assert by_id[PASSING]["outcome"] == "passed"
    assert by_id[BY_CATEGORY]["outcome"] == "skipped" and "UsesTestStream" in by_id[BY_CATEGORY]["message"]
    assert by_id[BY_NAME]["outcome"] == "skipped" and "excluded by name" in by_id[BY_NAME]["message"]
    assert not (pytester.path / "out" / "results-ref.json").exists()  # the cases' results are another file

    # beyond the profile: the failing test fails the run, until an expectations entry names it
    beyond = [*common, "--java-vr-selection", "all", *nodes(PASSING, FAILING)]
    result = _session(pytester, *beyond, "--expectations", "none")
    assert result.ret == 1, result.stdout.str()[-3000:]
    by_id = outcomes("all")
    assert by_id[FAILING]["outcome"] == "failed"
    assert FAILING_MESSAGE in by_id[FAILING]["message"]

    expectations = pytester.path / "ref.yaml"
    expectations.write_text(
        f"known_failures:\n  - case: 'java_vr/{FAILING}'\n    reason: 'a test of this kit: known to fail'\n"
    )
    result = _session(pytester, *beyond, "--expectations", str(expectations))
    assert result.ret == 0, result.stdout.str()[-3000:]
    by_id = outcomes("all")
    assert by_id[FAILING]["outcome"] == "expected-failure"
    assert by_id[PASSING]["outcome"] == "passed"


# --------------------------------------------------------------------------- the time cap


class _HoldFirstPrepare:
    """A Job API server on loopback that forwards every call to another one, except the first
    Prepare, which it holds until it is stopped: the job of the first test never starts."""

    STREAMING = {"GetStateStream", "GetMessageStream"}

    def __init__(self, upstream: str):
        import grpc

        self._grpc = grpc
        self._channel = grpc.insecure_channel(upstream)
        self._release = threading.Event()
        self.held = threading.Event()
        self._lock = threading.Lock()
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
        self._server.add_generic_rpc_handlers([self])
        self.port = self._server.add_insecure_port("127.0.0.1:0")
        self._server.start()

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"

    def service(self, details):
        method = details.method
        if method.rsplit("/", 1)[-1] in self.STREAMING:
            forward = self._channel.unary_stream(method)
            return self._grpc.unary_stream_rpc_method_handler(lambda request, context: forward(request))
        forward_unary = self._channel.unary_unary(method)

        def unary(request, context):
            if method.endswith("/Prepare"):
                with self._lock:
                    first = not self.held.is_set()
                    self.held.set()
                if first:
                    self._release.wait()
                    context.abort(self._grpc.StatusCode.UNAVAILABLE, "held by the test and released at its end")
            return forward_unary(request)

        return self._grpc.unary_unary_rpc_method_handler(unary)

    def stop(self) -> None:
        self._release.set()
        self._server.stop(0)
        self._channel.close()


def test_the_time_cap_kills_a_stuck_test_and_the_next_one_runs(launcher):
    from reference_runner.jobserver.server import JobServer

    upstream = JobServer(port=0).start()
    proxy = _HoldFirstPrepare(upstream.address)
    jvm = driver.LauncherJvm(launcher, driver.pipeline_options(proxy.endpoint))
    try:
        jvm.start()
        assert jvm.process is not None
        stuck_pid = jvm.process.pid
        stuck = jvm.run(IMPULSE, timeout=15)
        assert stuck.outcome == "failed" and stuck.message.startswith("timed out after 15 s"), stuck
        with pytest.raises(ProcessLookupError):  # killed, with its process group
            os.killpg(stuck_pid, 0)
        after = jvm.run(PASSING, timeout=300)
        assert after.outcome == "passed", after
        assert jvm.starts == 2  # a fresh JVM for the next test
    finally:
        jvm.close()
        proxy.stop()
        upstream.stop()


def test_a_jvm_that_dies_during_a_test_is_reported_with_its_stderr_and_replaced(launcher):
    from reference_runner.jobserver.server import JobServer

    upstream = JobServer(port=0).start()
    proxy = _HoldFirstPrepare(upstream.address)
    jvm = driver.LauncherJvm(launcher, driver.pipeline_options(proxy.endpoint))

    def kill_once_the_job_is_submitted():
        proxy.held.wait()
        assert jvm.process is not None
        os.killpg(jvm.process.pid, 9)

    try:
        jvm.start()
        killer = threading.Thread(target=kill_once_the_job_is_submitted)
        killer.start()
        died = jvm.run(IMPULSE, timeout=300)
        killer.join()
        assert died.outcome == "error" and "the launcher JVM died while running the test" in died.message, died
        assert jvm.run(PASSING, timeout=300).outcome == "passed"
        assert jvm.starts == 2
    finally:
        jvm.close()
        proxy.stop()
        upstream.stop()


class _NamingPrepare(_HoldFirstPrepare):
    """A Job API server on loopback that forwards every call to another one, giving each job the
    name the next entry of ``names`` says (Beam's Python PortableRunner names every job 'job';
    Beam's Java TestPipeline names a test's job after the test)."""

    def __init__(self, upstream: str, names: list[str]):
        super().__init__(upstream)
        self._names = list(names)

    def service(self, details):
        if not details.method.endswith("/Prepare"):
            return super().service(details)
        from apache_beam.portability.api import beam_job_api_pb2

        forward = self._channel.unary_unary(details.method)

        def prepare(request, context):
            renamed = beam_job_api_pb2.PrepareJobRequest.FromString(request)
            with self._lock:
                renamed.job_name = self._names.pop(0)
            return forward(renamed.SerializeToString())

        return self._grpc.unary_unary_rpc_method_handler(prepare)


_RELEASE = threading.Event()


def _block(x):
    _RELEASE.wait(120)  # until the test is done with the job (LOOPBACK: this process's worker)
    return x


def test_a_timed_out_tests_job_is_cancelled_and_other_jobs_are_left_alone():
    """After its JVM is killed, the job a test left on the runner is cancelled by its name (the one
    Beam's TestPipeline gives it), through the Job API; a job of another test runs on."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    from conformance.java_vr import stray_jobs
    from reference_runner.jobserver.server import JobServer

    assert stray_jobs.job_name_of("org.apache.beam.sdk.transforms.ParDoTest$BasicTests.testParDo") == (
        "pardotest0basictests0testpardo"
    )
    server = JobServer(port=0).start()
    proxy = _NamingPrepare(server.address, [f"{stray_jobs.job_name_of(t)}-root-1127-x" for t in (PASSING, IMPULSE)])
    results = {}
    try:
        for test in (PASSING, IMPULSE):
            options = PipelineOptions(
                ["--runner=PortableRunner", f"--job_endpoint={proxy.endpoint}", "--environment_type=LOOPBACK"]
            )
            p = beam.Pipeline(options=options)
            _ = p | beam.Create([1]) | beam.Map(_block)
            results[test] = p.run()
        (cancelled,) = stray_jobs.cancel(server.address, PASSING)
        with pytest.raises(RuntimeError, match="CANCELLED"):  # Beam's client raises for a cancelled job
            results[PASSING].wait_until_finish()
        assert results[IMPULSE].state == "RUNNING"  # another test's job
        assert stray_jobs.cancel(server.address, PASSING) == []  # an ended job is left as it is
    finally:
        _RELEASE.set()
        if IMPULSE in results:
            results[IMPULSE].wait_until_finish()
        proxy.stop()
        server.stop()


# --------------------------------------------------------------------------- on the Spark job server

# Each expects its job to fail with its user code's message ("Vals should have been empty", ...)
EXPECT_FAILURES = [
    "org.apache.beam.sdk.testing.PAssertTest.testEmptyFalse",
    "org.apache.beam.sdk.testing.PAssertTest.testEmptyFalseDefaultReasonString",
    "org.apache.beam.sdk.testing.PAssertTest.testPAssertEqualsSingletonFailsForEmptyPCollection",
    "org.apache.beam.sdk.transforms.ParDoTest$LifecycleTests.testParDoWithErrorInProcessElement",
]


def test_failing_java_loopback_jobs_on_the_spark_job_server_fail_with_their_messages_beside_a_good_job(
    launcher, tmp_path
):
    # Spark would run the failing task again (local[2,4]), and Beam's Java LOOPBACK service serves
    # no worker after one of its workers stopped: the job used to wait a minute for one, then
    # report Spark's error (which of these tests met that depended on where Spark ran the retry).
    # A DoFn that raised fails the job at once, with its message, and a Python job running beside
    # them on the same SparkContext finishes.
    from user_modules import job_server_elsewhere

    with job_server_elsewhere(tmp_path, "--backend", "spark") as endpoint:
        jvm = driver.LauncherJvm(launcher, driver.pipeline_options(endpoint))
        try:
            with futures.ThreadPoolExecutor(1) as pool:
                beside = pool.submit(_python_loopback_job, endpoint)
                verdicts = {test: jvm.run(test, timeout=300) for test in EXPECT_FAILURES}
                beside.result()
        finally:
            jvm.close()
    assert all(v.outcome == "passed" for v in verdicts.values()), verdicts


def _python_loopback_job(endpoint: str) -> None:
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions
    from apache_beam.testing.util import assert_that, equal_to

    options = PipelineOptions(["--runner=PortableRunner", f"--job_endpoint={endpoint}", "--environment_type=LOOPBACK"])
    with beam.Pipeline(options=options) as p:
        doubled = p | beam.Create(list(range(40))) | beam.Reshuffle() | beam.Map(lambda x: 2 * x)
        assert_that(doubled, equal_to([2 * x for x in range(40)]))
