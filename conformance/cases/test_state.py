"""User state in a stateful ParDo (SEMANTICS.md, section 7).

State is scoped per key, per window and per transform, survives between the
elements of that scope, and is garbage-collected when the window expires
(window max timestamp + allowed lateness).

Beam 2.77's Python SDK offers ReadModifyWriteStateSpec, BagStateSpec,
CombiningValueStateSpec, SetStateSpec and OrderedListStateSpec; it has no MapStateSpec
(and its SDK harness no map/multimap user state), so state.map has no case here.
"""
import pytest

import apache_beam as beam
from apache_beam.coders import coders
from apache_beam.testing import test_stream
from apache_beam.transforms import combiners, window
from apache_beam.transforms.userstate import (BagStateSpec, CombiningValueStateSpec, OrderedListStateSpec,
                                              ReadModifyWriteStateSpec, SetStateSpec, TimerSpec, on_timer)
from apache_beam.transforms.timeutil import TimeDomain
from apache_beam.utils.timestamp import Timestamp

from conformance.api import (END_OF_GLOBAL_WINDOW, GLOBAL, W, capability, check, el, keyed_input, one_of,
                             satisfies)

StateParam = beam.DoFn.StateParam
TimerParam = beam.DoFn.TimerParam


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


@capability("state.value")
def test_value_counter_per_key(runner):
    # SEMANTICS 7: value state is per key; each key counts its own elements 1..n.
    p = runner.pipeline()
    data = [("a", 0), ("b", 0), ("a", 0), ("a", 0), ("b", 0)]
    out = p | beam.Create(data) | beam.ParDo(_CountPerKey())
    check(out, [("a", 1), ("a", 2), ("a", 3), ("b", 1), ("b", 2)])
    runner.run(p)


@capability("state.value")
def test_value_unwritten_reads_none_and_write_is_visible(runner):
    # An unwritten value state reads as None; a write is visible to a read later in the same call.
    class Fn(beam.DoFn):
        LAST = ReadModifyWriteStateSpec("last", coders.StrUtf8Coder())

        def process(self, kv, last=StateParam(LAST)):
            before = last.read()
            last.write(kv[1])
            yield kv[0], before, last.read()

    p = runner.pipeline()
    out = p | beam.Create([("a", "x"), ("b", "y")]) | beam.ParDo(Fn())
    check(out, [("a", None, "x"), ("b", None, "y")])
    runner.run(p)


@capability("state.value")
def test_value_cleared_state_reads_none(runner):
    # A cleared value state reads as None, in the same call and for the next element of the key.
    class Fn(beam.DoFn):
        VALUE = ReadModifyWriteStateSpec("value", coders.VarIntCoder())

        def process(self, kv, value=StateParam(VALUE)):
            before = value.read()
            value.write(kv[1])
            value.clear()
            yield kv[0], before, value.read()

    p = runner.pipeline()
    out = p | beam.Create([("a", 1), ("a", 2), ("a", 3), ("b", 4)]) | beam.ParDo(Fn())
    check(out, [("a", None, None)] * 3 + [("b", None, None)])
    runner.run(p)


# --------------------------------------------------------------------------- state.bag

@capability("state.bag")
def test_bag_accumulates_all_values_with_duplicates(runner):
    # A bag keeps every added value (duplicates included) across the elements of a key.
    class Fn(beam.DoFn):
        BAG = BagStateSpec("bag", coders.VarIntCoder())

        def process(self, kv, bag=StateParam(BAG)):
            bag.add(kv[1])
            contents = sorted(bag.read())
            yield "size", kv[0], len(contents)
            if len(contents) == 3:
                yield "full", kv[0], contents

    p = runner.pipeline()
    data = [("a", 2), ("b", 5), ("a", 1), ("b", 6), ("a", 2), ("b", 4)]
    out = p | beam.Create(data) | beam.ParDo(Fn())
    check(out, [("size", "a", 1), ("size", "a", 2), ("size", "a", 3), ("full", "a", [1, 2, 2]),
                ("size", "b", 1), ("size", "b", 2), ("size", "b", 3), ("full", "b", [4, 5, 6])])
    runner.run(p)


