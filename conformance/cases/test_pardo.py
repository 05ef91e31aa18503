"""ParDo: element-wise user code, tagged outputs, element context, bundles and lifecycle.

Expectations follow conformance/SEMANTICS.md sections 4, 5 and 8 and the Beam programming guide.
Bundle boundaries are chosen by the runner, so no case depends on how elements are
bundled: per-bundle outputs are checked through their sum, never their number.
"""

import json
import os
import uuid

import apache_beam as beam
from apache_beam.transforms import window
from apache_beam.utils.timestamp import Timestamp
from apache_beam.utils.windowed_value import PaneInfoTiming, WindowedValue

from conformance.api import (
    GLOBAL,
    MIN_TIMESTAMP,
    NO_FIRING,
    W,
    capability,
    check,
    created,
    el,
    grouped,
    satisfies,
    value_at_time,
)

_TIMING = {
    PaneInfoTiming.EARLY: "EARLY",
    PaneInfoTiming.ON_TIME: "ON_TIME",
    PaneInfoTiming.LATE: "LATE",
    PaneInfoTiming.UNKNOWN: "UNKNOWN",
}


# ---------------------------------------------------------------------------
# pardo.basic


@capability("pardo.basic")
def test_map_applies_function_to_every_element(runner):
    # ParDo basics: Map emits exactly one output per input (SEMANTICS 10).
    p = runner.pipeline()
    check(p | beam.Create([1, 2, 3, 3]) | beam.Map(lambda x: x * 10), created([10, 20, 30, 30]))
    runner.run(p)


@capability("pardo.basic")
def test_flatmap_zero_one_and_many_outputs(runner):
    # FlatMap: each input yields any number of outputs, including none (SEMANTICS 10).
    p = runner.pipeline()
    out = p | beam.Create([0, 1, 3]) | beam.FlatMap(lambda n: [n] * n)
    check(out, created([1, 3, 3, 3]))
    runner.run(p)


@capability("pardo.basic")
def test_flatmap_emitting_nothing_gives_empty_output(runner):
    # A ParDo whose every call emits nothing produces an empty PCollection (SEMANTICS 10).
    p = runner.pipeline()
    check(p | beam.Create([1, 2, 3]) | beam.FlatMap(lambda x: []), [])
    runner.run(p)


@capability("pardo.basic")
def test_flatmap_generator_many_outputs(runner):
    # FlatMap accepts a generator; one input may fan out to many outputs (SEMANTICS 10).
    def expand(n):
        for i in range(n):
            yield (n, i)

    p = runner.pipeline()
    out = p | beam.Create([2, 50]) | beam.FlatMap(expand)
    check(out, created([(2, 0), (2, 1)] + [(50, i) for i in range(50)]))
    runner.run(p)


class _SplitWords(beam.DoFn):
    def __init__(self, separator):
        self._separator = separator

    def process(self, line, suffix):
        for word in line.split(self._separator):
            if word:
                yield word + suffix


@capability("pardo.basic")
def test_pardo_with_dofn_class_and_arguments(runner):
    # ParDo with a DoFn class: constructor state and extra process arguments reach every call (SEMANTICS 10).
    p = runner.pipeline()
    out = p | beam.Create(["a,b", ",c,", ""]) | beam.ParDo(_SplitWords(","), "!")
    check(out, created(["a!", "b!", "c!"]))
    runner.run(p)


@capability("pardo.basic")
def test_maptuple_and_flatmaptuple_unpack_elements(runner):
    # MapTuple/FlatMapTuple unpack each tuple element into positional arguments (SEMANTICS 10).
    p = runner.pipeline()
    pairs = p | beam.Create([("a", 1), ("b", 2)])
    check(pairs | beam.MapTuple(lambda k, v: f"{k}={v}"), created(["a=1", "b=2"]), label="maptuple")
    check(pairs | beam.FlatMapTuple(lambda k, v: [k] * v), created(["a", "b", "b"]), label="flatmaptuple")
    runner.run(p)


