"""Which capability of the kit's taxonomy (conformance/capabilities.py) a Java ValidatesRunner test
counts under, so its verdict lands in a row of the matrix like a Python case's.

1. Its Beam categories first, the most specific one that places it (CATEGORY_PRECEDENCE). A
   category places a test at the first capability whose ``beam_category`` names it (taxonomy order,
   Beam's library composites left out), or, for the categories the taxonomy does not name, at the
   capability EXTRA_CATEGORIES gives. The generic categories (ValidatesRunner, NeedsRunner,
   UsesSchema, ...) place nothing.
2. Else its class: CLASS_TABLE, by the class's full name (nested classes with ``$``), else by its
   outermost class.
3. Side inputs (UsesSideInputs, or the side-input test classes) are refined by the method's name
   (SIDE_INPUT_KINDS), so ViewTest's map tests count under the dict row's capability and so on.

A test nothing places is an error at collection naming it: a new Beam release cannot slip tests
into no row.
"""

from __future__ import annotations

from conformance import capabilities

BEAM = "org.apache.beam.sdk.testing."

# Most specific first: a stateful timer test counts under timers, a TestStream test of timers too.
CATEGORY_PRECEDENCE = tuple(
    BEAM + name
    for name in (
        "UsesSdkHarnessEnvironment",
        "UsesBundleFinalizer",
        "UsesOnWindowExpiration",
        "UsesRequiresTimeSortedInput",
        "UsesOrderedListState",
        "UsesMultimapState",
        "UsesMapState",
        "UsesSetState",
        "UsesTimerMap",
        "UsesLoopingTimer",
        "UsesStrictTimerOrdering",
        "UsesProcessingTimeTimers",
        "UsesTestStreamWithProcessingTime",
        "UsesTriggeredSideInputs",
        "UsesCustomWindowMerging",
        "UsesUnboundedSplittableParDo",
        "UsesBoundedSplittableParDo",
        "UsesCommittedMetrics",
        "UsesStringSetMetrics",
        "UsesBoundedTrieMetrics",
        "UsesGaugeMetrics",
        "UsesDistributionMetrics",
        "UsesCounterMetrics",
        "UsesAttemptedMetrics",
        "UsesFailureMessage",
        "UsesParDoLifecycle",
        "UsesTimersInParDo",
        "UsesStatefulParDo",
        "UsesSideInputs",
        "UsesTestStream",
        "FlattenWithHeterogeneousCoders",
        "LargeKeys$Above10KB",
    )
)

# Beam categories the taxonomy names no capability for.
EXTRA_CATEGORIES = {
    BEAM + "UsesSdkHarnessEnvironment": "pardo.basic",
    BEAM + "UsesMultimapState": "state.map",
    BEAM + "UsesBoundedTrieMetrics": "metrics.bounded_tries",
    BEAM + "UsesGaugeMetrics": "metrics.gauges",
    BEAM + "UsesDistributionMetrics": "metrics.distributions",
    BEAM + "UsesCounterMetrics": "metrics.counters",
    # LargeKeys$Above100KB ... $Above100MB all extend it
    BEAM + "LargeKeys$Above10KB": "gbk.large_values",
}