@capability("state.bag")
def test_bag_cleared_reads_empty(runner):
    # A cleared bag reads empty, in the same call and for the next element of the key.
    class Fn(beam.DoFn):
        BAG = BagStateSpec("bag", coders.VarIntCoder())

        def process(self, kv, bag=StateParam(BAG)):
            before = list(bag.read())
            bag.add(kv[1])
            bag.add(kv[1] + 100)
            added = sorted(bag.read())
            bag.clear()
            yield kv[0], before, added, list(bag.read())

    p = runner.pipeline()
    out = p | beam.Create([("a", 1), ("a", 2), ("a", 3)]) | beam.ParDo(Fn())
    check(out, [("a", [], [1, 101], []), ("a", [], [2, 102], []), ("a", [], [3, 103], [])])
    runner.run(p)


@capability("state.bag")
def test_bag_flush_and_clear_every_two_elements(runner):
    # Add after clear starts a fresh bag: 5 elements flushed in pairs give 2 flushes of 2 and 1 left over.
    class Fn(beam.DoFn):
        BAG = BagStateSpec("bag", coders.VarIntCoder())

        def process(self, kv, bag=StateParam(BAG)):
            bag.add(kv[1])
            contents = sorted(bag.read())
            if len(contents) == 2:
                bag.clear()
                yield "flush", contents
            else:
                yield "held", contents

    def verify(records):
        flushes = [r.value[1] for r in records if r.value[0] == "flush"]
        held = [r.value[1][0] for r in records if r.value[0] == "held" and len(r.value[1]) == 1]
        assert len(flushes) == 2 and all(len(f) == 2 for f in flushes), f"flushes {flushes}"
        assert len(held) == 3 and len(records) == 5, f"held {held}"
        flushed = [v for f in flushes for v in f]
        assert all(sum(v in held for v in f) == 1 for f in flushes), "each flush = one held value + one more"
        leftover = [v for v in held if v not in flushed]
        assert sorted(flushed + leftover) == [1, 2, 3, 4, 5], f"flushed {flushed}, leftover {leftover}"
        return True

    p = runner.pipeline()
    out = p | beam.Create([("a", v) for v in (1, 2, 3, 4, 5)]) | beam.ParDo(Fn())
    check(out, satisfies(verify, "two flushes of two distinct values, three single-value bags, covering 1..5"))
    runner.run(p)


# --------------------------------------------------------------------------- state.combining

@capability("state.combining")
def test_combining_state_with_callable(runner):
    # Combining state with a callable (sum) reads the combined value of every add of the key.
    class Fn(beam.DoFn):
        TOTAL = CombiningValueStateSpec("total", combine_fn=sum)
        COUNT = CombiningValueStateSpec("count", coders.VarIntCoder(), combiners.CountCombineFn())

        def process(self, kv, total=StateParam(TOTAL), count=StateParam(COUNT)):
            total.add(kv[1])
            count.add(1)
            if count.read() == 3:
                yield kv[0], total.read()

    p = runner.pipeline()
    data = [("a", 5), ("b", 10), ("a", 2), ("b", 20), ("a", 9), ("b", 30)]
    out = p | beam.Create(data) | beam.ParDo(Fn())
    check(out, [("a", 16), ("b", 60)])
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
    # Combining state runs a CombineFn: add_input per add, extract_output on read.
    class Fn(beam.DoFn):
        STATS = CombiningValueStateSpec("stats", _MinMaxCount())

        def process(self, kv, stats=StateParam(STATS)):
            stats.add(kv[1])
            result = stats.read()
            if result.endswith("/4"):
                yield kv[0], result

    p = runner.pipeline()
    data = [("a", 7), ("a", -3), ("a", 12), ("a", 4), ("b", 1), ("b", 1), ("b", 1), ("b", 1)]
    out = p | beam.Create(data) | beam.ParDo(Fn())
    check(out, [("a", "-3..12/4"), ("b", "1..1/4")])
    runner.run(p)


