"""Metrics: counters, distributions, gauges, string sets and bounded tries read back from the
pipeline result (SEMANTICS 8). (Histograms: see metrics.histograms in capabilities.py.)

Metrics are reported per step (the transform's full name) and per namespace and name. Attempted
values include retried work; committed values count every successful bundle once. With no
failures, both equal the exact totals below. Bundle counts are up to the runner, so values
written in start_bundle/finish_bundle are checked by relations that hold for any bundling.
"""

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.metrics.execution import MetricKey
from apache_beam.metrics.metric import MetricResults, MetricsFilter
from apache_beam.transforms.timeutil import TimeDomain
from apache_beam.transforms.userstate import TimerSpec, on_timer

from conformance.api import capability, check, created, grouped, sorted_groups

NS = "conformance.metrics"
JAVA_INPUT = [5, 8, 13]  # the Java MetricsTest input: sum 26, count 3, min 5, max 13


def per_step(result, kind, name, step, namespace=NS, committed=False):
    """The one value of metric ``name`` reported by ``step`` (matched the way MetricsFilter.with_step
    matches: as a sub-path of the full step name). Attempted by default, committed on request.

    The model leaves the format of a reported step to the runner: the transform's full name, or its
    id in the pipeline proto (the Fn API's PTRANSFORM label); RunResult.step_name reads both as the
    full name. A step the runner left out (None) matches no step."""
    wanted = MetricsFilter().with_name(name).with_namespace(namespace).with_step(step)

    def at_step(m):
        full = result.step_name(m.key.step)
        return full is not None and MetricResults.matches(wanted, MetricKey(full, m.key.metric, m.key.labels))

    found = [m for m in result.metrics[kind] if at_step(m)]
    reported = sorted(
        {(str(m.key.step), m.key.metric.namespace, m.key.metric.name) for m in result.metrics[kind]},
    )
    assert len(found) == 1, f"expected one {kind[:-1]} {namespace}:{name} at step {step!r}; reported: {reported}"
    m = found[0]
    value = m.committed if committed else (m.attempted if m.attempted is not None else m.committed)
    assert value is not None, f"{namespace}:{name} at {step!r} has no {'committed' if committed else 'attempted'} value"
    return value


def as_tuple(distribution):
    return distribution.sum, distribution.count, distribution.min, distribution.max


class JavaVectorStep(beam.DoFn):
    """Per element: counter "count" += 1 and distribution "input" <- element, ``times`` times;
    gauge "my-gauge" <- 12; distribution "bundle" <- 10 in start_bundle and 40 in finish_bundle."""

    def __init__(self, times=1):
        self.times = times
        self.count = Metrics.counter(NS, "count")
        self.input = Metrics.distribution(NS, "input")
        self.gauge = Metrics.gauge(NS, "my-gauge")
        self.bundle = Metrics.distribution(NS, "bundle")

    def start_bundle(self):
        self.bundle.update(10)

    def process(self, element):
        for _ in range(self.times):
            self.count.inc()
            self.input.update(element)
        self.gauge.set(12)
        yield element

    def finish_bundle(self):
        self.bundle.update(40)


def java_vector_pipeline(runner):
    """Create(5, 8, 13) -> MyStep1 (each metric once per element) -> MyStep2 (twice per element)."""
    p = runner.pipeline()
    out = (
        p
        | beam.Create(JAVA_INPUT)
        | "MyStep1" >> beam.ParDo(JavaVectorStep(times=1))
        | "MyStep2" >> beam.ParDo(JavaVectorStep(times=2))
    )
    check(out, created(JAVA_INPUT))
    return p


@capability("metrics.counters")
def test_counter_counts_processed_elements(runner):
    # A counter incremented once per element reports the element count (SEMANTICS 8).
    counter = Metrics.counter(NS, "elements")

    def count(x):
        counter.inc()
        return x

    p = runner.pipeline()
    check(p | beam.Create(["a", "b", "c", "d"]) | beam.Map(count), created(["a", "b", "c", "d"]))
    result = runner.run(p)
    assert result.counter("elements", namespace=NS) == 4