# Classes whose tests no category places (and defaults for the others), by their full name or
# their outermost class's.
_T = "org.apache.beam.sdk.transforms."
CLASS_TABLE = {
    "org.apache.beam.sdk.PipelineTest": "pardo.basic",
    "org.apache.beam.sdk.SdkHarnessEnvironmentTest": "pardo.basic",
    # Read.from(BoundedSource): a splittable DoFn over the source's splits in a portable pipeline
    "org.apache.beam.sdk.io.CountingSourceTest": "sdf.initial_splits",
    "org.apache.beam.sdk.metrics.MetricsTest": "metrics.counters",
    # PAssert itself: element checks over a PCollection gathered by key in the global window
    "org.apache.beam.sdk.testing.PAssertTest": "pardo.basic",
    "org.apache.beam.sdk.testing.TestStreamTest": "teststream",
    _T + "CombineFnsTest": "combine.per_key",
    _T + "CombineTest": "combine.per_key",
    _T + "CreateTest": "impulse",
    _T + "FlattenTest": "flatten.basic",
    _T + "GroupByKeyTest": "gbk.global",
    _T + "GroupByKeyTest$WindowTests": "gbk.fixed",
    _T + "GroupIntoBatchesTest": "library.group_into_batches",
    _T + "ImpulseTest": "impulse",
    _T + "KeysTest": "pardo.basic",
    _T + "KvSwapTest": "pardo.basic",
    _T + "MapElementsTest": "pardo.basic",
    _T + "MapViewTest": "side_inputs.dict",
    _T + "ParDoLifecycleTest": "pardo.lifecycle",
    _T + "ParDoSchemaTest": "pardo.basic",
    _T + "ParDoTest": "pardo.basic",
    _T + "ParDoTest$LifecycleTests": "pardo.lifecycle",
    _T + "ParDoTest$MultipleInputsAndOutputTests": "pardo.multi_output",
    _T + "ParDoTest$KeyTests": "pardo.element_context",
    _T + "ParDoTest$TimestampTests": "window.timestamp_control",
    _T + "PerKeyOrderingTest": "pardo.basic",
    _T + "RedistributeTest": "reshuffle",
    _T + "ReshuffleTest": "reshuffle",
    _T + "ReifyTimestampsTest": "library.reify",
    _T + "SplittableDoFnTest": "sdf.initial_splits",
    _T + "ViewTest": "side_inputs.singleton",
    _T + "WithTimestampsTest": "window.timestamp_control",
    _T + "join.CoGroupByKeyTest": "library.co_group_by_key",
    _T + "windowing.WindowTest": "window.rewindow",
    _T + "windowing.WindowingTest": "gbk.fixed",
    # Beam's cross-language tests: each names the primitive it sends through an expansion service
    "org.apache.beam.sdk.util.construction.ValidateRunnerXlangTest": "pardo.basic",
    "org.apache.beam.sdk.util.construction.ValidateRunnerXlangTest$CoGroupByKeyTest": "library.co_group_by_key",
    "org.apache.beam.sdk.util.construction.ValidateRunnerXlangTest$CombineGloballyTest": "combine.globally",
    "org.apache.beam.sdk.util.construction.ValidateRunnerXlangTest$CombinePerKeyTest": "combine.per_key",
    "org.apache.beam.sdk.util.construction.ValidateRunnerXlangTest$FlattenTest": "flatten.basic",
    "org.apache.beam.sdk.util.construction.ValidateRunnerXlangTest$GroupByKeyTest": "gbk.global",
    "org.apache.beam.sdk.util.construction.ValidateRunnerXlangTest$MultiInputOutputWithSideInputTest": (
        "pardo.multi_output"
    ),
    "org.apache.beam.sdk.util.construction.ValidateRunnerXlangTest$PartitionTest": "library.partition",
    "org.apache.beam.sdk.values.PCollectionRowTupleTest": "pardo.multi_output",
    "org.apache.beam.sdk.values.PCollectionTupleTest": "pardo.multi_output",
    "org.apache.beam.sdk.values.PDoneTest": "pardo.basic",
}

# Words in a side-input test's method name -> the side-input capability, first match wins.
SIDE_INPUT_KINDS = (
    ("multimap", "side_inputs.multimap"),
    ("map", "side_inputs.dict"),
    ("list", "side_inputs.list"),
    ("iterable", "side_inputs.iterable"),
    ("windowed", "side_inputs.windowed"),
    ("singleton", "side_inputs.singleton"),
)


def _by_category() -> dict[str, str]:
    placed: dict[str, str] = {}
    for cap in capabilities.CAPABILITIES:
        if cap.group == "library" or cap.beam_category == "ValidatesRunner":
            continue
        placed.setdefault(BEAM + cap.beam_category, cap.id)
    for category, cap_id in EXTRA_CATEGORIES.items():
        placed.setdefault(category, cap_id)
    return placed


CATEGORY_CAPABILITY = _by_category()


class Unplaced(LookupError):
    pass


def capability_of(class_name: str, method: str, categories) -> str:
    """The capability id a test counts under; Unplaced if nothing places it."""
    placed = None
    for category in CATEGORY_PRECEDENCE:
        if category in categories and category in CATEGORY_CAPABILITY:
            placed = CATEGORY_CAPABILITY[category]
            break
    if placed is None:
        placed = CLASS_TABLE.get(class_name) or CLASS_TABLE.get(class_name.split("$", 1)[0])
    if placed is None:
        raise Unplaced(
            f"java_vr/{class_name}.{method} (categories: {', '.join(sorted(c.removeprefix(BEAM) for c in categories))})"
        )
    if placed == "side_inputs.singleton":  # UsesSideInputs, ViewTest: refined by the method's name
        lowered = method.lower()
        for word, cap_id in SIDE_INPUT_KINDS:
            if word in lowered:
                return cap_id
    return placed


def _check() -> None:
    for cap_id in list(CATEGORY_CAPABILITY.values()) + list(CLASS_TABLE.values()) + [c for _, c in SIDE_INPUT_KINDS]:
        capabilities.get(cap_id)  # KeyError names a capability the taxonomy lost


_check()
