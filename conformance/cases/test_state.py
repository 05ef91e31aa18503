"""User state in a stateful ParDo (conformance/SEMANTICS.md, section 7).

State is scoped per key, per window and per transform, survives between the
elements of that scope, and is garbage-collected when the window expires
(window max timestamp + allowed lateness).

Beam 2.77's Python SDK offers ReadModifyWriteStateSpec, BagStateSpec,
CombiningValueStateSpec, SetStateSpec and OrderedListStateSpec; it has no MapStateSpec
(and its SDK harness no map/multimap user state), so state.map has no case here.

Reads across bundles: within one bundle the SDK serves a key's state from its own buffers, so
a case whose reads all happen in the bundle that wrote passes on a runner whose state store
returns nothing. A portable runner never fires a timer in the bundle that set it (timers go
back to the runner over the data channel and return in a later ProcessBundleRequest), so the
cases below also read their state in an event-time timer callback set in process (REPORT) and,
after that callback writes, in a timer it sets (AGAIN): those reads cross bundles on every
runner, whatever its bundle sizes.
"""

import typing

import apache_beam as beam
import pytest
from apache_beam.coders import coders
from apache_beam.transforms import combiners, window
from apache_beam.transforms.timeutil import TimeDomain
from apache_beam.transforms.userstate import (
    BagStateSpec,
    CombiningValueStateSpec,
    OrderedListStateSpec,
    ReadModifyWriteStateSpec,
    SetStateSpec,
    TimerSpec,
    on_timer,
)
from apache_beam.utils.timestamp import Timestamp

from conformance.api import (
    END_OF_GLOBAL_WINDOW,
    GLOBAL,
    MIN_TIMESTAMP,
    TestStream,
    W,
    capability,
    check,
    el,
    keyed_at,
    keyed_input,
    one_of,
    satisfies,
)

StateParam = beam.DoFn.StateParam
TimerParam = beam.DoFn.TimerParam
KeyParam = beam.DoFn.KeyParam

# Event times (seconds) of the REPORT and AGAIN timers of globally windowed cases.
REPORT_AT, AGAIN_AT = 100, 200


def _stateful(fn):
    """ParDo(fn) with any output: Beam infers a DoFn's output coder from process() alone, and the
    timer callbacks below yield other shapes."""
    return beam.ParDo(fn).with_output_types(typing.Any)


def _created(value):
    """An output of process() for an element of beam.Create: at the minimum timestamp, global window."""
    return el(value, MIN_TIMESTAMP, GLOBAL)


def _at(value, seconds):
    """An output of a timer callback: at the timer's time, in the global window."""
    return el(value, seconds, GLOBAL)


def _stamped(values):
    """The outputs of a globally windowed case below: a tuple naming its timer ("report" or "later":
    REPORT, "again": AGAIN) at that timer's time, any other value at the minimum timestamp (an output
    of process() for an element of beam.Create)."""

    def at(value):
        names = {part for part in value if isinstance(part, str)} if isinstance(value, tuple) else set()
        if names & {"report", "later"}:
            return _at(value, REPORT_AT)
        if "again" in names:
            return _at(value, AGAIN_AT)
        return _created(value)

    return [at(v) for v in values]


def _secs(ts):
    """A Beam Timestamp as whole seconds (the sort keys below are whole seconds)."""
    return ts.micros // 1_000_000


# --------------------------------------------------------------------------- state.value


class _CountPerKey(beam.DoFn):
    COUNT = ReadModifyWriteStateSpec("count", coders.VarIntCoder())

    def process(self, kv, count=StateParam(COUNT)):
        n = (count.read() or 0) + 1
        count.write(n)
        yield kv[0], n


class _CountThenReport(beam.DoFn):
    """Counts each key's elements in value state, yielding the running count; REPORT reads the
    final count in a later bundle and writes ten times it, which AGAIN reads back."""

    COUNT = ReadModifyWriteStateSpec("count", coders.VarIntCoder())
    REPORT = TimerSpec("report", TimeDomain.WATERMARK)
    AGAIN = TimerSpec("again", TimeDomain.WATERMARK)

    def process(self, kv, count=StateParam(COUNT), report=TimerParam(REPORT)):
        n = (count.read() or 0) + 1
        count.write(n)
        report.set(REPORT_AT)
        yield kv[0], n

    @on_timer(REPORT)
    def on_report(self, key=KeyParam, count=StateParam(COUNT), again=TimerParam(AGAIN)):
        n = count.read() or 0
        count.write(n * 10)
        again.set(AGAIN_AT)
        yield key, "report", n

    @on_timer(AGAIN)
    def on_again(self, key=KeyParam, count=StateParam(COUNT)):
        yield key, "again", count.read()


@capability("state.value")
def test_value_counter_per_key(runner):
    # SEMANTICS 7: value state is per key; each key counts its own elements 1..n, and the count is
    # still there in later bundles (timer callbacks), as is what a callback writes.
    p = runner.pipeline()
    data = [("a", 0), ("b", 0), ("a", 0), ("a", 0), ("b", 0)]
    out = p | beam.Create(data) | _stateful(_CountThenReport())
    check(
        out,
        [
            _created(("a", 1)),
            _created(("a", 2)),
            _created(("a", 3)),
            _created(("b", 1)),
            _created(("b", 2)),
            _at(("a", "report", 3), REPORT_AT),
            _at(("b", "report", 2), REPORT_AT),
            _at(("a", "again", 30), AGAIN_AT),
            _at(("b", "again", 20), AGAIN_AT),
        ],
    )
    runner.run(p)