@capability("metrics.counters")
def test_java_vector_counter_per_step(runner):
    # SEMANTICS 8 (Java MetricsTest): counter "count" = 3 at MyStep1 and 6 at MyStep2; 9 in all.
    result = runner.run(java_vector_pipeline(runner))
    assert per_step(result, "counters", "count", "MyStep1") == 3
    assert per_step(result, "counters", "count", "MyStep2") == 6
    assert result.counter("count", namespace=NS) == 9


@capability("metrics.counters")
def test_counters_in_start_and_finish_bundle(runner):
    # Counters written in start/finish_bundle are reported: one start and one finish per bundle,
    # and the per-bundle element counts added in finish_bundle sum to the input size (SEMANTICS 8).
    class CountPerBundle(beam.DoFn):
        def start_bundle(self):
            self.seen = 0
            Metrics.counter(NS, "bundles_started").inc()

        def process(self, x):
            self.seen += 1
            yield x

        def finish_bundle(self):
            Metrics.counter(NS, "bundles_finished").inc()
            Metrics.counter(NS, "elements_in_bundles").inc(self.seen)

    p = runner.pipeline()
    check(p | beam.Create(list(range(7))) | beam.ParDo(CountPerBundle()), created(range(7)))
    result = runner.run(p)
    started = result.counter("bundles_started", namespace=NS)
    assert started >= 1
    assert result.counter("bundles_finished", namespace=NS) == started
    assert result.counter("elements_in_bundles", namespace=NS) == 7


@capability("metrics.counters")
def test_same_name_in_two_namespaces_is_two_metrics(runner):
    # Metrics are identified by namespace and name: a namespace filter separates equal names (SEMANTICS 8).
    def counted(namespace):
        counter = Metrics.counter(namespace, "hits")

        def fn(x):
            counter.inc()
            return x

        return fn

    p = runner.pipeline()
    values = p | beam.Create([1, 2, 3])
    check(values | "A" >> beam.Map(counted(NS + ".a")), created([1, 2, 3]), label="a")
    check(
        values | "B" >> beam.Filter(lambda x: x > 1) | "B2" >> beam.Map(counted(NS + ".b")), created([2, 3]), label="b"
    )
    result = runner.run(p)
    assert result.counter("hits", namespace=NS + ".a") == 3
    assert result.counter("hits", namespace=NS + ".b") == 2


@capability("metrics.counters")
def test_same_name_in_two_steps_reports_each_step(runner):
    # One namespace and name in two steps: each step reports its own value; they add up (SEMANTICS 8).
    class Hit(beam.DoFn):
        def __init__(self):
            self.counter = Metrics.counter(NS, "shared")

        def process(self, x):
            self.counter.inc()
            yield x

    p = runner.pipeline()
    out = (
        p
        | beam.Create([("k", 1), ("k", 2), ("j", 3), ("k", 4)])
        | "BeforeGroup" >> beam.ParDo(Hit())
        | beam.GroupByKey()
        | sorted_groups()
        | "AfterGroup" >> beam.ParDo(Hit())
    )
    check(out, grouped([("k", [1, 2, 4]), ("j", [3])]))
    result = runner.run(p)
    assert per_step(result, "counters", "shared", "BeforeGroup") == 4
    assert per_step(result, "counters", "shared", "AfterGroup") == 2
    assert result.counter("shared", namespace=NS) == 6


@capability("metrics.counters")
def test_counter_increments_and_decrements(runner):
    # inc(n) and dec(n) add up: per element +5 then -2 gives 3 per element (SEMANTICS 8).
    counter = Metrics.counter(NS, "net")

    def adjust(x):
        counter.inc(5)
        counter.dec(2)
        return x

    p = runner.pipeline()
    check(p | beam.Create([1, 2]) | beam.Map(adjust), created([1, 2]))
    result = runner.run(p)
    assert result.counter("net", namespace=NS) == 6