@capability("state.combining")
def test_combining_state_cleared_reads_empty_result(runner):
    # Cleared combining state reads as the CombineFn's output for an empty accumulator (sum: 0).
    class Fn(beam.DoFn):
        TOTAL = CombiningValueStateSpec("total", combine_fn=sum)

        def process(self, kv, total=StateParam(TOTAL)):
            before = total.read()
            total.add(kv[1])
            total.add(kv[1])
            added = total.read()
            total.clear()
            yield kv[0], before, added, total.read()

    p = runner.pipeline()
    out = p | beam.Create([("a", 3), ("a", 4), ("b", 5)]) | beam.ParDo(Fn())
    check(out, [("a", 0, 6, 0), ("a", 0, 8, 0), ("b", 0, 10, 0)])
    runner.run(p)


# --------------------------------------------------------------------------- state.set

@capability("state.set")
def test_set_state_deduplicates(runner):
    # Set state holds each distinct value once; membership reflects earlier adds of the key.
    class Fn(beam.DoFn):
        SEEN = SetStateSpec("seen", coders.StrUtf8Coder())
        COUNT = CombiningValueStateSpec("count", coders.VarIntCoder(), combiners.CountCombineFn())

        def process(self, kv, seen=StateParam(SEEN), count=StateParam(COUNT)):
            key, value = kv
            yield "dup", key, value, value in set(seen.read())
            seen.add(value)
            count.add(1)
            if count.read() == 5:
                yield "all", key, sorted(seen.read())

    p = runner.pipeline()
    data = [("a", "x"), ("a", "y"), ("a", "x"), ("a", "z"), ("a", "y"), ("b", "x")]
    out = p | beam.Create(data) | beam.ParDo(Fn())
    check(out, [("dup", "a", "x", False), ("dup", "a", "x", True), ("dup", "a", "y", False),
                ("dup", "a", "y", True), ("dup", "a", "z", False), ("dup", "b", "x", False),
                ("all", "a", ["x", "y", "z"])])
    runner.run(p)


@capability("state.set")
def test_set_state_cleared_reads_empty(runner):
    # A cleared set reads empty, in the same call and for the next element of the key.
    class Fn(beam.DoFn):
        SEEN = SetStateSpec("seen", coders.VarIntCoder())

        def process(self, kv, seen=StateParam(SEEN)):
            before = sorted(seen.read())
            seen.add(kv[1])
            seen.add(kv[1])
            seen.add(kv[1] + 1)
            added = sorted(seen.read())
            seen.clear()
            yield kv[0], before, added, sorted(seen.read())

    p = runner.pipeline()
    out = p | beam.Create([("a", 1), ("a", 10), ("b", 5)]) | beam.ParDo(Fn())
    check(out, [("a", [], [1, 2], []), ("a", [], [10, 11], []), ("b", [], [5, 6], [])])
    runner.run(p)


# --------------------------------------------------------------------------- state.ordered_list

class _OrderedListFn(beam.DoFn):
    """Adds (sort key, value) pairs; once `total` elements of a key arrived, reports `on_full(state)`."""
    LIST = OrderedListStateSpec("list", coders.StrUtf8Coder())
    COUNT = CombiningValueStateSpec("count", coders.VarIntCoder(), combiners.CountCombineFn())

    def __init__(self, total, on_full):
        self._total = total
        self._on_full = on_full

    def process(self, kv, ol=StateParam(LIST), count=StateParam(COUNT)):
        sort_key, value = kv[1]
        ol.add((Timestamp(sort_key), value))
        count.add(1)
        if count.read() == self._total:
            yield kv[0], self._on_full(ol)