@capability("state.value")
def test_value_unwritten_reads_none_and_write_is_visible(runner):
    # An unwritten value state reads as None; a write is visible to a read later in the same call
    # and in a later bundle (SEMANTICS 7).
    class Fn(beam.DoFn):
        LAST = ReadModifyWriteStateSpec("last", coders.StrUtf8Coder())
        REPORT = TimerSpec("report", TimeDomain.WATERMARK)

        def process(self, kv, last=StateParam(LAST), report=TimerParam(REPORT)):
            before = last.read()
            last.write(kv[1])
            report.set(REPORT_AT)
            yield kv[0], before, last.read()

        @on_timer(REPORT)
        def on_report(self, key=KeyParam, last=StateParam(LAST)):
            yield key, "later", last.read()

    p = runner.pipeline()
    out = p | beam.Create([("a", "x"), ("b", "y")]) | _stateful(Fn())
    check(out, _stamped([("a", None, "x"), ("b", None, "y"), ("a", "later", "x"), ("b", "later", "y")]))
    runner.run(p)


@capability("state.value")
def test_value_cleared_state_reads_none(runner):
    # A cleared value state reads as None, in the same call, for the next element of the key and in a
    # later bundle; a value written there is read back by a timer it sets (SEMANTICS 7).
    class Fn(beam.DoFn):
        VALUE = ReadModifyWriteStateSpec("value", coders.VarIntCoder())
        REPORT = TimerSpec("report", TimeDomain.WATERMARK)
        AGAIN = TimerSpec("again", TimeDomain.WATERMARK)

        def process(self, kv, value=StateParam(VALUE), report=TimerParam(REPORT)):
            before = value.read()
            value.write(kv[1])
            value.clear()
            report.set(REPORT_AT)
            yield kv[0], before, value.read()

        @on_timer(REPORT)
        def on_report(self, key=KeyParam, value=StateParam(VALUE), again=TimerParam(AGAIN)):
            cleared = value.read()
            value.write(77)
            again.set(AGAIN_AT)
            yield key, "report", cleared

        @on_timer(AGAIN)
        def on_again(self, key=KeyParam, value=StateParam(VALUE)):
            yield key, "again", value.read()

    p = runner.pipeline()
    out = p | beam.Create([("a", 1), ("a", 2), ("a", 3), ("b", 4)]) | _stateful(Fn())
    check(
        out,
        _stamped(
            [("a", None, None)] * 3
            + [("b", None, None), ("a", "report", None), ("b", "report", None), ("a", "again", 77), ("b", "again", 77)]
        ),
    )
    runner.run(p)


# --------------------------------------------------------------------------- state.bag


@capability("state.bag")
def test_bag_accumulates_all_values_with_duplicates(runner):
    # A bag keeps every added value (duplicates included) across the elements of a key and bundles (SEMANTICS 7).
    class Fn(beam.DoFn):
        BAG = BagStateSpec("bag", coders.VarIntCoder())
        REPORT = TimerSpec("report", TimeDomain.WATERMARK)

        def process(self, kv, bag=StateParam(BAG), report=TimerParam(REPORT)):
            bag.add(kv[1])
            contents = sorted(bag.read())
            report.set(REPORT_AT)
            yield "size", kv[0], len(contents)
            if len(contents) == 3:
                yield "full", kv[0], contents

        @on_timer(REPORT)
        def on_report(self, key=KeyParam, bag=StateParam(BAG)):
            yield "later", key, sorted(bag.read())

    p = runner.pipeline()
    data = [("a", 2), ("b", 5), ("a", 1), ("b", 6), ("a", 2), ("b", 4)]
    out = p | beam.Create(data) | _stateful(Fn())
    check(
        out,
        _stamped(
            [
                ("size", "a", 1),
                ("size", "a", 2),
                ("size", "a", 3),
                ("full", "a", [1, 2, 2]),
                ("size", "b", 1),
                ("size", "b", 2),
                ("size", "b", 3),
                ("full", "b", [4, 5, 6]),
                ("later", "a", [1, 2, 2]),
                ("later", "b", [4, 5, 6]),
            ]
        ),
    )
    runner.run(p)


@capability("state.bag")
def test_bag_cleared_reads_empty(runner):
    # A cleared bag reads empty, in the same call, for the next element of the key and in a later
    # bundle; values added there are read back by a timer it sets (SEMANTICS 7).
    class Fn(beam.DoFn):
        BAG = BagStateSpec("bag", coders.VarIntCoder())
        REPORT = TimerSpec("report", TimeDomain.WATERMARK)
        AGAIN = TimerSpec("again", TimeDomain.WATERMARK)

        def process(self, kv, bag=StateParam(BAG), report=TimerParam(REPORT)):
            before = list(bag.read())
            bag.add(kv[1])
            bag.add(kv[1] + 100)
            added = sorted(bag.read())
            bag.clear()
            report.set(REPORT_AT)
            yield kv[0], "process", (before, added, list(bag.read()))

        @on_timer(REPORT)
        def on_report(self, key=KeyParam, bag=StateParam(BAG), again=TimerParam(AGAIN)):
            cleared = list(bag.read())
            bag.add(7)
            bag.add(8)
            again.set(AGAIN_AT)
            yield key, "report", cleared

        @on_timer(AGAIN)
        def on_again(self, key=KeyParam, bag=StateParam(BAG)):
            yield key, "again", sorted(bag.read())

    p = runner.pipeline()
    out = p | beam.Create([("a", 1), ("a", 2), ("a", 3)]) | _stateful(Fn())
    check(
        out,
        _stamped(
            [
                ("a", "process", ([], [1, 101], [])),
                ("a", "process", ([], [2, 102], [])),
                ("a", "process", ([], [3, 103], [])),
                ("a", "report", []),
                ("a", "again", [7, 8]),
            ]
        ),
    )
    runner.run(p)