@capability("metrics.counters")
def test_counter_never_incremented_reports_no_count(runner):
    # A declared but never incremented counter has no count: absent, or reported as 0, never more (SEMANTICS 8).
    class Declares(beam.DoFn):
        def __init__(self):
            self.unused = Metrics.counter(NS, "never")
            self.used = Metrics.counter(NS, "always")

        def process(self, x):
            self.used.inc()
            yield x

    p = runner.pipeline()
    check(p | beam.Create([1, 2, 3]) | beam.ParDo(Declares()), created([1, 2, 3]))
    result = runner.run(p)
    assert result.counter("always", namespace=NS) == 3
    never = [m for m in result.metrics["counters"] if m.key.metric.namespace == NS and m.key.metric.name == "never"]
    assert all((m.attempted or 0) == 0 and (m.committed or 0) == 0 for m in never), never


@capability("metrics.distributions")
def test_java_vector_distribution_per_step(runner):
    # SEMANTICS 8: distribution "input" = sum 26, count 3, min 5, max 13 at MyStep1; 52/6/5/13 at MyStep2.
    result = runner.run(java_vector_pipeline(runner))
    assert as_tuple(per_step(result, "distributions", "input", "MyStep1")) == (26, 3, 5, 13)
    assert as_tuple(per_step(result, "distributions", "input", "MyStep2")) == (52, 6, 5, 13)
    assert result.distribution("input", namespace=NS) == (78, 9, 5, 13)


@capability("metrics.distributions")
def test_java_vector_bundle_distribution(runner):
    # SEMANTICS 8: "bundle" gets 10 in start_bundle and 40 in finish_bundle: min 10, max 40,
    # and as many 10s as 40s, whatever the bundling.
    result = runner.run(java_vector_pipeline(runner))
    for step in ("MyStep1", "MyStep2"):
        total, count, low, high = as_tuple(per_step(result, "distributions", "bundle", step))
        assert (low, high) == (10, 40), step
        assert count >= 2 and count % 2 == 0 and total == 25 * count, (step, total, count)


@capability("metrics.distributions")
def test_distribution_of_negative_and_repeated_values(runner):
    # A distribution keeps exact sum, count, min and max, including negative and repeated values (SEMANTICS 8).
    dist = Metrics.distribution(NS, "spread")

    def record(x):
        dist.update(x)
        return x

    values = [-7, 0, 3, 3, 12]
    p = runner.pipeline()
    check(p | beam.Create(values) | beam.Map(record), created(values))
    result = runner.run(p)
    assert result.distribution("spread", namespace=NS) == (11, 5, -7, 12)


@capability("metrics.gauges")
def test_java_vector_gauge(runner):
    # SEMANTICS 8: gauge "my-gauge" set to 12 reports 12 at each step.
    result = runner.run(java_vector_pipeline(runner))
    assert per_step(result, "gauges", "my-gauge", "MyStep1").value == 12
    assert per_step(result, "gauges", "my-gauge", "MyStep2").value == 12
    assert result.gauge("my-gauge", namespace=NS) == 12


@capability("metrics.gauges")
def test_gauge_reports_the_last_value_set(runner):
    # A gauge reports its latest value, not a sum or a maximum: 30 then 7 reports 7 (SEMANTICS 8).
    gauge = Metrics.gauge(NS, "latest")

    def set_twice(x):
        gauge.set(30)
        gauge.set(7)
        return x

    p = runner.pipeline()
    check(p | beam.Create(["only"]) | beam.Map(set_twice), created(["only"]))
    result = runner.run(p)
    assert result.gauge("latest", namespace=NS) == 7


@capability("metrics.committed")
def test_committed_counter_per_step(runner):
    # SEMANTICS 8: with no retries, committed "count" = 3 at MyStep1 and 6 at MyStep2.
    result = runner.run(java_vector_pipeline(runner))
    assert per_step(result, "counters", "count", "MyStep1", committed=True) == 3
    assert per_step(result, "counters", "count", "MyStep2", committed=True) == 6
    assert result.counter("count", namespace=NS, committed=True) == 9


@capability("metrics.committed")
def test_committed_distribution_per_step(runner):
    # SEMANTICS 8: committed "input" = 26/3/5/13 at MyStep1 and 52/6/5/13 at MyStep2.
    result = runner.run(java_vector_pipeline(runner))
    assert as_tuple(per_step(result, "distributions", "input", "MyStep1", committed=True)) == (26, 3, 5, 13)
    assert as_tuple(per_step(result, "distributions", "input", "MyStep2", committed=True)) == (52, 6, 5, 13)