@capability("pardo.basic")
def test_filter_keeps_matching_elements(runner):
    # Filter keeps exactly the elements for which the predicate is true (duplicates included; SEMANTICS 10).
    p = runner.pipeline()
    out = p | beam.Create([1, 2, 3, 4, 4, 5]) | beam.Filter(lambda x: x % 2 == 0)
    check(out, created([2, 4, 4]))
    runner.run(p)


@capability("pardo.basic")
def test_chained_pardos_and_fanout_of_one_input(runner):
    # One PCollection consumed by two ParDos: each consumer sees every element (SEMANTICS 10).
    p = runner.pipeline()
    src = p | beam.Create([1, 2, 3])
    check(
        src | "Double" >> beam.Map(lambda x: 2 * x) | "Inc" >> beam.Map(lambda x: x + 1),
        created([3, 5, 7]),
        label="chain",
    )
    check(src | "Neg" >> beam.Map(lambda x: -x), created([-1, -2, -3]), label="fanout")
    runner.run(p)


# ---------------------------------------------------------------------------
# pardo.multi_output


class _Classify(beam.DoFn):
    def process(self, x):
        if x < 0:
            yield beam.pvalue.TaggedOutput("neg", x)
        elif x % 2:
            yield beam.pvalue.TaggedOutput("odd", x)
        else:
            yield x


@capability("pardo.multi_output")
def test_declared_tags_with_named_main(runner):
    # with_outputs('neg', 'odd', main='m'): each tagged output receives exactly its elements (SEMANTICS 10).
    p = runner.pipeline()
    res = p | beam.Create([-2, -1, 0, 1, 2, 3]) | beam.ParDo(_Classify()).with_outputs("neg", "odd", main="m")
    check(res.m, created([0, 2]), label="main")
    check(res.neg, created([-2, -1]), label="neg")
    check(res["odd"], created([1, 3]), label="odd")
    runner.run(p)


@capability("pardo.multi_output")
def test_undeclared_tags_accessed_after_with_outputs(runner):
    # with_outputs() with no tags: tags used by the DoFn are reachable by attribute/index afterwards (SEMANTICS 10).
    p = runner.pipeline()
    res = p | beam.Create([-2, -1, 0, 1, 2, 3]) | beam.ParDo(_Classify()).with_outputs()
    check(res[None], created([0, 2]), label="main")
    check(res.neg, created([-2, -1]), label="neg")
    check(res["odd"], created([1, 3]), label="odd")
    runner.run(p)


@capability("pardo.multi_output")
def test_declared_tag_receiving_no_elements_is_empty(runner):
    # A declared output tag that is never written is an empty PCollection, not missing (SEMANTICS 10).
    p = runner.pipeline()
    res = p | beam.Create([0, 2, 4]) | beam.ParDo(_Classify()).with_outputs("neg", "odd", "unused", main="m")
    check(res.m, created([0, 2, 4]), label="main")
    check(res.neg, [], label="neg")
    check(res.odd, [], label="odd")
    check(res.unused, [], label="unused")
    runner.run(p)


@capability("pardo.multi_output")
def test_flatmap_with_tagged_outputs(runner):
    # Tagged outputs from FlatMap: one input can go to several outputs at once (SEMANTICS 10).
    def route(x):
        yield x
        yield beam.pvalue.TaggedOutput("copy", x * 100)
        if x > 1:
            yield beam.pvalue.TaggedOutput("big", str(x))

    p = runner.pipeline()
    res = p | beam.Create([1, 2, 3]) | beam.FlatMap(route).with_outputs("copy", "big", main="main")
    check(res.main, created([1, 2, 3]), label="main")
    check(res.copy, created([100, 200, 300]), label="copy")
    check(res.big, created(["2", "3"]), label="big")
    runner.run(p)


class _TagWithTimestamps(beam.DoFn):
    def process(self, x, ts=beam.DoFn.TimestampParam):
        # Main output inherits the input timestamp; the tagged output moves 1 s later.
        yield x
        yield beam.pvalue.TaggedOutput("shifted", window.TimestampedValue(x * 10, ts + 1))


