"""Beam's Java ValidatesRunner tests as pytest items (``--suite java-vr`` or ``all``).

Each test is one item of ``conformance/cases/test_java_vr.py``, with the case id
``java_vr/<fully.qualified.Class>.<method>`` (nested classes with ``$``, as Beam's Gradle filters
spell them), the capability placement.py gives it, and a skip mark with the reason and its source
when the selection (selections.py) leaves it out. The session plugin does the rest as for any case:
markers, expectations (entries whose ``case`` is a ``java_vr/...`` id or glob), results (their own
file, ``results-<target>.java-vr.json``) and the report.
"""

from __future__ import annotations

import dataclasses
import sys

import grpc
import pytest

from conformance.authoring.case_runner import CaseFailure
from conformance.java_vr import SUITES, driver, placement, selections, stray_jobs
from conformance.peers import artifacts, pins

MODULE = "test_java_vr.py"
CASE_PREFIX = "java_vr/"


class JavaTestFailure(CaseFailure):
    """The Java test failed (its JUnit failure, a timeout, or a dead JVM)."""

    def __init__(self, text: str, outcome: str = "failed"):
        super().__init__(text)
        # "error": the launcher could not run the test (the results say error, not failed)
        self.conformance_outcome = outcome


def add_options(group) -> None:
    group.addoption(
        "--suite",
        default="cases",
        choices=SUITES,
        help="what to run: the kit's cases (default), Beam's Java ValidatesRunner tests (java-vr: "
        f"the JUnit tests of beam-sdks-java-core's test-jar ({pins.BEAM_JAVA_VR}, or a Beam job server's own "
        "release), run with Beam's "
        "TestUniversalRunner against the target's Job API endpoint, results in "
        "results-<target>.java-vr.json), or all of both",
    )
    group.addoption(
        "--java-vr-selection",
        default="beam",
        choices=selections.SELECTIONS,
        help="java-vr: which tests run: beam (default) what Beam's own Gradle ValidatesRunner task runs for "
        "the target's kind of runner, Beam's exclusions honoured; all: every ValidatesRunner test but "
        "those needing an environment the kit cannot give. Tests left out are reported as skipped",
    )
    group.addoption(
        "--java-vr-profile",
        default=None,
        choices=sorted(selections.PROFILES),
        help="java-vr: whose Beam exclusion lists select the tests (default: the target's own, "
        "e.g. flink-batch for flink, portable, Beam's Universal Local Runner task, for grpc targets)",
    )
    group.addoption(
        "--java-vr-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="java-vr: time cap of one Java test (default: the target's own, e.g. 600 for spark, else "
        f"{driver.DEFAULT_TIMEOUT_S:g}); a test past it fails ('timed out after N s'), its JVM is killed and "
        "the next test gets a fresh one",
    )


def suite_of(config) -> str:
    return config.getoption("suite", "cases")


def runs_java(config) -> bool:
    return suite_of(config) in ("java-vr", "all")


def runs_cases(config) -> bool:
    return suite_of(config) in ("cases", "all")


def profile_of(config, target) -> selections.Profile:
    if config.getoption("java_vr_selection") == "all":
        return selections.ALL
    name = config.getoption("java_vr_profile") or getattr(target, "java_vr_profile", "portable")
    try:
        return selections.PROFILES[name]
    except KeyError:
        raise pytest.UsageError(f"target {target.name!r} names an unknown Java VR profile {name!r}") from None


def timeout_of(config, target) -> float:
    """The time cap of one Java test: --java-vr-timeout, else the target's own (Target.java_vr_timeout),
    else the kit's default."""
    given = config.getoption("java_vr_timeout")
    if given is not None:
        return given
    return target.java_vr_timeout or driver.DEFAULT_TIMEOUT_S


def _progress(line: str) -> None:
    print(f"beam-conformance: {line}", file=sys.__stderr__, flush=True)


def beam_version_of(target) -> str:
    """The Beam release whose Java tests run against ``target``: the kit's pin, or the release of a
    Beam job server older than it (Target.java_vr_beam)."""
    return target.java_vr_beam or pins.BEAM_JAVA_VR


def build(target, progress=_progress) -> driver.Launcher:
    try:
        return driver.build(progress, beam_version_of(target))
    except artifacts.ArtifactUnavailable as e:
        raise pytest.UsageError(f"--suite java-vr cannot run here: {e}") from None


def params(config, target) -> list:
    """One pytest.param per listed test (and per class the JVM could not load)."""
    launcher = build(target)
    listed = driver.listing(launcher, _progress)
    profile = profile_of(config, target)
    hard_cap = timeout_of(config, target) + driver.START_TIMEOUT_S + 60
    out, unplaced = [], []
    for test in listed.tests:
        try:
            cap = placement.capability_of(test.class_name, test.method, test.categories)
        except placement.Unplaced as e:
            unplaced.append(str(e))
            continue
        marks = [
            pytest.mark.capability(cap),
            pytest.mark.java_vr(test.case_id),
            # the driver's own cap fires first; this one only guards against a stuck driver
            pytest.mark.timeout(hard_cap),
        ]
        reason = selections.left_out(profile, test.class_name, test.method, test.categories)
        if reason is not None:
            marks.append(pytest.mark.skip(reason=reason))
        elif test.ignored:
            marks.append(pytest.mark.skip(reason="@Ignore in Beam's test"))
        out.append(pytest.param(test, marks=marks, id=test.junit_id))
    for class_name, error in sorted(listed.unloadable.items()):
        cap = placement.CLASS_TABLE.get(class_name) or placement.CLASS_TABLE.get(class_name.split("$", 1)[0])
        if cap is None:
            unplaced.append(f"java_vr/{class_name} (its class cannot be loaded: {error})")
            continue
        broken = driver.ListedTest(class_name, "<class>", frozenset())
        marks = [pytest.mark.capability(cap), pytest.mark.java_vr(f"{CASE_PREFIX}{class_name}")]
        out.append(pytest.param((broken, error), marks=marks, id=class_name))
    if unplaced:
        raise pytest.UsageError(
            "Java ValidatesRunner tests that no capability places (add their category or class to "
            "conformance/java_vr/placement.py):\n  " + "\n  ".join(unplaced)
        )
    return out


class JvmHolder:
    """The launcher JVM of this pytest(-xdist) worker, started on the first test, restarted when
    the target's endpoint changed (a job server the session restarted)."""

    def __init__(self, launcher: driver.Launcher, target, profile: selections.Profile, timeout: float):
        self.launcher = launcher
        self.target = target
        self.profile = profile
        self.timeout = timeout
        self.jvm: driver.LauncherJvm | None = None
        self.endpoint: str | None = None

    def run(self, test: driver.ListedTest) -> driver.Verdict:
        self.target.ensure_running()
        endpoint = self.target.sdk_job_endpoint()
        if self.jvm is None or endpoint != self.endpoint:
            if self.jvm is not None:
                self.jvm.close()
            self.endpoint = endpoint
            options = driver.pipeline_options(endpoint, self.profile.pipeline_options)
            self.jvm = driver.LauncherJvm(self.launcher, options)
        verdict = self.jvm.run(test.junit_id, self.timeout)
        if verdict.timed_out:
            # the killed JVM's job may still run on the runner and hold what the next tests need
            try:
                cancelled = stray_jobs.cancel(endpoint, test.junit_id)
                note = f"its job {', '.join(cancelled)} was cancelled on the runner" if cancelled else ""
            except grpc.RpcError as e:
                note = f"its job could not be cancelled on the runner: {e.code().name} {e.details()}"
            if note:
                verdict = dataclasses.replace(verdict, message=f"{verdict.message}; {note}")
        return verdict

    def close(self) -> None:
        if self.jvm is not None:
            self.jvm.close()


def run_test(test, holder: JvmHolder) -> None:
    """The body of one Java test's item: pass, skip, or fail with the test's own message first."""
    if isinstance(test, tuple):  # a class the JVM could not load
        broken, error = test
        raise JavaTestFailure(f"the test class {broken.class_name} cannot be loaded: {error}", "error")
    verdict = holder.run(test)
    if verdict.outcome == "passed":
        return
    if verdict.outcome == "skipped":
        pytest.skip(verdict.message or "skipped by JUnit")
    text = verdict.message or "(no message)"
    # a JVM trace starts with the exception's own text, which is the message already
    trace = verdict.trace.removeprefix(verdict.message).strip("\n")
    if trace:
        text += "\n" + trace
    raise JavaTestFailure(text, "error" if verdict.outcome == "error" else "failed")


def short_categories(categories) -> list[str]:
    """A Java test's Beam categories as its results record them (without Beam's package)."""
    return sorted(c.removeprefix(selections.BEAM) for c in categories)


def describe(config, target) -> dict:
    """What the java-vr results record about the run."""
    profile = profile_of(config, target)
    return {
        "beam_java": beam_version_of(target),
        "artifacts": list(pins.java_vr_artifacts(beam_version_of(target))),
        "selection": config.getoption("java_vr_selection"),
        "profile": profile.name,
        "profile_description": profile.description,
        "profile_source": profile.cite(),
        "pipeline_options": driver.pipeline_options("<target's endpoint>", profile.pipeline_options),
        "timeout_s": timeout_of(config, target),
    }