@capability("metrics.committed")
def test_committed_gauge(runner):
    # SEMANTICS 8: committed gauge "my-gauge" = 12.
    result = runner.run(java_vector_pipeline(runner))
    assert per_step(result, "gauges", "my-gauge", "MyStep1", committed=True).value == 12
    assert result.gauge("my-gauge", namespace=NS, committed=True) == 12


# --------------------------------------------------------------------------- string sets, bounded tries


class _RecordInProcessAndTimer(beam.DoFn):
    """Per element, adds ``process-<key>`` to a StringSet and the path (key, "process", value) to a
    BoundedTrie; a timer per key adds ``timer-<key>`` and (key, "timer"). A timer fires in a later
    bundle than the one that set it on every portable runner, so each metric is reported by at least
    two bundles of the step and the result must merge them."""

    REPORT = TimerSpec("report", TimeDomain.WATERMARK)

    def __init__(self):
        self.labels = Metrics.string_set(NS, "labels")
        self.paths = Metrics.bounded_trie(NS, "paths")

    def process(self, kv, report=beam.DoFn.TimerParam(REPORT)):
        key, value = kv
        self.labels.add(f"process-{key}")
        self.paths.add([key, "process", value])
        report.set(100)
        yield kv

    @on_timer(REPORT)
    def on_report(self, key=beam.DoFn.KeyParam):
        self.labels.add(f"timer-{key}")
        self.paths.add([key, "timer"])


_KEYED = [("a", "x"), ("b", "y"), ("a", "x"), ("a", "z")]


def _recording_pipeline(runner):
    p = runner.pipeline()
    out = p | beam.Create(_KEYED) | "Record" >> beam.ParDo(_RecordInProcessAndTimer())
    check(out, created(_KEYED))
    return p


@capability("metrics.string_sets")
def test_string_set_is_union_over_bundles(runner):
    # A StringSet reports each distinct string added once, whatever bundle added it: here process()
    # and timer callbacks of one step, which run in different bundles (SEMANTICS 8).
    result = runner.run(_recording_pipeline(runner))
    expected = {"process-a", "process-b", "timer-a", "timer-b"}
    assert per_step(result, "string_sets", "labels", "Record") == expected
    assert result.string_set("labels", namespace=NS) == expected


@capability("metrics.string_sets")
def test_string_sets_per_step_and_namespace(runner):
    # Like every metric, a StringSet is reported per step, namespace and name: two steps adding under
    # one name report their own sets, a second namespace its own (SEMANTICS 8).
    def adder(namespace, prefix):
        labels = Metrics.string_set(namespace, "seen")

        def add(x):
            labels.add(f"{prefix}{x}")
            return x

        return add

    p = runner.pipeline()
    values = p | beam.Create(["u", "v", "u"])
    check(values | "First" >> beam.Map(adder(NS, "1")), created(["u", "v", "u"]), label="first")
    check(
        values | "Second" >> beam.Map(adder(NS, "2")) | "Other" >> beam.Map(adder(NS + ".other", "o")),
        created(["u", "v", "u"]),
        label="second",
    )
    result = runner.run(p)
    assert per_step(result, "string_sets", "seen", "First") == {"1u", "1v"}
    assert per_step(result, "string_sets", "seen", "Second") == {"2u", "2v"}
    assert result.string_set("seen", namespace=NS) == {"1u", "1v", "2u", "2v"}
    assert result.string_set("seen", namespace=NS + ".other") == {"ou", "ov"}


@capability("metrics.bounded_tries")
def test_bounded_trie_holds_every_path_added_over_bundles(runner):
    # A BoundedTrie within its bound (100 paths) reports every distinct path added, untruncated
    # (each as its segments followed by the flag False), whatever bundle added it (SEMANTICS 8).
    result = runner.run(_recording_pipeline(runner))
    expected = {
        ("a", "process", "x", False),
        ("a", "process", "z", False),
        ("b", "process", "y", False),
        ("a", "timer", False),
        ("b", "timer", False),
    }
    trie = per_step(result, "bounded_tries", "paths", "Record")
    assert trie.get_result() == expected, trie.get_result()
    assert result.bounded_trie("paths", namespace=NS) == expected