@capability("state.bag")
def test_bag_flush_and_clear_every_two_elements(runner):
    # Add after clear starts a fresh bag: 5 elements flushed in pairs give 2 flushes of 2 and 1 left
    # over, which a timer reads in a later bundle (SEMANTICS 7).
    class Fn(beam.DoFn):
        BAG = BagStateSpec("bag", coders.VarIntCoder())
        REPORT = TimerSpec("report", TimeDomain.WATERMARK)

        def process(self, kv, bag=StateParam(BAG), report=TimerParam(REPORT)):
            bag.add(kv[1])
            contents = sorted(bag.read())
            report.set(REPORT_AT)
            if len(contents) == 2:
                bag.clear()
                yield "flush", contents
            else:
                yield "held", contents

        @on_timer(REPORT)
        def on_report(self, bag=StateParam(BAG)):
            yield "left", sorted(bag.read())

    def verify(records):
        flushes = [r.value[1] for r in records if r.value[0] == "flush"]
        held = [r.value[1][0] for r in records if r.value[0] == "held" and len(r.value[1]) == 1]
        left = [r.value[1] for r in records if r.value[0] == "left"]
        assert len(flushes) == 2 and all(len(f) == 2 for f in flushes), f"flushes {flushes}"
        assert len(held) == 3 and len(records) == 6, f"held {held}"
        flushed = [v for f in flushes for v in f]
        assert all(sum(v in held for v in f) == 1 for f in flushes), "each flush = one held value + one more"
        leftover = [v for v in held if v not in flushed]
        assert sorted(flushed + leftover) == [1, 2, 3, 4, 5], f"flushed {flushed}, leftover {leftover}"
        assert left == [leftover], f"the timer read {left}, the value left over is {leftover}"
        return True

    p = runner.pipeline()
    out = p | beam.Create([("a", v) for v in (1, 2, 3, 4, 5)]) | _stateful(Fn())
    check(
        out,
        satisfies(
            verify,
            "two flushes of two distinct values, three single-value bags, covering 1..5; "
            "the value left over is read back in a later bundle",
        ),
    )
    runner.run(p)


# --------------------------------------------------------------------------- state.combining


@capability("state.combining")
def test_combining_state_with_callable(runner):
    # Combining state with a callable (sum) reads the combined value of every add of the key, in the
    # bundle that added and in later ones (SEMANTICS 7).
    class Fn(beam.DoFn):
        TOTAL = CombiningValueStateSpec("total", combine_fn=sum)
        COUNT = CombiningValueStateSpec("count", coders.VarIntCoder(), combiners.CountCombineFn())
        REPORT = TimerSpec("report", TimeDomain.WATERMARK)
        AGAIN = TimerSpec("again", TimeDomain.WATERMARK)

        def process(self, kv, total=StateParam(TOTAL), count=StateParam(COUNT), report=TimerParam(REPORT)):
            total.add(kv[1])
            count.add(1)
            report.set(REPORT_AT)
            if count.read() == 3:
                yield kv[0], total.read()

        @on_timer(REPORT)
        def on_report(self, key=KeyParam, total=StateParam(TOTAL), count=StateParam(COUNT), again=TimerParam(AGAIN)):
            result = (key, "report", total.read(), count.read())
            total.add(1000)
            again.set(AGAIN_AT)
            yield result

        @on_timer(AGAIN)
        def on_again(self, key=KeyParam, total=StateParam(TOTAL)):
            yield key, "again", total.read()

    p = runner.pipeline()
    data = [("a", 5), ("b", 10), ("a", 2), ("b", 20), ("a", 9), ("b", 30)]
    out = p | beam.Create(data) | _stateful(Fn())
    check(
        out,
        _stamped(
            [
                ("a", 16),
                ("b", 60),
                ("a", "report", 16, 3),
                ("b", "report", 60, 3),
                ("a", "again", 1016),
                ("b", "again", 1060),
            ]
        ),
    )
    runner.run(p)


class _MinMaxCount(beam.CombineFn):
    """Accumulator (min, max, count); output 'min..max/count'."""

    def create_accumulator(self):
        return None, None, 0

    def add_input(self, acc, value):
        lo, hi, n = acc
        return (value if lo is None else min(lo, value), value if hi is None else max(hi, value), n + 1)

    def merge_accumulators(self, accs):
        lo, hi, n = None, None, 0
        for a_lo, a_hi, a_n in accs:
            if a_n:
                lo = a_lo if lo is None else min(lo, a_lo)
                hi = a_hi if hi is None else max(hi, a_hi)
                n += a_n
        return lo, hi, n

    def extract_output(self, acc):
        lo, hi, n = acc
        return f"{lo}..{hi}/{n}"


