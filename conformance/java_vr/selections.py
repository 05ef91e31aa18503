"""Which of Beam's Java ValidatesRunner tests run against a target.

The default selection (``--java-vr-selection beam``) is what Beam's own Gradle task runs for that
kind of runner: its ``includeCategories`` and ``excludeCategories`` and its ``excludeTestsMatching``
patterns (Beam's "sickbay" lists included), transcribed here as data, each profile naming the
Beam file, the commit it was read at and the task. A target declares its profile
(``Target.java_vr_profile``; ``--java-vr-profile`` overrides it). Tests a profile leaves out are
reported as skipped with the reason and the source, so the counts show them.

The search index the kit's authors read Beam from holds one version of each build file, not the
v2.65.0 tag's: every profile says the commit its list comes from. Issue numbers are those the
build files give for an exclusion (apache/beam issues unless said otherwise).

``--java-vr-selection all`` runs every ValidatesRunner test except those needing an environment
the kit cannot give or a feature Beam's Java client or harness lacks on every runner (ALL_EXCLUDED,
each with its reason and source), to look beyond Beam's own profile of a runner.

Pattern matching follows Gradle's test filter, as far as these lists use it: ``*`` matches any
characters; a pattern names a test when it matches ``Class.method`` whole, or ``Class`` whole (every
test of that class); a pattern that starts with an upper-case letter is matched against the class
name without its package as well (``CombineTest$BasicTests.testHotKeyCombining``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

BEAM = "org.apache.beam.sdk.testing."
VALIDATES_RUNNER = BEAM + "ValidatesRunner"


@dataclass(frozen=True)
class Source:
    path: str  # in apache/beam
    commit: str
    task: str

    def cite(self) -> str:
        return f"apache/beam {self.path} at {self.commit[:12]}, {self.task}"


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    source: Source | None
    exclude_categories: tuple[str, ...]
    # (Gradle excludeTestsMatching pattern, the Beam issue the build file names for it or "")
    exclude_tests: tuple[tuple[str, str], ...] = ()
    include_categories: tuple[str, ...] = (VALIDATES_RUNNER,)
    # pipeline options the Beam task adds to the test pipelines' options
    pipeline_options: tuple[str, ...] = field(default=())

    def cite(self) -> str:
        return self.source.cite() if self.source else "the kit's own selection (conformance/java_vr/selections.py)"


def _cats(*names: str) -> tuple[str, ...]:
    return tuple(BEAM + n for n in names)


# ParDoLifecycleTest's teardown-after-an-exception tests, left out by both the ULR's and Prism's lists.
_TEARDOWN_AFTER_EXCEPTION = tuple(
    (f"org.apache.beam.sdk.transforms.ParDoLifecycleTest.testTeardownCalledAfterExceptionIn{where}", "20372")
    for where in (
        "FinishBundle",
        "FinishBundleStateful",
        "ProcessElement",
        "ProcessElementStateful",
        "Setup",
        "SetupStateful",
        "StartBundle",
        "StartBundleStateful",
    )
)

# Beam's Universal Local Runner task: its Python local job service (FnApiRunner behind the Job API)
# with a LOOPBACK Java harness. The profile of any portable runner without a list of its own.
PORTABLE = Profile(
    name="portable",
    description="Beam's portable ValidatesRunner task for the Universal Local Runner (Beam's Python local "
    "job service), LOOPBACK: the profile of our own targets and of any Job API endpoint",
    source=Source(
        "runners/portability/java/build.gradle",
        "0029f5f18b933959ca3223cfb8641f2a7430b322",
        "ulrLoopbackValidatesRunnerTests (createUlrValidatesRunnerTask, LOOPBACK)",
    ),
    exclude_categories=_cats(
        "UsesBoundedTrieMetrics",
        "UsesExternalService",
        "UsesSdkHarnessEnvironment",
        "UsesGaugeMetrics",
        "UsesStringSetMetrics",
        "UsesOnWindowExpiration",
        "UsesMapState",
        "UsesMultimapState",
        "UsesSetState",
        "UsesOrderedListState",
        "UsesTestStream",
        "UsesTimersInParDo",
        "UsesTriggeredSideInputs",
    ),
    exclude_tests=(
        ("org.apache.beam.sdk.metrics.MetricsTest$CommittedMetricTests.testCommittedCounterMetrics", "20370"),
        ("org.apache.beam.sdk.metrics.MetricsTest$CommittedMetricTests.testCommittedDistributionMetrics", "20371"),
        *_TEARDOWN_AFTER_EXCEPTION,
        ("org.apache.beam.sdk.transforms.windowing.WindowTest.testMergingCustomWindows", "20437"),
        ("org.apache.beam.sdk.transforms.windowing.WindowTest.testMergingCustomWindowsKeyedCollection", "20437"),
        (
            "org.apache.beam.sdk.transforms.windowing.WindowTest.testMergingCustomWindowsWithoutCustomWindowTypes",
            "20437",
        ),
        ("org.apache.beam.sdk.transforms.windowing.WindowingTest.testMergingWindowing", "20437"),
        ("org.apache.beam.sdk.transforms.windowing.WindowingTest.testNonPartitioningWindowing", "20437"),
        ("org.apache.beam.sdk.transforms.GroupByKeyTest$WindowTests.testGroupByKeyMergingWindows", "20437"),
        ("org.apache.beam.sdk.transforms.CombineTest$WindowingTests.testGlobalCombineWithDefaultsAndTriggers", "20375"),
        ("org.apache.beam.sdk.transforms.CombineTest$WindowingTests.testSessionsCombine", "20375"),
        ("org.apache.beam.sdk.transforms.CombineTest$WindowingTests.testSessionsCombineWithContext", "20375"),
        ("org.apache.beam.sdk.testing.PAssertTest.testWindowedIsEqualTo", "20373"),
        ("org.apache.beam.sdk.transforms.CombineTest$BasicTests.testHotKeyCombiningWithAccumulationMode", "20374"),
        ("org.apache.beam.sdk.transforms.ReshuffleTest.testReshufflePreservesMetadata", "29973"),
        ("org.apache.beam.sdk.transforms.RedistributeTest.testRedistributePreservesMetadata", "31231"),
        # the task's sickbay list
        ("org.apache.beam.sdk.transforms.windowing.WindowingTest.testWindowPreservation", "20631"),
    ),
)

_FLINK_SOURCE = ("runners/flink/job-server/flink_job_server.gradle", "66da9b44ee8e651cf772d4310c52ed7c89a9e04e")
_FLINK_COMMON = _cats(
    "UsesSdkHarnessEnvironment",
    "FlattenWithHeterogeneousCoders",
    "LargeKeys$Above10MB",
    "UsesCommittedMetrics",
    "UsesExternalService",
    "UsesCustomWindowMerging",
    "UsesFailureMessage",
    "UsesGaugeMetrics",
    "UsesMapState",
    "UsesMultimapState",
    "UsesSetState",
    "UsesOrderedListState",
    "UsesStrictTimerOrdering",
    "UsesOnWindowExpiration",
    "UsesBundleFinalizer",
)
_FLINK_TESTS = (
    ("org.apache.beam.sdk.transforms.ReshuffleTest.testReshufflePreservesMetadata", ""),
    ("org.apache.beam.sdk.transforms.RedistributeTest.testRedistributePreservesMetadata", "31231"),
    ("org.apache.beam.sdk.transforms.FlattenTest.testFlattenWithDifferentInputAndOutputCoders2", "20269"),
    ("org.apache.beam.sdk.testing.TestStreamTest.testDiscardingMode", "20843"),
    ("org.apache.beam.sdk.testing.TestStreamTest.testLateDataAccumulating", "20844"),
    ("org.apache.beam.sdk.testing.TestStreamTest.testFirstElementLate", "BEAM-12710"),
    ("org.apache.beam.sdk.transforms.ParDoTest$TimestampTests.testProcessElementSkew", "BEAM-13498"),
    (
        "org.apache.beam.sdk.transforms.GroupByKeyTest$BasicTests.testAfterProcessingTimeContinuationTriggerUsingState",
        "21472",
    ),
)

# Beam's Flink job server, batch: the kit's flink target submits batch pipelines unless a case asks
# for streaming, and the Java tests carry no such flag, so the batch task is the one that matches
# what the target runs. Beam's task also passes --parallelism=2, a FlinkPipelineOptions option the
# test JVM's classpath (no Flink runner) cannot parse; the job server then uses its default
# parallelism (the machine's cores: 2 here).
FLINK_BATCH = Profile(
    name="flink-batch",
    description="Beam's Flink job server, its portable batch ValidatesRunner task (EMBEDDED environment in Beam's "
    "run; LOOPBACK here)",
    source=Source(*_FLINK_SOURCE, "validatesPortableRunnerBatch (portableValidatesRunnerTask, batch)"),
    exclude_categories=_FLINK_COMMON
    + _cats(
        "UsesUnboundedSplittableParDo",
        "UsesUnboundedPCollections",
        "UsesTestStream",
        "UsesPerKeyOrderedDelivery",
        "UsesPerKeyOrderInBundle",
    ),
    exclude_tests=_FLINK_TESTS,
)

# The streaming task as a second profile (--java-vr-profile flink-streaming): the same tests in
# Flink's streaming mode, TestStream included.
FLINK_STREAMING = Profile(
    name="flink-streaming",
    description="Beam's Flink job server, its portable streaming ValidatesRunner task (--streaming)",
    source=Source(*_FLINK_SOURCE, "validatesPortableRunnerStreaming (portableValidatesRunnerTask, streaming)"),
    exclude_categories=_FLINK_COMMON
    + _cats(
        "UsesBoundedSplittableParDo",
        "UsesTestStreamWithProcessingTime",
        "UsesTestStreamWithMultipleStages",
        "UsesTestStreamWithOutputTimestamp",
        "UsesTriggeredSideInputs",
    ),
    exclude_tests=_FLINK_TESTS,
    pipeline_options=("--streaming",),
)

PRISM = Profile(
    name="prism",
    description="Beam's Prism ValidatesRunner task, LOOPBACK",
    source=Source(
        "runners/prism/java/build.gradle",
        "02efeaafd2fef8e466bf61202e371c38e181d3c0",
        "prismLoopbackValidatesRunnerTests (createPrismValidatesRunnerTask, LOOPBACK)",
    ),
    exclude_categories=_cats(
        "UsesExternalService",
        "UsesSdkHarnessEnvironment",
        "UsesMultimapState",
        "UsesBoundedTrieMetrics",
    ),
    exclude_tests=(
        # the task's sickbay list
        ("org.apache.beam.sdk.metrics.MetricsTest$CommittedMetricTests.testAllCommittedMetrics", ""),
        ("org.apache.beam.sdk.metrics.MetricsTest$CommittedMetricTests.testCommittedCounterMetrics", ""),
        ("org.apache.beam.sdk.metrics.MetricsTest$CommittedMetricTests.testCommittedDistributionMetrics", ""),
        ("org.apache.beam.sdk.metrics.MetricsTest$CommittedMetricTests.testCommittedStringSetMetrics", ""),
        ("org.apache.beam.sdk.metrics.MetricsTest$CommittedMetricTests.testCommittedGaugeMetrics", ""),
        (
            "org.apache.beam.sdk.transforms.GroupByKeyTest$BasicTests.testAfterProcessingTimeContinuationTriggerUsingState",
            "",
        ),
        (
            "org.apache.beam.sdk.transforms.ParDoTest$StateTests.testRequiresTimeSortedInputWithLateDataAndAllowedLateness",
            "",
        ),
        ("org.apache.beam.sdk.transforms.ViewTest.testTriggeredLatestSingleton", "31438"),
        ("org.apache.beam.sdk.testing.TestStreamTest.testProcessingTimeTrigger", "31438"),
        ("org.apache.beam.sdk.testing.TestStreamTest.testMultipleStreams", ""),
        ("org.apache.beam.sdk.transforms.GroupIntoBatchesTest.testInStreamingMode", ""),
        ("org.apache.beam.sdk.transforms.GroupIntoBatchesTest.testBufferingTimerInFixedWindow", ""),
        ("org.apache.beam.sdk.transforms.GroupIntoBatchesTest.testBufferingTimerInGlobalWindow", ""),
        ("org.apache.beam.sdk.transforms.GroupIntoBatchesTest.testWithShardedKeyInGlobalWindow", ""),
        ("org.apache.beam.sdk.transforms.ParDoTest$LifecycleTests.testParDoWithErrorInFinishBatch", ""),
        ("org.apache.beam.sdk.transforms.ParDoTest$LifecycleTests.testParDoWithErrorInProcessElement", ""),
        ("org.apache.beam.sdk.transforms.ParDoTest$LifecycleTests.testParDoWithErrorInStartBatch", ""),
        ("org.apache.beam.sdk.transforms.windowing.WindowTest.testMergingCustomWindows", "31921"),
        ("org.apache.beam.sdk.transforms.windowing.WindowTest.testMergingCustomWindowsKeyedCollection", "31921"),
        (
            "org.apache.beam.sdk.transforms.windowing.WindowTest.testMergingCustomWindowsWithoutCustomWindowTypes",
            "31921",
        ),
        ("org.apache.beam.sdk.transforms.ReshuffleTest.testReshufflePreservesMetadata", "29973"),
        ("org.apache.beam.sdk.transforms.RedistributeTest.testRedistributePreservesMetadata", "31231"),
        ("org.apache.beam.sdk.transforms.ViewTest.testDiscardingNonSingletonSideInput", "32932"),
        ("org.apache.beam.sdk.transforms.MapViewTest.testMapSideInputWithNullValuesCatchesDuplicates", "32932"),
        ("org.apache.beam.sdk.transforms.ViewTest.testNonSingletonSideInput", "32932"),
        ("org.apache.beam.sdk.transforms.ViewTest.testEmptySingletonSideInput", "32932"),
        ("org.apache.beam.sdk.transforms.ViewTest.testSideInputWithNestedIterables", ""),
        ("org.apache.beam.sdk.transforms.ParDoTest$TimestampTests.testProcessElementSkew", ""),
        *_TEARDOWN_AFTER_EXCEPTION,
    ),
)

# Beam's Spark job server, batch: the beam-spark-job-server target runs batch pipelines (Beam's
# portable Spark runner runs streaming only with --streaming, which the Java tests do not ask for).
SPARK_JOB_SERVER_BATCH = Profile(
    name="spark-job-server-batch",
    description="Beam's Spark job server, its portable batch ValidatesRunner task (EMBEDDED environment in Beam's "
    "run; LOOPBACK here)",
    source=Source(
        "runners/spark/job-server/spark_job_server.gradle",
        "0eeb1322290c6f6166acd66ccf251520a8609ff5",
        "validatesPortableRunnerBatch (portableValidatesRunnerTask, batch)",
    ),
    exclude_categories=_cats(
        "UsesSdkHarnessEnvironment",
        "FlattenWithHeterogeneousCoders",
        "LargeKeys$Above100MB",
        "UsesCommittedMetrics",
        "UsesCustomWindowMerging",
        "UsesFailureMessage",
        "UsesGaugeMetrics",
        "UsesPerKeyOrderedDelivery",
        "UsesPerKeyOrderInBundle",
        "UsesParDoLifecycle",
        "UsesMapState",
        "UsesSetState",
        "UsesOrderedListState",
        "UsesTimerMap",
        "UsesLoopingTimer",
        "UsesUnboundedPCollections",
        "UsesKeyInParDo",
        "UsesOnWindowExpiration",
        "UsesTestStream",
        "UsesBoundedSplittableParDo",
        "UsesUnboundedSplittableParDo",
        "UsesStrictTimerOrdering",
        "UsesBundleFinalizer",
    ),
    exclude_tests=(
        ("org.apache.beam.sdk.transforms.FlattenTest.testFlattenWithDifferentInputAndOutputCoders2", "BEAM-10094"),
        # the task's sickbay list
        ("org.apache.beam.sdk.transforms.ParDoTest$TimestampTests.testProcessElementSkew", "BEAM-13498"),
    ),
)

# --java-vr-selection all: what no target of the kit can be given, and what Beam's own Java client or
# harness (the release the tests run with) refuses on any runner; each reason says where it was read.
ALL_EXCLUDED = {
    BEAM + "UsesExternalService": "needs an external service beside the runner (the cross-language tests "
    "expect a Java or Python expansion service at an address given to the test JVM)",
    BEAM + "UsesSdkHarnessEnvironment": "checks the SDK harness's own environment (Beam runs these only in its "
    "DOCKER tasks); with LOOPBACK the harness is the test JVM itself",
    BEAM + "UsesJavaExpansionService": "needs Beam's Java expansion service (cross-language)",
    BEAM + "UsesPythonExpansionService": "needs Beam's Python expansion service (cross-language)",
    BEAM + "UsesCommittedMetrics": "needs a Java client that reads committed metrics: Beam's PortableRunner "
    "(PortableMetrics, 2.65.0) reads the Job API's attempted and committed MonitoringInfos alike as results "
    "without a committed value, so MetricResult.getCommitted() throws whatever the runner reports (the same "
    "conversion as apache/beam#32001); the Python cases metrics/committed_* judge a runner's committed metrics",
    BEAM + "UsesMultimapState": "needs a Java SDK harness that binds MultimapState: Beam's (2.65.0, and 2.62.0 "
    "for the job servers of that release) refuses it whatever the runner does, FnApiStateAccessor.bindMultimap "
    'throwing UnsupportedOperationException("Multimap is not currently supported with Fn API."), its comment '
    "pointing to apache/beam#23616 (read in beam-sdks-java-harness-2.65.0-sources.jar and -2.62.0-sources.jar, "
    "FnApiStateAccessor.java); Beam's ULR, Flink and Prism tasks exclude the category too",
}

ALL = Profile(
    name="all",
    description="every ValidatesRunner test but those needing an environment the kit cannot give or what "
    "Beam's Java client or harness refuses on any runner",
    source=None,
    exclude_categories=tuple(ALL_EXCLUDED),
)

PROFILES = {p.name: p for p in (PORTABLE, FLINK_BATCH, FLINK_STREAMING, PRISM, SPARK_JOB_SERVER_BATCH)}
SELECTIONS = ("beam", "all")


def _regex(pattern: str) -> re.Pattern:
    return re.compile("".join(".*" if ch == "*" else re.escape(ch) for ch in pattern) + r"\Z")


def pattern_matches(pattern: str, class_name: str, method: str) -> bool:
    """Does a Gradle excludeTestsMatching pattern name this test (see the module's docstring)?"""
    regex = _regex(pattern)
    names = [class_name]
    if pattern[:1].isupper():
        names.append(class_name.rsplit(".", 1)[-1])
    return any(regex.match(f"{n}.{method}") or regex.match(n) for n in names)


def left_out(profile: Profile, class_name: str, method: str, categories: frozenset[str] | set[str]) -> str | None:
    """Why the profile leaves this test out (None: it runs). ``categories`` holds every category of
    the test and of its class with all their super-interfaces, so membership is JUnit's assignability."""
    cite = profile.cite()
    if not any(c in categories for c in profile.include_categories):
        return f"not in {profile.name} selection: none of its categories is included ({cite})"
    for category in profile.exclude_categories:
        if category in categories:
            short = category.removeprefix(BEAM)
            why = ALL_EXCLUDED.get(category) if profile is ALL else None
            return f"left out by the {profile.name} selection: category {short}" + (
                f": {why}" if why else f" excluded ({cite})"
            )
    for pattern, issue in profile.exclude_tests:
        if pattern_matches(pattern, class_name, method):
            ref = f", issue {issue if issue.startswith('BEAM-') else 'apache/beam#' + issue}" if issue else ""
            return f"left out by the {profile.name} selection: excluded by name {pattern} ({cite}{ref})"
    return None