def _ordered_list_input(p):
    data = [("a", (30, "thirty")), ("a", (10, "ten")), ("a", (40, "forty")), ("a", (20, "twenty")),
            ("a", (10, "ten-bis"))]
    return p | beam.Create(data)


@capability("state.ordered_list")
def test_ordered_list_reads_in_sort_key_order(runner):
    # Ordered list state reads back sorted by sort key, whatever the add order (equal keys: any order).
    def full(ol):
        items = list(ol.read())
        return [_secs(t) for t, _ in items], sorted((_secs(t), v) for t, v in items)

    p = runner.pipeline()
    out = _ordered_list_input(p) | beam.ParDo(_OrderedListFn(5, full))
    check(out, [("a", ([10, 10, 20, 30, 40],
                       [(10, "ten"), (10, "ten-bis"), (20, "twenty"), (30, "thirty"), (40, "forty")]))])
    runner.run(p)


@capability("state.ordered_list")
def test_ordered_list_read_range_is_half_open(runner):
    # read_range(min, limit) returns the entries with min <= sort key < limit, in order.
    def full(ol):
        return ([v for _, v in ol.read_range(Timestamp(15), Timestamp(35))],
                [v for _, v in ol.read_range(Timestamp(20), Timestamp(40))],
                [v for _, v in ol.read_range(Timestamp(41), Timestamp(100))])

    p = runner.pipeline()
    out = _ordered_list_input(p) | beam.ParDo(_OrderedListFn(5, full))
    check(out, [("a", (["twenty", "thirty"], ["twenty", "thirty"], []))])
    runner.run(p)


@capability("state.ordered_list")
def test_ordered_list_clear_range_persists(runner):
    # clear_range(min, limit) removes [min, limit) only, and the removal persists past the call.
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
    out = _ordered_list_input(p) | beam.ParDo(Fn())
    remaining = [(10, "ten"), (10, "ten-bis"), (40, "forty")]
    check(out, [("a", "pruned", remaining), ("a", "later", remaining)])
    runner.run(p)


@capability("state.ordered_list")
def test_ordered_list_cleared_reads_empty(runner):
    # A cleared ordered list reads empty, in the same call and for the next element of the key.
    class Fn(beam.DoFn):
        LIST = OrderedListStateSpec("list", coders.VarIntCoder())

        def process(self, kv, ol=StateParam(LIST)):
            before = list(ol.read())
            ol.add((Timestamp(kv[1]), kv[1]))
            ol.add((Timestamp(1), 1))
            added = [v for _, v in ol.read()]
            ol.clear()
            yield kv[0], before, added, list(ol.read())

    p = runner.pipeline()
    out = p | beam.Create([("a", 7), ("a", 5), ("b", 9)]) | beam.ParDo(Fn())
    check(out, [("a", [], [1, 7], []), ("a", [], [1, 5], []), ("b", [], [1, 9], [])])
    runner.run(p)


# --------------------------------------------------------------------------- state.windowed

class _CountFromZero(beam.DoFn):
    COUNT = ReadModifyWriteStateSpec("count", coders.VarIntCoder())

    def process(self, kv, count=StateParam(COUNT)):
        n = count.read() or 0
        count.write(n + 1)
        yield n


@capability("state.windowed")
def test_value_state_partitioned_per_fixed_window(runner):
    # SEMANTICS 7 (testValueStateFixedWindows): one key, windows [0,10) -> 0,1,2 and [10,20) -> 0,1.
    p = runner.pipeline()
    out = (keyed_input(p, [("k", 0, 1), ("k", 0, 2), ("k", 0, 3), ("k", 0, 11), ("k", 0, 12)])
           | beam.WindowInto(window.FixedWindows(10))
           | beam.ParDo(_CountFromZero()))
    check(out, [el(0, window=W(0, 10)), el(1, window=W(0, 10)), el(2, window=W(0, 10)),
                el(0, window=W(10, 20)), el(1, window=W(10, 20))])
    runner.run(p)