@capability("state.combining")
def test_combining_state_with_combinefn(runner):
    # Combining state runs a CombineFn: add_input per add, extract_output on read; accumulators
    # written in one bundle merge with adds in a later one (SEMANTICS 7).
    class Fn(beam.DoFn):
        STATS = CombiningValueStateSpec("stats", _MinMaxCount())
        REPORT = TimerSpec("report", TimeDomain.WATERMARK)

        def process(self, kv, stats=StateParam(STATS), report=TimerParam(REPORT)):
            stats.add(kv[1])
            report.set(REPORT_AT)
            result = stats.read()
            if result.endswith("/4"):
                yield kv[0], result

        @on_timer(REPORT)
        def on_report(self, key=KeyParam, stats=StateParam(STATS)):
            stats.add(100)
            yield key, "later", stats.read()

    p = runner.pipeline()
    data = [("a", 7), ("a", -3), ("a", 12), ("a", 4), ("b", 1), ("b", 1), ("b", 1), ("b", 1)]
    out = p | beam.Create(data) | _stateful(Fn())
    check(out, _stamped([("a", "-3..12/4"), ("b", "1..1/4"), ("a", "later", "-3..100/5"), ("b", "later", "1..100/5")]))
    runner.run(p)


@capability("state.combining")
def test_combining_state_cleared_reads_empty_result(runner):
    # Cleared combining state reads as the CombineFn's output for an empty accumulator (sum: 0), in
    # the same call, for the next element and in a later bundle (SEMANTICS 7).
    class Fn(beam.DoFn):
        TOTAL = CombiningValueStateSpec("total", combine_fn=sum)
        REPORT = TimerSpec("report", TimeDomain.WATERMARK)
        AGAIN = TimerSpec("again", TimeDomain.WATERMARK)

        def process(self, kv, total=StateParam(TOTAL), report=TimerParam(REPORT)):
            before = total.read()
            total.add(kv[1])
            total.add(kv[1])
            added = total.read()
            total.clear()
            report.set(REPORT_AT)
            yield kv[0], "process", (before, added, total.read())

        @on_timer(REPORT)
        def on_report(self, key=KeyParam, total=StateParam(TOTAL), again=TimerParam(AGAIN)):
            cleared = total.read()
            total.add(5)
            again.set(AGAIN_AT)
            yield key, "report", cleared

        @on_timer(AGAIN)
        def on_again(self, key=KeyParam, total=StateParam(TOTAL)):
            yield key, "again", total.read()

    p = runner.pipeline()
    out = p | beam.Create([("a", 3), ("a", 4), ("b", 5)]) | _stateful(Fn())
    check(
        out,
        _stamped(
            [
                ("a", "process", (0, 6, 0)),
                ("a", "process", (0, 8, 0)),
                ("b", "process", (0, 10, 0)),
                ("a", "report", 0),
                ("b", "report", 0),
                ("a", "again", 5),
                ("b", "again", 5),
            ]
        ),
    )
    runner.run(p)


# --------------------------------------------------------------------------- state.set


@capability("state.set")
def test_set_state_deduplicates(runner):
    # Set state holds each distinct value once; membership reflects earlier adds of the key, in the
    # bundle that added and in later ones (SEMANTICS 7).
    class Fn(beam.DoFn):
        SEEN = SetStateSpec("seen", coders.StrUtf8Coder())
        COUNT = CombiningValueStateSpec("count", coders.VarIntCoder(), combiners.CountCombineFn())
        REPORT = TimerSpec("report", TimeDomain.WATERMARK)

        def process(self, kv, seen=StateParam(SEEN), count=StateParam(COUNT), report=TimerParam(REPORT)):
            key, value = kv
            yield "dup", key, value, value in set(seen.read())
            seen.add(value)
            count.add(1)
            report.set(REPORT_AT)
            if count.read() == 5:
                yield "all", key, sorted(seen.read())

        @on_timer(REPORT)
        def on_report(self, key=KeyParam, seen=StateParam(SEEN)):
            seen.add("x")
            yield "later", key, sorted(seen.read())

    p = runner.pipeline()
    data = [("a", "x"), ("a", "y"), ("a", "x"), ("a", "z"), ("a", "y"), ("b", "w")]
    out = p | beam.Create(data) | _stateful(Fn())
    check(
        out,
        _stamped(
            [
                ("dup", "a", "x", False),
                ("dup", "a", "x", True),
                ("dup", "a", "y", False),
                ("dup", "a", "y", True),
                ("dup", "a", "z", False),
                ("dup", "b", "w", False),
                ("all", "a", ["x", "y", "z"]),
                ("later", "a", ["x", "y", "z"]),
                ("later", "b", ["w", "x"]),
            ]
        ),
    )
    runner.run(p)