@capability("pardo.multi_output")
def test_tagged_outputs_carry_timestamps_and_windows(runner):
    # Tagged outputs keep the input's window; TimestampedValue sets their timestamp; main keeps the input's.
    # (SEMANTICS 10)
    p = runner.pipeline()
    res = (
        p
        | beam.Create([(1, 2), (2, 13)])
        | value_at_time()
        | beam.WindowInto(window.FixedWindows(10))
        | beam.ParDo(_TagWithTimestamps()).with_outputs("shifted", main="main")
    )
    check(res.main, [el(1, 2, W(0, 10)), el(2, 13, W(10, 20))], label="main")
    check(res.shifted, [el(10, 3, W(0, 10)), el(20, 14, W(10, 20))], label="shifted")
    runner.run(p)


# ---------------------------------------------------------------------------
# pardo.element_context


class _SeeTimestamp(beam.DoFn):
    def process(self, x, ts=beam.DoFn.TimestampParam):
        yield (x, float(ts))


@capability("pardo.element_context")
def test_timestamp_param_sees_element_timestamp(runner):
    # DoFn.TimestampParam is the element's event timestamp; outputs inherit it (SEMANTICS 10).
    p = runner.pipeline()
    out = p | beam.Create([("a", 5), ("b", 12.5), ("c", -3)]) | value_at_time() | beam.ParDo(_SeeTimestamp())
    check(out, [el(("a", 5.0), 5), el(("b", 12.5), 12.5), el(("c", -3.0), -3)])
    runner.run(p)


@capability("pardo.element_context")
def test_create_elements_are_global_at_min_timestamp(runner):
    # Create's elements sit in the global window at the minimum timestamp with the unknown pane (SEMANTICS 2).
    p = runner.pipeline()
    out = (
        p
        | beam.Create(["x"])
        | beam.Map(
            lambda x, ts=beam.DoFn.TimestampParam, w=beam.DoFn.WindowParam: (
                x,
                ts == MIN_TIMESTAMP,
                isinstance(w, window.GlobalWindow),
            )
        )
    )
    check(out, [el(("x", True, True), MIN_TIMESTAMP, GLOBAL, NO_FIRING)])
    runner.run(p)


class _SeeWindow(beam.DoFn):
    def process(self, x, w=beam.DoFn.WindowParam):
        yield (x, float(w.start), float(w.end))


@capability("pardo.element_context")
def test_window_param_in_fixed_windows(runner):
    # DoFn.WindowParam is the element's fixed window [N*size, (N+1)*size) (SEMANTICS 4 and 10).
    p = runner.pipeline()
    out = (
        p
        | beam.Create([("a", 1), ("b", 9.999), ("c", 10), ("d", -1)])
        | value_at_time()
        | beam.WindowInto(window.FixedWindows(10))
        | beam.ParDo(_SeeWindow())
    )
    check(
        out,
        [
            el(("a", 0.0, 10.0), 1, W(0, 10)),
            el(("b", 0.0, 10.0), 9.999, W(0, 10)),
            el(("c", 10.0, 20.0), 10, W(10, 20)),
            el(("d", -10.0, 0.0), -1, W(-10, 0)),
        ],
    )
    runner.run(p)


@capability("pardo.element_context")
def test_window_param_sliding_processes_once_per_window(runner):
    # An element in several sliding windows is processed once per window when WindowParam is used.
    # SEMANTICS 4: Sliding(10, 5): t=7 -> [5,15), [0,10); t=10 -> [10,20), [5,15).
    p = runner.pipeline()
    out = (
        p
        | beam.Create([("a", 7), ("b", 10)])
        | value_at_time()
        | beam.WindowInto(window.SlidingWindows(10, 5))
        | beam.ParDo(_SeeWindow())
    )
    check(
        out,
        [
            el(("a", 5.0, 15.0), 7, W(5, 15)),
            el(("a", 0.0, 10.0), 7, W(0, 10)),
            el(("b", 10.0, 20.0), 10, W(10, 20)),
            el(("b", 5.0, 15.0), 10, W(5, 15)),
        ],
    )
    runner.run(p)