@capability("state.windowed")
def test_state_partitioned_per_sliding_window(runner):
    # An element in several sliding windows updates each window's own state cell.
    # Sliding(15, 5): t=7 -> [-5,10), [0,15), [5,20); t=12 -> [0,15), [5,20), [10,25).
    p = runner.pipeline()
    out = (keyed_input(p, [("k", 0, 7), ("k", 0, 12)])
           | beam.WindowInto(window.SlidingWindows(15, 5))
           | beam.ParDo(_CountFromZero()))
    check(out, [el(0, window=W(-5, 10)), el(0, window=W(0, 15)), el(1, window=W(0, 15)),
                el(0, window=W(5, 20)), el(1, window=W(5, 20)), el(0, window=W(10, 25))])
    runner.run(p)


@capability("state.windowed")
def test_same_state_id_in_two_pardos_is_not_shared(runner):
    # SEMANTICS 7 (testValueStateSameId): two stateful ParDos with the same state id have separate state.
    p = runner.pipeline()
    data = [("a", 0), ("a", 0), ("a", 0), ("b", 0)]
    first = p | beam.Create(data) | "First" >> beam.ParDo(_CountPerKey())
    second = first | "Second" >> beam.ParDo(_CountPerKey())
    check(first, [("a", 1), ("a", 2), ("a", 3), ("b", 1)], label="first")
    check(second, [("a", 1), ("a", 2), ("a", 3), ("b", 1)], label="second")
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
    out = (keyed_input(p, [("k", 0, 1), ("k", 0, 2), ("k", 0, 12), ("j", 0, 3)])
           | beam.WindowInto(window.FixedWindows(10))
           | beam.ParDo(_ReportAtExpiry(0)))
    check(out, [el(("k", 2), 9.999, W(0, 10)), el(("k", 1), 19.999, W(10, 20)), el(("j", 1), 9.999, W(0, 10))])
    runner.run(p)


@capability("state.expiry")
def test_state_readable_until_end_of_allowed_lateness(runner):
    # With allowed lateness 5 s, state of window [0,10) lives until 14.999; a timer then still reads it.
    p = runner.pipeline()
    out = (keyed_input(p, [("k", 0, 1), ("k", 0, 8), ("k", 0, 15)])
           | beam.WindowInto(window.FixedWindows(10), allowed_lateness=5)
           | beam.ParDo(_ReportAtExpiry(5)))
    check(out, [el(("k", 2), 14.999, W(0, 10)), el(("k", 1), 24.999, W(10, 20))])
    runner.run(p)


@capability("state.expiry")
def test_state_readable_at_end_of_global_window(runner):
    # In the global window state lives to the end of the global window: a timer there reads it.
    p = runner.pipeline()
    out = (keyed_input(p, [("k", 0, 1), ("k", 0, 50), ("j", 0, 7)])
           | beam.ParDo(_ReportAtExpiry(0)))
    check(out, [el(("k", 2), END_OF_GLOBAL_WINDOW, GLOBAL), el(("j", 1), END_OF_GLOBAL_WINDOW, GLOBAL)])
    runner.run(p)


@pytest.mark.streaming
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

    stream = (test_stream.TestStream()
              .advance_watermark_to(0)
              .add_elements([window.TimestampedValue(("k", 1), 1)])
              .advance_watermark_to(50)
              .add_elements([window.TimestampedValue(("k", 2), 2)])
              .advance_watermark_to(200)
              .add_elements([window.TimestampedValue(("k", 3), 3)])
              .add_elements([window.TimestampedValue(("k", 4), 205)])
              .advance_watermark_to_infinity())
    p = runner.pipeline()
    out = (p | stream
           | beam.WindowInto(window.FixedWindows(10), allowed_lateness=100)
           | beam.ParDo(Count()))
    kept = [el(1, window=W(0, 10)), el(2, window=W(0, 10)), el(1, window=W(200, 210))]
    check(out, one_of(kept, kept + [el(1, window=W(0, 10))]))
    runner.run(p)