@capability("state.set")
def test_set_state_cleared_reads_empty(runner):
    # A cleared set reads empty, in the same call, for the next element of the key and in a later
    # bundle; values added there are read back by a timer it sets (SEMANTICS 7).
    class Fn(beam.DoFn):
        SEEN = SetStateSpec("seen", coders.VarIntCoder())
        REPORT = TimerSpec("report", TimeDomain.WATERMARK)
        AGAIN = TimerSpec("again", TimeDomain.WATERMARK)

        def process(self, kv, seen=StateParam(SEEN), report=TimerParam(REPORT)):
            before = sorted(seen.read())
            seen.add(kv[1])
            seen.add(kv[1])
            seen.add(kv[1] + 1)
            added = sorted(seen.read())
            seen.clear()
            report.set(REPORT_AT)
            yield kv[0], "process", (before, added, sorted(seen.read()))

        @on_timer(REPORT)
        def on_report(self, key=KeyParam, seen=StateParam(SEEN), again=TimerParam(AGAIN)):
            cleared = sorted(seen.read())
            seen.add(3)
            seen.add(3)
            seen.add(4)
            again.set(AGAIN_AT)
            yield key, "report", cleared

        @on_timer(AGAIN)
        def on_again(self, key=KeyParam, seen=StateParam(SEEN)):
            yield key, "again", sorted(seen.read())

    p = runner.pipeline()
    out = p | beam.Create([("a", 1), ("a", 10), ("b", 5)]) | _stateful(Fn())
    check(
        out,
        _stamped(
            [
                ("a", "process", ([], [1, 2], [])),
                ("a", "process", ([], [10, 11], [])),
                ("b", "process", ([], [5, 6], [])),
                ("a", "report", []),
                ("b", "report", []),
                ("a", "again", [3, 4]),
                ("b", "again", [3, 4]),
            ]
        ),
    )
    runner.run(p)


# --------------------------------------------------------------------------- state.ordered_list


class _OrderedListFn(beam.DoFn):
    """Adds (sort key, value) pairs; a timer reports ``on_full(state)`` in a later bundle."""

    LIST = OrderedListStateSpec("list", coders.StrUtf8Coder())
    REPORT = TimerSpec("report", TimeDomain.WATERMARK)

    def __init__(self, on_full):
        self._on_full = on_full

    def process(self, kv, ol=StateParam(LIST), report=TimerParam(REPORT)):
        sort_key, value = kv[1]
        ol.add((Timestamp(sort_key), value))
        report.set(REPORT_AT)

    @on_timer(REPORT)
    def on_report(self, key=KeyParam, ol=StateParam(LIST)):
        yield key, self._on_full(ol)


def _ordered_list_input(p):
    data = [
        ("a", (30, "thirty")),
        ("a", (10, "ten")),
        ("a", (40, "forty")),
        ("a", (20, "twenty")),
        ("a", (10, "ten-bis")),
    ]
    return p | beam.Create(data)


@capability("state.ordered_list")
def test_ordered_list_reads_in_sort_key_order(runner):
    # Ordered list state reads back sorted by sort key, whatever the add order (equal keys: any order; SEMANTICS 7).
    def full(ol):
        items = list(ol.read())
        return [_secs(t) for t, _ in items], sorted((_secs(t), v) for t, v in items)

    p = runner.pipeline()
    out = _ordered_list_input(p) | _stateful(_OrderedListFn(full))
    listed = [(10, "ten"), (10, "ten-bis"), (20, "twenty"), (30, "thirty"), (40, "forty")]
    check(out, [_at(("a", ([10, 10, 20, 30, 40], listed)), REPORT_AT)])
    runner.run(p)


@capability("state.ordered_list")
def test_ordered_list_read_range_is_half_open(runner):
    # read_range(min, limit) returns the entries with min <= sort key < limit, in order (SEMANTICS 7).
    def full(ol):
        return (
            [v for _, v in ol.read_range(Timestamp(15), Timestamp(35))],
            [v for _, v in ol.read_range(Timestamp(20), Timestamp(40))],
            [v for _, v in ol.read_range(Timestamp(41), Timestamp(100))],
        )

    p = runner.pipeline()
    out = _ordered_list_input(p) | _stateful(_OrderedListFn(full))
    check(out, [_at(("a", (["twenty", "thirty"], ["twenty", "thirty"], [])), REPORT_AT)])
    runner.run(p)


@capability("state.ordered_list")
def test_ordered_list_clear_range_persists(runner):
    # clear_range(min, limit) removes [min, limit) only, and the removal persists past the call (SEMANTICS 7).
    class Fn(beam.DoFn):
        LIST = OrderedListStateSpec("list", coders.StrUtf8Coder())
        PRUNE = TimerSpec("prune", TimeDomain.WATERMARK)
        REPORT = TimerSpec("report", TimeDomain.WATERMARK)

        def process(self, kv, ol=StateParam(LIST), prune=TimerParam(PRUNE)):
            sort_key, value = kv[1]
            ol.add((Timestamp(sort_key), value))
            prune.set(100)

        @on_timer(PRUNE)
        def on_prune(self, key=beam.DoFn.KeyParam, ol=StateParam(LIST), report=TimerParam(REPORT)):
            ol.clear_range(Timestamp(20), Timestamp(40))
            report.set(200)
            yield key, "pruned", sorted((_secs(t), v) for t, v in ol.read())

        @on_timer(REPORT)
        def on_report(self, key=beam.DoFn.KeyParam, ol=StateParam(LIST)):
            yield key, "later", sorted((_secs(t), v) for t, v in ol.read())

    p = runner.pipeline()
    out = _ordered_list_input(p) | _stateful(Fn())
    remaining = [(10, "ten"), (10, "ten-bis"), (40, "forty")]
    check(out, [_at(("a", "pruned", remaining), 100), _at(("a", "later", remaining), 200)])
    runner.run(p)