@capability("pardo.element_context")
def test_sliding_windows_without_window_param_output_in_every_window(runner):
    # Without WindowParam the output still lands in every window of its input (SEMANTICS 4).
    p = runner.pipeline()
    out = (
        p
        | beam.Create([("a", 7)])
        | value_at_time()
        | beam.WindowInto(window.SlidingWindows(10, 5))
        | beam.Map(lambda x: x.upper())
    )
    check(out, [el("A", 7, W(5, 15)), el("A", 7, W(0, 10))])
    runner.run(p)


@capability("pardo.element_context")
def test_timestamped_value_output_keeps_its_timestamp(runner):
    # A TimestampedValue output carries the new timestamp; the window stays the input's window (SEMANTICS 10).
    p = runner.pipeline()
    out = (
        p
        | beam.Create([("a", 1), ("b", 21)])
        | value_at_time()
        | beam.WindowInto(window.FixedWindows(10))
        | beam.Map(lambda x, ts=beam.DoFn.TimestampParam: window.TimestampedValue(x, ts + 2.5))
    )
    check(out, [el("a", 3.5, W(0, 10)), el("b", 23.5, W(20, 30))], label="shifted")
    # A following DoFn sees the new timestamp in TimestampParam.
    check(
        out | beam.ParDo(_SeeTimestamp()),
        [el(("a", 3.5), 3.5, W(0, 10), NO_FIRING), el(("b", 23.5), 23.5, W(20, 30), NO_FIRING)],
        label="seen",
    )
    runner.run(p)


class _SeePane(beam.DoFn):
    def process(self, x, pane=beam.DoFn.PaneInfoParam):
        yield (x, pane.is_first, pane.is_last, _TIMING[pane.timing], pane.index, pane.nonspeculative_index)


@capability("pardo.element_context")
def test_pane_param_is_unknown_pane_without_gbk(runner):
    # SEMANTICS 5: elements no GroupByKey produced carry the unknown pane (0x0F: first, last, UNKNOWN, 0, 0).
    p = runner.pipeline()
    out = (
        p
        | beam.Create([("a", 1), ("b", 15)])
        | value_at_time()
        | beam.WindowInto(window.FixedWindows(10))
        | beam.ParDo(_SeePane())
    )
    check(
        out,
        [
            el(("a", True, True, "UNKNOWN", 0, 0), 1, W(0, 10), NO_FIRING),
            el(("b", True, True, "UNKNOWN", 0, 0), 15, W(10, 20), NO_FIRING),
        ],
    )
    runner.run(p)


@capability("pardo.element_context")
def test_pane_param_after_gbk_is_on_time_only(runner):
    # SEMANTICS 5: a batch GroupByKey emits one pane per window: first, last, ON_TIME, index 0, nonspec 0.
    p = runner.pipeline()
    out = (
        p
        | beam.Create([("k", 1), ("k", 2), ("j", 3)])
        | beam.GroupByKey()
        | beam.MapTuple(lambda k, vs: k)
        | beam.ParDo(_SeePane())
    )
    check(out, grouped([("k", True, True, "ON_TIME", 0, 0), ("j", True, True, "ON_TIME", 0, 0)]))
    runner.run(p)


# ---------------------------------------------------------------------------
# pardo.finish_bundle


class _CountInFinishBundle(beam.DoFn):
    """Buffers in process, emits the bundle's count from finish_bundle at 42 s in the global window."""

    def start_bundle(self):
        self._count = 0

    def process(self, x):
        self._count += 1

    def finish_bundle(self):
        if self._count:
            yield WindowedValue(self._count, Timestamp(42), [window.GlobalWindow()])


