"""The capability taxonomy: the one source for markers, expectations and the matrix.

A capability is a fine-grained feature a case exercises (``state.bag``). Each one
belongs to a row of the capability matrix (the rows follow the Beam website's
matrix) and names the Beam ValidatesRunner category that tests the same thing,
so our verdicts line up with Beam's own exclusion lists. Adding a capability is
adding one entry to CAPABILITIES.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Section:
    anchor: str
    description: str


@dataclass(frozen=True)
class Row:
    name: str
    section: str
    description: str


@dataclass(frozen=True)
class Capability:
    id: str
    title: str
    row: str
    beam_category: str
    # Needs unbounded execution (TestStream, processing time, unbounded SDF).
    streaming: bool = False
    # Why no case can exercise it from a Python pipeline (empty: cases exist).
    untestable: str = ""
    # Cross-cutting properties (CROSS_CUTTING) that are this capability's own subject: a deviation
    # in them stays in this capability's row (e.g. batch count triggers: their point is EARLY panes).
    owns: tuple[str, ...] = ()

    @property
    def group(self) -> str:
        """The pytest marker that selects every capability of this family."""
        return self.id.split(".", 1)[0]


# Properties that many cases check on the way to their own subject. When a case's every deviation
# lies in one of them, the matrix counts the failure under the property's own capability, and the
# case's own row shows what the case is about: passed (everything else held) or not judged (the
# case could not get that far). One root cause then fails one row, not every row it touches.
PANE_METADATA = "pane metadata"
METRICS_REPORTING = "metrics reporting"
TEST_STREAM = "TestStream"
# How a runner that does not run TestStream refuses it: the job fails naming its URN, or naming
# the TestStream transform by its id in the submitted pipeline (authoring/case_runner.py, refuses_test_stream).
TEST_STREAM_URN = "beam:transform:teststream:v1"
# Every TestStream of the suite has a standard coder, except where a case declares python_only (why
# it needs values only the Python SDK can encode: conformance/authoring/streams.py). A runner of
# another SDK cannot decode such events; when its job fails saying so, the case could not judge its
# subject (authoring/case_runner.py, undecodable_test_stream). It says so when its error names a
# non-standard coder URN of that TestStream's coder tree, or one of these texts:
TEST_STREAM_PYTHON_ONLY = "TestStream of a Python-only coder"
# Two ways a runner's TestStream can fall short of SEMANTICS 9 that no error text shows, so a runner's
# expectations file names them (``lies_in``) for the cases whose failure they explain:
TEST_STREAM_ORDER = "TestStream event order"
TEST_STREAM_PROCESSING_TIME = "TestStream processing time"
DECODE_FAILURE_MARKERS = (
    # the Java SDK's stand-in for a coder it does not know, which fails when asked to decode:
    # "UnknownCoderWrapper was used to perform an actual decoding in the Java SDK" (Flink, Samza,
    # Beam's Spark job server; apache/beam#19934)
    "UnknownCoderWrapper",
)


@dataclass(frozen=True)
class CrossCutting:
    name: str
    capability: str  # where its deviations are counted
    description: str
    # Does the kit see a deviation in it from the runner's output or error (a case's failure then
    # names it)? The TestStream shortfalls no output shows are named by an expectations entry instead.
    detected: bool = True


CROSS_CUTTING = {
    c.name: c
    for c in (
        CrossCutting(
            PANE_METADATA,
            "panes.metadata",
            "output that is right in values, timestamps and windows, with wrong PaneInfo fields "
            "(first/last flags, timing, index)",
        ),
        CrossCutting(
            METRICS_REPORTING,
            "metrics.counters",
            "the runner reports no metrics at all, so a case that reads one cannot judge its own subject",
        ),
        CrossCutting(
            TEST_STREAM,
            "teststream",
            f"the runner refuses TestStream ({TEST_STREAM_URN}), so a streaming case built on one cannot "
            "judge its own subject",
        ),
        CrossCutting(
            TEST_STREAM_PYTHON_ONLY,
            "teststream",
            "the runner could not decode the events of a TestStream whose coder only the Python SDK "
            "knows (the case declared python_only, and why), so the case cannot judge its own subject",
        ),
        CrossCutting(
            TEST_STREAM_ORDER,
            "teststream",
            "the runner does not apply a TestStream's events one at a time, each once the pipeline has "
            "done all the previous ones made possible (SEMANTICS 9): elements of later events overtake "
            "earlier ones or a watermark advance, so a case whose subject depends on that order cannot "
            "judge it",
            detected=False,
        ),
        CrossCutting(
            TEST_STREAM_PROCESSING_TIME,
            "teststream",
            "the runner refuses or ignores a TestStream's processing-time advances (SEMANTICS 9), so a case "
            "about processing-time triggers or timers cannot judge them",
            detected=False,
        ),
    )
}


SECTIONS = [
    Section("what", "What is being computed?"),
    Section("where", "Where in event time?"),
    Section("when", "When in processing time?"),
    Section("how", "How do refinements relate?"),
    Section("sdf", "Splittable DoFn"),
    Section("misc", "Primitives, coders and plumbing"),
]

ROWS = [
    Row("ParDo", "what", "Element-wise user code with bundles and lifecycle hooks."),
    Row("GroupByKey", "what", "Grouping of key-value pairs per key, window and pane."),
    Row("Flatten", "what", "Union of several PCollections."),
    Row("Combine", "what", "Associative, commutative aggregation, globally or per key."),
    Row("Side Inputs", "what", "Extra PCollections visible to a DoFn, per window."),
    Row("Metrics", "what", "Counters, distributions and gauges read back from the result."),
    Row("Stateful Processing", "what", "Per-key, per-window state."),
    Row("Global windows", "where", "The single global window."),
    Row("Fixed windows", "where", "Fixed-size, non-overlapping windows."),
    Row("Sliding windows", "where", "Fixed-size, overlapping windows."),
    Row("Session windows", "where", "Merging windows separated by a gap."),
    Row("Custom windows", "where", "User-defined, non-merging WindowFns."),
    Row("Custom merging windows", "where", "User-defined WindowFns that merge windows."),
    Row("Timestamp control", "where", "Assigning and combining element timestamps."),
    Row("Event-time triggers", "when", "Firing as the watermark passes the end of a window."),
    Row("Processing-time triggers", "when", "Firing after a delay in processing time."),
    Row("Count triggers", "when", "Firing after a number of elements."),
    Row("Composite triggers", "when", "Repeatedly, AfterEach, AfterAny, AfterAll."),
    Row("Allowed lateness", "when", "Late panes within allowed lateness, dropping beyond it."),
    Row("Timers", "when", "Event-time and processing-time timers in a stateful DoFn."),
    Row("Discarding", "how", "Each pane holds only the elements since the last firing."),
    Row("Accumulating", "how", "Each pane holds every element of the window so far."),
    Row("Pane info", "how", "First/last flags, timing and indices of every pane."),
    Row("Bounded splittable DoFn", "sdf", "Initial splits and checkpoints over bounded restrictions."),
    Row("Unbounded splittable DoFn", "sdf", "Self-checkpointing and watermark estimation."),
    Row("Bundle finalization", "sdf", "Callbacks after a bundle is durably committed."),
    Row("Impulse", "misc", "The root primitive: one empty element."),
    Row("TestStream", "misc", "Scripted unbounded input: elements, watermark and processing-time advances."),
    Row("Reshuffle", "misc", "Redistribution that keeps windows and timestamps."),
    Row("Coders", "misc", "Standard coders round-trip through a shuffle."),
    Row("Library transforms", "misc", "Beam's own composite transforms give the results Beam documents."),
    Row(
        "Submitted pipelines",
        "misc",
        "Pipelines as SDKs submit them: pre-optimized, with user types the runner cannot import.",
    ),
]

_C = Capability
CAPABILITIES = [
    _C("impulse", "Impulse emits one empty element in the global window", "Impulse", "ValidatesRunner"),
    _C(
        "teststream",
        "TestStream's elements, watermark and processing-time advances reach the pipeline "
        "(also counts every streaming case a runner refuses because it does not run TestStream, "
        "or whose Python-only TestStream events it cannot decode)",
        "TestStream",
        "UsesTestStream",
        True,
    ),
    # ParDo
    _C("pardo.basic", "Map and FlatMap", "ParDo", "ValidatesRunner"),
    _C("pardo.multi_output", "Tagged outputs (declared, undeclared, empty)", "ParDo", "ValidatesRunner"),
    _C("pardo.element_context", "Timestamp, window and pane seen in process", "ParDo", "ValidatesRunner"),
    _C(
        "pardo.finish_bundle",
        "Outputs from finish_bundle with explicit timestamp and window",
        "ParDo",
        "ValidatesRunner",
    ),
    _C("pardo.lifecycle", "DoFn lifecycle order (setup, bundles, teardown)", "ParDo", "UsesParDoLifecycle"),
    _C(
        "pardo.failure",
        "A user exception (process, bundle methods, setup) fails the job and surfaces its message",
        "ParDo",
        "UsesFailureMessage",
    ),
    # Side inputs
    _C("side_inputs.singleton", "Singleton side input, with and without default", "Side Inputs", "UsesSideInputs"),
    _C("side_inputs.iterable", "Iterable side input", "Side Inputs", "UsesSideInputs"),
    _C("side_inputs.list", "List side input", "Side Inputs", "UsesSideInputs"),
    _C("side_inputs.dict", "Dict (map) side input", "Side Inputs", "UsesSideInputs"),
    _C("side_inputs.multimap", "Multimap side input", "Side Inputs", "UsesSideInputs"),
    _C("side_inputs.windowed", "Windowed side inputs and window mapping", "Side Inputs", "UsesSideInputs"),
    _C(
        "side_inputs.large",
        "An iterable side input of several MB, read whole and read again",
        "Side Inputs",
        "UsesSideInputs",
    ),
    _C("side_inputs.multiple", "Several side inputs with different coders", "Side Inputs", "UsesSideInputs"),
    _C(
        "side_inputs.readiness",
        "A side input computed downstream of a GroupByKey is complete when read",
        "Side Inputs",
        "UsesSideInputs",
    ),
    _C(
        "side_inputs.missing_window",
        "A side window with no data resolves to the default",
        "Side Inputs",
        "UsesSideInputs",
    ),
    # Side inputs in streaming (TestStream): per-window readiness and triggered side inputs.
    _C(
        "side_inputs.streaming_readiness",
        "A main element waits until its side window is ready (streaming)",
        "Side Inputs",
        "UsesTestStream",
        True,
    ),
    _C(
        "side_inputs.triggered",
        "Triggered side inputs: the DoFn sees the latest fired pane",
        "Side Inputs",
        "UsesTriggeredSideInputs",
        True,
    ),
    # GroupByKey
    _C("gbk.global", "GroupByKey in the global window", "GroupByKey", "ValidatesRunner"),
    _C("gbk.fixed", "GroupByKey over fixed windows", "Fixed windows", "ValidatesRunner"),
    _C("gbk.sliding", "GroupByKey over sliding windows", "Sliding windows", "ValidatesRunner"),
    _C("gbk.sessions", "GroupByKey over merging session windows", "Session windows", "ValidatesRunner"),
    _C("gbk.encoded_keys", "Grouping by encoded key bytes", "GroupByKey", "ValidatesRunner"),
    _C("gbk.large_values", "Large keys and values", "GroupByKey", "LargeKeys"),
    _C("gbk.empty", "GroupByKey of an empty input", "GroupByKey", "ValidatesRunner"),
    # Window
    _C("window.global", "Global windowing", "Global windows", "ValidatesRunner"),
    _C("window.rewindow", "Re-windowing an already windowed PCollection", "Fixed windows", "ValidatesRunner"),
    _C("window.timestamp_control", "Assigning element timestamps", "Timestamp control", "ValidatesRunner"),
    _C("window.custom", "A user-defined WindowFn", "Custom windows", "ValidatesRunner"),
    _C("window.custom_merging", "A user-defined merging WindowFn", "Custom merging windows", "UsesCustomWindowMerging"),
    # Flatten
    _C("flatten.basic", "Flatten of several inputs", "Flatten", "ValidatesRunner"),
    _C("flatten.same_input", "The same PCollection flattened several times", "Flatten", "ValidatesRunner"),
    _C("flatten.empty", "Flatten of zero inputs", "Flatten", "ValidatesRunner"),
    _C(
        "flatten.heterogeneous_coders",
        "Inputs whose coders differ from the output's",
        "Flatten",
        "FlattenWithHeterogeneousCoders",
    ),
    _C("flatten.into_gbk", "Flatten feeding a GroupByKey", "Flatten", "ValidatesRunner"),
    # Combine
    _C("combine.globally", "Combine globally", "Combine", "ValidatesRunner"),
    _C("combine.per_key", "Combine per key", "Combine", "ValidatesRunner"),
    _C("combine.lifted", "Combiner lifting keeps results exact", "Combine", "ValidatesRunner"),
    _C("combine.side_inputs", "CombineFn with side inputs", "Combine", "UsesSideInputs"),
    _C("combine.lifecycle", "CombineFn setup and teardown", "Combine", "ValidatesRunner"),
    _C(
        "combine.failure",
        "An exception in a CombineFn fails the job and surfaces its message",
        "Combine",
        "UsesFailureMessage",
    ),
    _C(
        "combine.timestamp_combiners",
        "Timestamp combiners: earliest, latest, end of window",
        "Timestamp control",
        "ValidatesRunner",
    ),
    # Lateness and triggers: driven by TestStream, so streaming.
    _C("lateness.allowed", "Late panes within allowed lateness", "Allowed lateness", "UsesTestStream", True),
    _C("lateness.dropping", "Data beyond allowed lateness is dropped", "Allowed lateness", "UsesTestStream", True),
    _C(
        "triggers.event_time",
        "AfterWatermark with early and late firings",
        "Event-time triggers",
        "UsesTestStream",
        True,
    ),
    _C("triggers.count", "AfterCount", "Count triggers", "UsesTestStream", True),
    _C(
        "triggers.processing_time",
        "AfterProcessingTime",
        "Processing-time triggers",
        "UsesTestStreamWithProcessingTime",
        True,
    ),
    _C("triggers.composite", "AfterAny, AfterAll, AfterEach, Repeatedly", "Composite triggers", "UsesTestStream", True),
    _C("triggers.accumulating", "Accumulating panes", "Accumulating", "UsesTestStream", True),
    _C("triggers.discarding", "Discarding panes", "Discarding", "UsesTestStream", True),
    _C("triggers.pane_info", "PaneInfo fields of fired panes", "Pane info", "UsesTestStream", True),
    _C(
        "panes.metadata",
        "PaneInfo of the panes a batch GroupByKey or Combine fires: one ON_TIME pane, first and last "
        "(also counts every case whose only deviation is pane metadata)",
        "Pane info",
        "ValidatesRunner",
    ),
    # Triggers in batch (no TestStream): what the model fixes whatever the bundling.
    _C(
        "triggers.batch_count",
        "Element-count triggers in batch: any EARLY panes, then one last ON_TIME pane",
        "Count triggers",
        "ValidatesRunner",
        owns=(PANE_METADATA,),
    ),
    _C("triggers.batch_accumulating", "Accumulating panes in batch nest", "Accumulating", "ValidatesRunner"),
    _C(
        "triggers.batch_discarding",
        "Discarding panes in batch are disjoint and hold every element once",
        "Discarding",
        "ValidatesRunner",
    ),
    # State
    _C("state.value", "ValueState (ReadModifyWrite)", "Stateful Processing", "UsesStatefulParDo"),
    _C("state.bag", "BagState", "Stateful Processing", "UsesStatefulParDo"),
    _C("state.combining", "CombiningState", "Stateful Processing", "UsesStatefulParDo"),
    _C("state.set", "SetState", "Stateful Processing", "UsesSetState"),
    _C("state.map", "MapState", "Stateful Processing", "UsesMapState"),
    _C("state.ordered_list", "OrderedListState", "Stateful Processing", "UsesOrderedListState"),
    _C(
        "state.windowed",
        "State partitioned per key and window and per transform",
        "Stateful Processing",
        "UsesStatefulParDo",
    ),
    _C("state.expiry", "State is cleared when its window expires", "Stateful Processing", "UsesStatefulParDo"),
    # Timers
    _C("timers.event_time", "Event-time timers", "Timers", "UsesTimersInParDo"),
    _C("timers.processing_time", "Processing-time timers", "Timers", "UsesProcessingTimeTimers", True),
    _C(
        "timers.processing_time_bounded",
        "Processing-time timers in a bounded pipeline (no TestStream): "
        "the runner's clock reaches them and the pipeline finishes",
        "Timers",
        "UsesProcessingTimeTimers",
    ),
    _C(
        "timers.strict_ordering",
        "Timers of a key fire one at a time in timestamp order",
        "Timers",
        "UsesStrictTimerOrdering",
    ),
    _C("timers.families", "Timer families (dynamic timer ids)", "Timers", "UsesTimerMap"),
    _C("timers.looping", "Looping timers", "Timers", "UsesLoopingTimer"),
    _C("timers.clear_reset", "Clearing and resetting timers", "Timers", "UsesTimersInParDo"),
    _C("timers.output_timestamp", "Timer output timestamps and watermark holds", "Timers", "UsesTimersInParDo"),
    _C("timers.on_window_expiration", "OnWindowExpiration", "Timers", "UsesOnWindowExpiration"),
    _C("timers.time_sorted_input", "Time-sorted input", "Timers", "UsesRequiresTimeSortedInput"),
    _C(
        "timers.failure",
        "An exception in a timer callback fails the job and surfaces its message",
        "Timers",
        "UsesFailureMessage",
    ),
    # Splittable DoFn
    _C(
        "sdf.initial_splits",
        "Initial splitting of bounded restrictions",
        "Bounded splittable DoFn",
        "UsesBoundedSplittableParDo",
    ),
    _C(
        "sdf.self_checkpoint",
        "Self-checkpointing and resumption",
        "Unbounded splittable DoFn",
        "UsesUnboundedSplittableParDo",
        True,
    ),
    _C(
        "sdf.watermark_estimation",
        "Watermark estimators",
        "Unbounded splittable DoFn",
        "UsesUnboundedSplittableParDo",
        True,
    ),
    _C(
        "sdf.failure",
        "An exception in a splittable DoFn or its restriction provider fails the job with its message",
        "Bounded splittable DoFn",
        "UsesFailureMessage",
    ),
    _C("sdf.bundle_finalization", "Bundle finalization callbacks", "Bundle finalization", "UsesBundleFinalizer"),
    # Metrics
    _C("metrics.counters", "Counters", "Metrics", "UsesAttemptedMetrics"),
    _C("metrics.distributions", "Distributions", "Metrics", "UsesAttemptedMetrics"),
    _C("metrics.gauges", "Gauges", "Metrics", "UsesAttemptedMetrics"),
    _C("metrics.committed", "Committed metric values", "Metrics", "UsesCommittedMetrics"),
    _C(
        "metrics.string_sets", "StringSet metrics: the set of distinct strings added", "Metrics", "UsesStringSetMetrics"
    ),
    _C(
        "metrics.bounded_tries",
        "BoundedTrie metrics: the paths added, within the trie's bound",
        "Metrics",
        "UsesAttemptedMetrics",
    ),
    _C(
        "metrics.histograms",
        "Histogram metrics",
        "Metrics",
        "UsesAttemptedMetrics",
        untestable="Beam 2.77's Python SDK harness reports no user histogram to the runner "
        "(HistogramCell.to_runner_api_monitoring_info returns None: worker-local, internal use) "
        "and PortableMetrics.query returns no histograms, so a Python pipeline cannot observe one",
    ),
    # Misc
    _C("reshuffle", "Reshuffle keeps elements, timestamps and windows", "Reshuffle", "ValidatesRunner"),
    _C("coders.standard", "Standard coders round-trip through GroupByKey", "Coders", "ValidatesRunner"),
    # Pipelines as SDKs really submit them
    _C(
        "shapes.pre_optimized",
        "Pipelines the SDK pre-optimized (packed/lifted combiners, expanded SDFs, "
        "transcoded Flattens, fused executable stages)",
        "Submitted pipelines",
        "ValidatesRunner",
    ),
    _C(
        "coders.opaque_user_types",
        "Keys, values and windows of user types the runner cannot import (carried as bytes, grouped by encoding)",
        "Submitted pipelines",
        "ValidatesRunner",
    ),
    _C(
        "coders.opaque_user_types.streaming",
        "User types from a TestStream",
        "Submitted pipelines",
        "UsesTestStream",
        True,
        # its subject is that the runner emits TestStream events of a user coder without decoding them
        owns=(TEST_STREAM_PYTHON_ONLY,),
    ),
    # Beam's library composites, as users apply them (expansions with state, timers, side inputs)
    _C(
        "library.group_into_batches",
        "GroupIntoBatches (plain, with_sharded_key, max_buffering_duration_secs)",
        "Library transforms",
        "UsesStatefulParDo",
    ),
    _C(
        "library.batch_elements",
        "BatchElements, stateful path (max_batch_duration_secs)",
        "Library transforms",
        "UsesStatefulParDo",
    ),
    _C(
        "library.combine_globally_default",
        "CombineGlobally with its default over triggered input and in "
        "non-global windows (without_defaults, as_singleton_view, the construction error)",
        "Library transforms",
        "UsesSideInputs",
    ),
    _C(
        "library.combine_globally_default_streaming",
        "CombineGlobally with its default over unbounded, triggered "
        "input (TestStream): the default injection sees one combined value",
        "Library transforms",
        "UsesTriggeredSideInputs",
        True,
    ),
    _C(
        "library.triggered_gbk_side_input",
        "A GroupByKey with a repeating trigger feeding a side input read per "
        "window: the latest fired pane of each window",
        "Library transforms",
        "UsesTriggeredSideInputs",
        True,
    ),
    _C(
        "library.reshuffle",
        "Reshuffle keeps the input's windowing strategy (custom WindowFn, timestamp combiner)",
        "Library transforms",
        "ValidatesRunner",
    ),
    _C(
        "library.reshuffle_streaming",
        "Reshuffle keeps the panes of triggered input (TestStream)",
        "Library transforms",
        "UsesTestStream",
        True,
    ),
    _C(
        "library.group_by_encrypted_key",
        "GroupByEncryptedKey (with a local RawSecret)",
        "Library transforms",
        "ValidatesRunner",
    ),
    _C(
        "library.deduplicate",
        "Deduplicate and DeduplicatePerKey (event-time and processing-time durations)",
        "Library transforms",
        "UsesTimersInParDo",
    ),
    _C(
        "library.deduplicate_streaming",
        "Deduplicate over a TestStream: copies within the duration dropped, a copy after the event-time duration kept",
        "Library transforms",
        "UsesTestStream",
        True,
    ),
    _C("library.distinct", "Distinct, per window", "Library transforms", "ValidatesRunner"),
    _C(
        "library.top",
        "Top.Of, Top.PerKey, Largest, Smallest (global, per key, per window, empty)",
        "Library transforms",
        "ValidatesRunner",
    ),
    _C("library.sample", "Sample.FixedSizeGlobally, FixedSizePerKey, Any", "Library transforms", "ValidatesRunner"),
    _C("library.latest", "Latest.Globally and Latest.PerKey", "Library transforms", "ValidatesRunner"),
    _C(
        "library.co_group_by_key",
        "CoGroupByKey (several inputs, empty inputs, windows)",
        "Library transforms",
        "ValidatesRunner",
    ),
    _C("library.partition", "Partition", "Library transforms", "ValidatesRunner"),
    _C(
        "library.reify",
        "Reify.Timestamp, Window, TimestampInValue, WindowInValue",
        "Library transforms",
        "ValidatesRunner",
    ),
    _C("library.with_keys", "WithKeys (constant, callable, side input)", "Library transforms", "ValidatesRunner"),
    _C(
        "library.log_elements",
        "LogElements passes elements through and logs them",
        "Library transforms",
        "ValidatesRunner",
    ),
    _C(
        "library.periodic_impulse",
        "PeriodicImpulse and PeriodicSequence without TestStream (unbounded SDF on the wall clock)",
        "Library transforms",
        "UsesUnboundedSplittableParDo",
        True,
    ),
]

BY_ID = {c.id: c for c in CAPABILITIES}
ROWS_BY_NAME = {r.name: r for r in ROWS}
GROUPS = sorted({c.group for c in CAPABILITIES})
# Markers that are not capability groups but select cases all the same.
EXTRA_MARKERS = {
    "streaming": "needs unbounded execution (TestStream, processing time, unbounded SDF)",
    "property": "property-based case checked against conformance.model",
}


def get(capability_id: str) -> Capability:
    try:
        return BY_ID[capability_id]
    except KeyError:
        known = ", ".join(sorted(BY_ID))
        raise KeyError(f"unknown capability {capability_id!r}; known capabilities: {known}") from None


def counts_elsewhere(cap: Capability, prop: str) -> Capability | None:
    """Where a case of ``cap`` whose every deviation lies in ``prop`` is counted as failing: the
    property's own capability, or None when the property is the case's own subject (its row
    holds the property, or the capability owns it)."""
    home = BY_ID[CROSS_CUTTING[prop].capability]
    if home.row == cap.row or prop in cap.owns:
        return None
    return home


def cross_cutting_named(name: str) -> CrossCutting:
    """A cross-cutting property by its name, or by the id of the capability it is counted under
    when that capability counts no other (``panes.metadata`` is pane metadata)."""
    if name in CROSS_CUTTING:
        return CROSS_CUTTING[name]
    counted_there = [c for c in CROSS_CUTTING.values() if c.capability == name]
    if len(counted_there) == 1:
        return counted_there[0]
    known = "; ".join(sorted(CROSS_CUTTING))
    if counted_there:
        raise KeyError(f"{name!r} counts several properties; name one: {known}")
    raise KeyError(f"no cross-cutting property is named {name!r}; known: {known}")


def _check_consistency() -> None:
    sections = {s.anchor for s in SECTIONS}
    for row in ROWS:
        assert row.section in sections, row
    for cap in CAPABILITIES:
        assert cap.row in ROWS_BY_NAME, cap
    assert len(BY_ID) == len(CAPABILITIES), "duplicate capability id"
    for prop in CROSS_CUTTING.values():
        assert prop.capability in BY_ID, prop
    for cap in CAPABILITIES:
        assert set(cap.owns) <= set(CROSS_CUTTING), cap


_check_consistency()