@capability("state.ordered_list")
def test_ordered_list_cleared_reads_empty(runner):
    # A cleared ordered list reads empty, in the same call, for the next element of the key and in a
    # later bundle; entries added there are read back, in order, by a timer it sets (SEMANTICS 7).
    class Fn(beam.DoFn):
        LIST = OrderedListStateSpec("list", coders.VarIntCoder())
        REPORT = TimerSpec("report", TimeDomain.WATERMARK)
        AGAIN = TimerSpec("again", TimeDomain.WATERMARK)

        def process(self, kv, ol=StateParam(LIST), report=TimerParam(REPORT)):
            before = list(ol.read())
            ol.add((Timestamp(kv[1]), kv[1]))
            ol.add((Timestamp(1), 1))
            added = [v for _, v in ol.read()]
            ol.clear()
            report.set(REPORT_AT)
            yield kv[0], "process", (before, added, list(ol.read()))

        @on_timer(REPORT)
        def on_report(self, key=KeyParam, ol=StateParam(LIST), again=TimerParam(AGAIN)):
            cleared = list(ol.read())
            ol.add((Timestamp(9), 90))
            ol.add((Timestamp(2), 20))
            again.set(AGAIN_AT)
            yield key, "report", cleared

        @on_timer(AGAIN)
        def on_again(self, key=KeyParam, ol=StateParam(LIST)):
            yield key, "again", [v for _, v in ol.read()]

    p = runner.pipeline()
    out = p | beam.Create([("a", 7), ("a", 5), ("b", 9)]) | _stateful(Fn())
    check(
        out,
        _stamped(
            [
                ("a", "process", ([], [1, 7], [])),
                ("a", "process", ([], [1, 5], [])),
                ("b", "process", ([], [1, 9], [])),
                ("a", "report", []),
                ("b", "report", []),
                ("a", "again", [20, 90]),
                ("b", "again", [20, 90]),
            ]
        ),
    )
    runner.run(p)


# --------------------------------------------------------------------------- state.windowed


class _CountFromZero(beam.DoFn):
    """Counts per key and window from 0; a timer at the window's end reports the count (from a later
    bundle) in that window."""

    COUNT = ReadModifyWriteStateSpec("count", coders.VarIntCoder())
    REPORT = TimerSpec("report", TimeDomain.WATERMARK)

    def process(self, kv, count=StateParam(COUNT), report=TimerParam(REPORT), w=beam.DoFn.WindowParam):
        n = count.read() or 0
        count.write(n + 1)
        report.set(w.max_timestamp())
        yield n

    @on_timer(REPORT)
    def on_report(self, count=StateParam(COUNT)):
        yield f"total {count.read()}"


def _counts_and_totals(out):
    """Split _CountFromZero's output: the running counts (ints) and the timers' totals (strings)."""
    return (
        out | "Counts" >> beam.Filter(lambda v: isinstance(v, int)),
        out | "Totals" >> beam.Filter(lambda v: isinstance(v, str)),
    )


@capability("state.windowed")
def test_value_state_partitioned_per_fixed_window(runner):
    # SEMANTICS 7 (testValueStateFixedWindows): one key, windows [0,10) -> 0,1,2 and [10,20) -> 0,1;
    # each window's count is still there when its timer (at the window's end) reads it.
    p = runner.pipeline()
    out = (
        keyed_input(p, [("k", 0, 1), ("k", 0, 2), ("k", 0, 3), ("k", 0, 11), ("k", 0, 12)])
        | beam.WindowInto(window.FixedWindows(10))
        | _stateful(_CountFromZero())
    )
    counts, totals = _counts_and_totals(out)
    check(
        counts,
        [
            el(0, window=W(0, 10)),
            el(1, window=W(0, 10)),
            el(2, window=W(0, 10)),
            el(0, window=W(10, 20)),
            el(1, window=W(10, 20)),
        ],
        label="counts",
    )
    check(totals, [el("total 3", 9.999, W(0, 10)), el("total 2", 19.999, W(10, 20))], label="totals")
    runner.run(p)


@capability("state.windowed")
def test_state_partitioned_per_sliding_window(runner):
    # An element in several sliding windows updates each window's own state cell.
    # Sliding(15, 5): t=7 -> [-5,10), [0,15), [5,20); t=12 -> [0,15), [5,20), [10,25) (SEMANTICS 4 and 7).
    p = runner.pipeline()
    out = (
        keyed_input(p, [("k", 0, 7), ("k", 0, 12)])
        | beam.WindowInto(window.SlidingWindows(15, 5))
        | _stateful(_CountFromZero())
    )
    counts, totals = _counts_and_totals(out)
    check(
        counts,
        [
            el(0, window=W(-5, 10)),
            el(0, window=W(0, 15)),
            el(1, window=W(0, 15)),
            el(0, window=W(5, 20)),
            el(1, window=W(5, 20)),
            el(0, window=W(10, 25)),
        ],
        label="counts",
    )
    check(
        totals,
        [
            el("total 1", 9.999, W(-5, 10)),
            el("total 2", 14.999, W(0, 15)),
            el("total 2", 19.999, W(5, 20)),
            el("total 1", 24.999, W(10, 25)),
        ],
        label="totals",
    )
    runner.run(p)