def _count_records_ok(expected_total):
    def predicate(records):
        for r in records:
            assert isinstance(r.value, int) and r.value > 0, f"count must be a positive int: {r!r}"
            assert r.timestamp_ms == 42000, f"timestamp must be 42 s: {r!r}"
            assert r.window.is_global, f"window must be global: {r!r}"
        total = sum(r.value for r in records)
        assert total == expected_total, f"sum of per-bundle counts is {total}, expected {expected_total}"
        return True

    return predicate


@capability("pardo.finish_bundle")
def test_finish_bundle_output_with_timestamp_and_global_window(runner):
    # SEMANTICS 8: finish_bundle may output with an explicit timestamp and window; counts sum to the input size.
    p = runner.pipeline()
    out = p | beam.Create(list(range(25))) | beam.ParDo(_CountInFinishBundle())
    check(out, satisfies(_count_records_ok(25), "per-bundle counts at 42 s in GLOBAL summing to 25"))
    runner.run(p)


@capability("pardo.finish_bundle")
def test_finish_bundle_output_after_shuffle(runner):
    # The same after a GroupByKey (a new stage): finish_bundle outputs are neither lost nor duplicated.
    # (SEMANTICS 8 and 10)
    p = runner.pipeline()
    out = (
        p
        | beam.Create([(i % 4, i) for i in range(20)])
        | beam.GroupByKey()
        | beam.FlatMapTuple(lambda k, vs: list(vs))
        | beam.ParDo(_CountInFinishBundle())
    )
    check(out, satisfies(_count_records_ok(20), "per-bundle counts at 42 s in GLOBAL summing to 20"))
    runner.run(p)


class _CountPerWindowInFinishBundle(beam.DoFn):
    """Buffers per window in process; finish_bundle emits (window start, count) at the window's max timestamp."""

    def start_bundle(self):
        self._counts = {}

    def process(self, x, w=beam.DoFn.WindowParam):
        self._counts[w] = self._counts.get(w, 0) + 1

    def finish_bundle(self):
        for w, n in self._counts.items():
            yield WindowedValue((float(w.start), n), w.max_timestamp(), [w])


@capability("pardo.finish_bundle")
def test_finish_bundle_output_into_interval_windows(runner):
    # finish_bundle outputs land in the explicit window given, at the explicit timestamp (SEMANTICS 10).
    def predicate(records):
        sums = {}
        for r in records:
            start, n = r.value
            assert not r.window.is_global and r.window.start_ms == round(start * 1000), f"wrong window: {r!r}"
            assert r.window.end_ms - r.window.start_ms == 10000, f"wrong window size: {r!r}"
            assert r.timestamp_ms == r.window.end_ms - 1, f"timestamp must be the window's max: {r!r}"
            sums[start] = sums.get(start, 0) + n
        assert sums == {0.0: 3, 10.0: 1, 30.0: 2}, f"per-window sums {sums}"
        return True

    p = runner.pipeline()
    out = (
        p
        | beam.Create([(1, 1), (2, 5), (3, 9), (4, 10), (5, 31), (6, 39)])
        | value_at_time()
        | beam.WindowInto(window.FixedWindows(10))
        | beam.ParDo(_CountPerWindowInFinishBundle())
    )
    check(out, satisfies(predicate, "per-window counts 3, 1, 2 at each window's max timestamp"))
    runner.run(p)


# ---------------------------------------------------------------------------
# pardo.lifecycle


class _RecordLifecycle(beam.DoFn):
    """Logs every lifecycle call of this instance; finish_bundle emits (instance, log so far, bundle's elements)."""

    def __init__(self, directory=None):
        self._directory = directory
        self._log = None
        self._instance = None

    def setup(self):
        if self._log is None:
            self._log = []
            self._instance = uuid.uuid4().hex
        self._log.append("setup")

    def start_bundle(self):
        if self._log is None:  # start_bundle before setup: record it so the check fails
            self._log, self._instance = [], uuid.uuid4().hex
        self._log.append("start_bundle")
        self._bundle = []

    def process(self, x):
        self._log.append("process")
        self._bundle.append(x)
        yield x

    def finish_bundle(self):
        self._log.append("finish_bundle")
        yield WindowedValue(
            (self._instance, tuple(self._log), tuple(self._bundle)), Timestamp(0), [window.GlobalWindow()]
        )

    def teardown(self):
        if self._log is None:
            self._log, self._instance = [], uuid.uuid4().hex
        self._log.append("teardown")
        if self._directory:
            path = os.path.join(self._directory, f"teardown-{self._instance}.json")
            with open(path, "w") as f:
                json.dump({"log": self._log, "elements": sorted(self._seen_all())}, f)

    def _seen_all(self):
        return getattr(self, "_all", [])


class _RecordLifecycleWithTotals(_RecordLifecycle):
    def process(self, x):
        self.__dict__.setdefault("_all", []).append(x)
        yield from super().process(x)


class _LifecycleOnly(_RecordLifecycle):
    """Emits the log from finish_bundle only (no per-element main output)."""

    def process(self, x):
        self._log.append("process")
        self._bundle.append(x)
        return []


def _check_log_order(log):
    """setup once first, then (start_bundle process* finish_bundle)*, nothing else."""
    assert log and log[0] == "setup", f"first call must be setup: {log}"
    assert log.count("setup") == 1, f"setup must run once per instance: {log}"
    in_bundle = False
    for call in log[1:]:
        if call == "start_bundle":
            assert not in_bundle, f"start_bundle inside a bundle: {log}"
            in_bundle = True
        elif call == "process":
            assert in_bundle, f"process outside start_bundle/finish_bundle: {log}"
        elif call == "finish_bundle":
            assert in_bundle, f"finish_bundle without start_bundle: {log}"
            in_bundle = False
        else:
            return call
    return None


@capability("pardo.lifecycle")
def test_lifecycle_call_order_per_instance(runner):
    # SEMANTICS 8: setup -> (start_bundle -> process* -> finish_bundle)* per DoFn instance; setup once.
    n = 30

    def predicate(records):
        seen = []
        for r in records:
            _instance, log, bundle = r.value
            tail = _check_log_order(list(log))
            assert tail is None, f"unexpected call {tail!r} before finish_bundle returned: {log}"
            assert log[-1] == "finish_bundle", f"log must end with this finish_bundle: {log}"
            # The bundle's own segment: the calls after its start_bundle.
            last_start = len(log) - 1 - list(reversed(log)).index("start_bundle")
            assert log[last_start + 1 : -1].count("process") == len(bundle), f"segment/process mismatch: {log}"
            seen.extend(bundle)
        assert sorted(seen) == list(range(n)), f"elements processed in committed bundles: {sorted(seen)}"
        return True

    p = runner.pipeline()
    out = p | beam.Create(list(range(n))) | beam.ParDo(_LifecycleOnly())
    check(out, satisfies(predicate, "every bundle's calls are ordered setup, start_bundle, process*, finish_bundle"))
    runner.run(p)


@capability("pardo.lifecycle")
def test_lifecycle_order_across_stages(runner):
    # Lifecycle order holds in a DoFn downstream of a GroupByKey too; each committed bundle reports once.
    # (SEMANTICS 8 and 10)
    n = 12

    def predicate(records):
        seen = []
        for r in records:
            _instance, log, bundle = r.value
            assert _check_log_order(list(log)) is None and log[-1] == "finish_bundle", f"bad order: {log}"
            seen.extend(bundle)
        assert sorted(seen) == list(range(n)), f"elements seen: {sorted(seen)}"
        return True

    p = runner.pipeline()
    out = (
        p
        | beam.Create([(i % 3, i) for i in range(n)])
        | beam.GroupByKey()
        | beam.FlatMapTuple(lambda k, vs: list(vs))
        | beam.ParDo(_LifecycleOnly())
    )
    check(out, satisfies(predicate, "ordered lifecycle logs covering every element once"))
    runner.run(p)