@capability("state.windowed")
def test_same_state_id_in_two_pardos_is_not_shared(runner):
    # SEMANTICS 7 (testValueStateSameId): two stateful ParDos with the same state id have separate
    # state, in the bundle that writes and in later ones.
    p = runner.pipeline()
    data = [("a", 0), ("a", 0), ("a", 0), ("b", 0)]
    first = p | beam.Create(data) | "First" >> beam.ParDo(_CountPerKey())
    second = first | "Second" >> _stateful(_CountThenReport())
    check(first, _stamped([("a", 1), ("a", 2), ("a", 3), ("b", 1)]), label="first")
    check(
        second,
        _stamped(
            [
                ("a", 1),
                ("a", 2),
                ("a", 3),
                ("b", 1),
                ("a", "report", 3),
                ("b", "report", 1),
                ("a", "again", 30),
                ("b", "again", 10),
            ]
        ),
        label="second",
    )
    runner.run(p)


@capability("state.windowed")
def test_stateful_pardo_rejects_non_kv_input(runner):
    # SEMANTICS 7: state requires key-value input; a non-KV input is a construction error.
    p = runner.pipeline()
    values = p | beam.Create([1, 2, 3])
    with pytest.raises(ValueError, match="key-value"):
        _ = values | beam.ParDo(_CountPerKey())


# --------------------------------------------------------------------------- state.expiry


class _ReportAtExpiry(beam.DoFn):
    """Counts the elements of each key and window; a timer at the window's garbage-collection
    time (max timestamp + allowed lateness, the latest allowed) reports the count."""

    COUNT = ReadModifyWriteStateSpec("count", coders.VarIntCoder())
    EXPIRY = TimerSpec("expiry", TimeDomain.WATERMARK)

    def __init__(self, allowed_lateness):
        self._lateness = allowed_lateness

    def process(self, kv, count=StateParam(COUNT), expiry=TimerParam(EXPIRY), w=beam.DoFn.WindowParam):
        count.write((count.read() or 0) + 1)
        expiry.set(w.max_timestamp() + self._lateness)

    @on_timer(EXPIRY)
    def expired(self, key=beam.DoFn.KeyParam, count=StateParam(COUNT)):
        yield key, count.read()


@capability("state.expiry")
def test_state_readable_until_window_end(runner):
    # SEMANTICS 7 (cf. runOnWindowExpirationSimple): state lives until window max timestamp + lateness (0),
    # so a timer at that instant still reads it; one report per key and window.
    p = runner.pipeline()
    out = (
        keyed_input(p, [("k", 0, 1), ("k", 0, 2), ("k", 0, 12), ("j", 0, 3)])
        | beam.WindowInto(window.FixedWindows(10))
        | beam.ParDo(_ReportAtExpiry(0))
    )
    check(out, [el(("k", 2), 9.999, W(0, 10)), el(("k", 1), 19.999, W(10, 20)), el(("j", 1), 9.999, W(0, 10))])
    runner.run(p)


@capability("state.expiry")
def test_state_readable_until_end_of_allowed_lateness(runner):
    # With allowed lateness 5 s, state of window [0,10) lives until 14.999; a timer then still reads it (SEMANTICS 7).
    p = runner.pipeline()
    out = (
        keyed_input(p, [("k", 0, 1), ("k", 0, 8), ("k", 0, 15)])
        | beam.WindowInto(window.FixedWindows(10), allowed_lateness=5)
        | beam.ParDo(_ReportAtExpiry(5))
    )
    check(out, [el(("k", 2), 14.999, W(0, 10)), el(("k", 1), 24.999, W(10, 20))])
    runner.run(p)


@capability("state.expiry")
def test_state_readable_at_end_of_global_window(runner):
    # In the global window state lives to the end of the global window: a timer there reads it (SEMANTICS 7).
    p = runner.pipeline()
    out = keyed_input(p, [("k", 0, 1), ("k", 0, 50), ("j", 0, 7)]) | beam.ParDo(_ReportAtExpiry(0))
    check(out, [el(("k", 2), END_OF_GLOBAL_WINDOW, GLOBAL), el(("j", 1), END_OF_GLOBAL_WINDOW, GLOBAL)])
    runner.run(p)


@capability("state.expiry")
def test_state_cleared_after_window_expiry(runner):
    # SEMANTICS 5/7: with allowed lateness 100 s, window [0,10) keeps its state for a late element at
    # watermark 50, and is garbage-collected once the watermark passes 109.999. An element for it after
    # that is droppable: dropped, or (if a runner processes it anyway) seeing fresh state, never count 3.
    class Count(beam.DoFn):
        COUNT = ReadModifyWriteStateSpec("count", coders.VarIntCoder())

        def process(self, kv, count=StateParam(COUNT)):
            n = (count.read() or 0) + 1
            count.write(n)
            yield n

    stream = (
        TestStream()
        .advance_watermark_to(0)
        .add_elements([window.TimestampedValue(("k", 1), 1)])
        .advance_watermark_to(50)
        .add_elements([window.TimestampedValue(("k", 2), 2)])
        .advance_watermark_to(200)
        .add_elements([window.TimestampedValue(("k", 3), 3)])
        .add_elements([window.TimestampedValue(("k", 4), 205)])
        .advance_watermark_to_infinity()
    )
    p = runner.pipeline()
    out = p | stream | beam.WindowInto(window.FixedWindows(10), allowed_lateness=100) | beam.ParDo(Count())
    kept = [el(1, window=W(0, 10)), el(2, window=W(0, 10)), el(1, window=W(200, 210))]
    check(out, one_of(kept, kept + [el(1, window=W(0, 10))]))
    runner.run(p)