@capability("pardo.lifecycle")
def test_teardown_called_after_bundles(runner, tmp_path):
    # SEMANTICS 8: teardown follows the instance's last finish_bundle (best effort; in-process workers call it).
    n = 10
    directory = str(tmp_path)
    p = runner.pipeline()
    out = p | beam.Create(list(range(n))) | beam.ParDo(_RecordLifecycleWithTotals(directory))
    check(out | beam.Filter(lambda v: not isinstance(v, tuple)), list(range(n)))
    runner.run(p)

    files = sorted(f for f in os.listdir(directory) if f.startswith("teardown-"))
    assert files, "no DoFn instance was torn down after the job finished"
    seen = set()
    for name in files:
        with open(os.path.join(directory, name)) as f:
            record = json.load(f)
        log = record["log"]
        assert log[-1] == "teardown" and log.count("teardown") == 1, f"teardown must be last and once: {log}"
        assert _check_log_order(log[:-1]) is None, f"bad order before teardown: {log}"
        assert log[-2] == "finish_bundle" or log == ["setup", "teardown"], f"teardown inside a bundle: {log}"
        seen.update(record["elements"])
    assert seen == set(range(n)), f"torn-down instances processed {sorted(seen)}, expected every element"


# ---------------------------------------------------------------------------
# pardo.failure


class _FailIn(beam.DoFn):
    def __init__(self, where, message):
        self._where = where
        self._message = message

    def start_bundle(self):
        if self._where == "start_bundle":
            raise RuntimeError(self._message)

    def process(self, x):
        if self._where == "process" and x == 3:
            raise ValueError(self._message)
        yield x

    def finish_bundle(self):
        if self._where == "finish_bundle":
            raise RuntimeError(self._message)


@capability("pardo.failure")
def test_exception_in_process_fails_job_with_message(runner):
    # SEMANTICS 8: an exception in process fails the pipeline and surfaces the user's message.
    message = "conformance-boom-in-process-5a17"
    p = runner.pipeline()
    _ = p | beam.Create([1, 2, 3, 4]) | beam.ParDo(_FailIn("process", message))
    runner.run_expecting_failure(p, match=message)


@capability("pardo.failure")
def test_exception_in_start_bundle_fails_job_with_message(runner):
    # SEMANTICS 8: an exception in start_bundle fails the pipeline and surfaces the user's message.
    message = "conformance-boom-in-start-bundle-9c02"
    p = runner.pipeline()
    _ = p | beam.Create([1, 2, 3]) | beam.ParDo(_FailIn("start_bundle", message))
    runner.run_expecting_failure(p, match=message)


@capability("pardo.failure")
def test_exception_in_finish_bundle_fails_job_with_message(runner):
    # SEMANTICS 8: an exception in finish_bundle fails the pipeline and surfaces the user's message.
    message = "conformance-boom-in-finish-bundle-e4b8"
    p = runner.pipeline()
    _ = p | beam.Create([1, 2, 3]) | beam.ParDo(_FailIn("finish_bundle", message))
    runner.run_expecting_failure(p, match=message)


@capability("pardo.failure")
def test_exception_in_map_after_gbk_fails_job_with_message(runner):
    # An exception in a lambda of a later stage also fails the job with the user's message (SEMANTICS 8 and 10).
    message = "conformance-boom-after-gbk-31f6"

    def explode(kv):
        raise KeyError(message)

    p = runner.pipeline()
    _ = p | beam.Create([("k", 1)]) | beam.GroupByKey() | beam.Map(explode)
    runner.run_expecting_failure(p, match=message)


@capability("pardo.failure")
def test_exception_in_setup_fails_job_with_message(runner):
    # SEMANTICS 8: an exception in setup fails the pipeline and surfaces the user's message (a runner
    # may retry the work on a fresh instance, but setup fails every time, so the job still fails).
    message = "conformance-boom-in-setup-7d3e"

    class FailInSetup(beam.DoFn):
        def setup(self):
            raise RuntimeError(message)

        def process(self, x):
            yield x

    p = runner.pipeline()
    _ = p | beam.Create([1, 2, 3]) | beam.ParDo(FailInSetup())
    runner.run_expecting_failure(p, match=message)