@capability("state.expiry")
def test_state_expires_mid_stream_at_the_lateness_horizon(runner):
    """A stateful DoFn's state for a window lives exactly until the window expires, mid-stream.

    Fixed(10) with allowed lateness 5: [0,10) expires once the input watermark is past 14.999
    (max timestamp + allowed lateness, SEMANTICS 5/7). At watermark 14.999 an element for it is
    still processed with the window's state (count 3). A timer set for the expiry time (the latest
    allowed) fires as the watermark passes it, at 15, and still reads the state. Past it the
    window is gone while the stream goes on, and the successor window [10,20) of the same key
    counts from its own state (1, 2), untouched by the expiry of [0,10).

    The element for [0,10) at watermark 15 is droppable. The model makes dropping it mandatory at
    a GroupByKey only: the Runner Authoring Guide lets a runner drop data for an expired window
    anywhere, without requiring it elsewhere (Beam's Java StatefulDoFnRunner drops it; Prism, for
    one, processes it). So it may be dropped or processed, but never with the window's state from
    before the expiry: processed, it counts 1, and the timer it sets for 14.999 (already behind
    the watermark) may fire or not, reading that count or nothing. A runner that expires windows
    only at the end of the input counts it 4 and reads 4 at the timer."""

    class Fn(beam.DoFn):
        COUNT = ReadModifyWriteStateSpec("count", coders.VarIntCoder())
        EXPIRY = TimerSpec("expiry", TimeDomain.WATERMARK)

        def process(self, kv, count=StateParam(COUNT), expiry=TimerParam(EXPIRY), w=beam.DoFn.WindowParam):
            n = (count.read() or 0) + 1
            count.write(n)
            expiry.set(w.max_timestamp() + 5)
            yield n

        @on_timer(EXPIRY)
        def expired(self, count=StateParam(COUNT)):
            yield f"at expiry {count.read()}"

    stream = (
        TestStream()
        .advance_watermark_to(0)
        .add_elements([keyed_at(1, 1)])
        .add_elements([keyed_at(2, 2)])
        .advance_watermark_to(14.999)
        .add_elements([keyed_at(3, 3)])
        .advance_watermark_to(15)
        .add_elements([keyed_at(4, 4)])
        .add_elements([keyed_at(5, 13)])
        .add_elements([keyed_at(6, 14)])
        .advance_watermark_to_infinity()
    )
    p = runner.pipeline()
    out = p | stream | beam.WindowInto(window.FixedWindows(10), allowed_lateness=5) | _stateful(Fn())
    kept = [
        el(1, 1, W(0, 10)),
        el(2, 2, W(0, 10)),
        el(3, 3, W(0, 10)),
        el("at expiry 3", 14.999, W(0, 10)),
        el(1, 13, W(10, 20)),
        el(2, 14, W(10, 20)),
        el("at expiry 2", 24.999, W(10, 20)),
    ]
    processed_late = [el(1, 4, W(0, 10))]
    its_timer = [[], [el("at expiry 1", 14.999, W(0, 10))], [el("at expiry None", 14.999, W(0, 10))]]
    check(out, one_of(kept, *(kept + processed_late + fired for fired in its_timer)))
    runner.run(p)


@capability("state.expiry")
def test_element_in_an_expired_and_a_live_window_is_dropped_only_from_the_expired_one(runner):
    """An element in several windows reaching a stateful DoFn when one of them has expired: the copy
    in the live window is processed with that window's state; the copy in the expired window may
    be dropped, and is never processed with that window's old state.

    The model: an element assigned to several windows is several elements, one per window (the
    Runner Authoring Guide, "Implementing the Window primitive": a value in several windows stands
    for one element per window), and lateness is judged per window: droppable iff the window's
    max timestamp + allowed lateness is behind the input watermark (SEMANTICS 5). Dropping is
    required at a GroupByKey only; the Guide lets a runner drop data for an expired window
    anywhere else without requiring it, so at a stateful DoFn the expired copy may be dropped
    (Beam's Java StatefulDoFnRunner.processElement explodes the windows and drops each expired
    copy, counted in droppedDueToLateness) or processed, but the window's state is gone with its
    expiry (SEMANTICS 7): a processed copy counts from nothing.

    SlidingWindows(10, 5), allowed lateness 2: an element at 7..9 is in [0,10) (expires past
    11.999) and [5,15) (past 16.999). At watermark 11.999 both windows are live and b counts in
    each (2, 2); at watermark 12 c's copy in [5,15) counts 3, and its copy in [0,10) is dropped or
    counts 1. A runner that drops an element while any of its windows expired loses c's count in
    [5,15); one that keeps [0,10)'s state past its expiry counts c there 3."""
    p = runner.pipeline()
    stream = (
        TestStream()
        .advance_watermark_to(0)
        .add_elements([keyed_at("a", 7)])
        .advance_watermark_to(11.999)
        .add_elements([keyed_at("b", 8)])
        .advance_watermark_to(12)
        .add_elements([keyed_at("c", 9)])
        .advance_watermark_to_infinity()
    )
    out = p | stream | beam.WindowInto(window.SlidingWindows(10, 5), allowed_lateness=2) | beam.ParDo(_CountPerKey())
    live = [
        el(("k", 1), 7, W(0, 10)),
        el(("k", 1), 7, W(5, 15)),
        el(("k", 2), 8, W(0, 10)),
        el(("k", 2), 8, W(5, 15)),
        el(("k", 3), 9, W(5, 15)),
    ]
    check(out, one_of(live, live + [el(("k", 1), 9, W(0, 10))]))
    runner.run(p)
