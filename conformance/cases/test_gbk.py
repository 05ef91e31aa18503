"""GroupByKey: grouping per key, window and pane (conformance/SEMANTICS.md, sections 4 and 8)."""

import hashlib

import apache_beam as beam
from apache_beam import coders
from apache_beam.transforms import window

from conformance.api import (
    END_OF_GLOBAL_WINDOW,
    GLOBAL,
    ON_TIME_ONLY,
    TestStream,
    W,
    capability,
    check,
    el,
    grouped,
    keyed_at,
    sorted_groups,
    stamped_by_value,
)

# --------------------------------------------------------------------------- global window


@capability("gbk.global")
def test_global_window_groups_many_keys(runner):
    # SEMANTICS 4/5: a batch GBK in the global window emits one ON_TIME pane per key (first and last),
    # stamped END_OF_GLOBAL_WINDOW by the default END_OF_WINDOW timestamp combiner.
    p = runner.pipeline()
    data = [(f"key{k:02d}", k * 10 + i) for k in range(40) for i in range(3)]
    out = p | beam.Create(data) | beam.GroupByKey() | sorted_groups()
    check(
        out,
        [
            el((f"key{k:02d}", [k * 10, k * 10 + 1, k * 10 + 2]), END_OF_GLOBAL_WINDOW, GLOBAL, ON_TIME_ONLY)
            for k in range(40)
        ],
    )
    runner.run(p)


@capability("gbk.global")
def test_global_window_keys_of_several_types(runner):
    # SEMANTICS 8: keys of different types (str, int, bytes, tuple) in one PCollection group independently.
    p = runner.pipeline()
    data = [("a", 1), (7, 2), (b"a", 3), (("a", 7), 4), ("a", 5), (7, 6), (b"a", 7), (("a", 7), 8), (-3, 9)]
    out = (
        p
        | beam.Create(data)
        | beam.GroupByKey()
        | sorted_groups()
        | beam.MapTuple(lambda k, vs: ((type(k).__name__, k), vs))
    )
    check(
        out,
        [
            el((("str", "a"), [1, 5]), END_OF_GLOBAL_WINDOW, GLOBAL, ON_TIME_ONLY),
            el((("int", 7), [2, 6]), END_OF_GLOBAL_WINDOW, GLOBAL, ON_TIME_ONLY),
            el((("bytes", b"a"), [3, 7]), END_OF_GLOBAL_WINDOW, GLOBAL, ON_TIME_ONLY),
            el((("tuple", ("a", 7)), [4, 8]), END_OF_GLOBAL_WINDOW, GLOBAL, ON_TIME_ONLY),
            el((("int", -3), [9]), END_OF_GLOBAL_WINDOW, GLOBAL, ON_TIME_ONLY),
        ],
    )
    runner.run(p)


@capability("gbk.global")
def test_global_window_output_timestamp_is_end_of_window_not_input(runner):
    # SEMANTICS 4: END_OF_WINDOW (the default) stamps the group at the window's max timestamp,
    # whatever the input timestamps were.
    p = runner.pipeline()
    out = p | beam.Create([("k", 5), ("k", 100), ("j", -20)]) | stamped_by_value() | beam.GroupByKey() | sorted_groups()
    check(out, [el(("k", [5, 100]), END_OF_GLOBAL_WINDOW, GLOBAL), el(("j", [-20]), END_OF_GLOBAL_WINDOW, GLOBAL)])
    runner.run(p)


# --------------------------------------------------------------------------- fixed windows


@capability("gbk.fixed")
def test_fixed_windows_group_per_key_and_window(runner):
    # SEMANTICS 4/5: Fixed(10) puts t in [10N, 10N+10); each (key, window) is one ON_TIME pane at the window end.
    p = runner.pipeline()
    data = [("a", 1), ("a", 9), ("b", 5), ("a", 10), ("b", 19), ("a", 25)]
    out = (
        p
        | beam.Create(data)
        | stamped_by_value()
        | beam.WindowInto(window.FixedWindows(10))
        | beam.GroupByKey()
        | sorted_groups()
    )
    check(
        out,
        [
            el(("a", [1, 9]), 9.999, W(0, 10), ON_TIME_ONLY),
            el(("b", [5]), 9.999, W(0, 10), ON_TIME_ONLY),
            el(("a", [10]), 19.999, W(10, 20), ON_TIME_ONLY),
            el(("b", [19]), 19.999, W(10, 20), ON_TIME_ONLY),
            el(("a", [25]), 29.999, W(20, 30), ON_TIME_ONLY),
        ],
    )
    runner.run(p)


@capability("gbk.fixed")
def test_fixed_windows_negative_timestamps(runner):
    # SEMANTICS 4: window start = floor(t / size) * size, also below zero: -1 and -10 are in [-10, 0).
    p = runner.pipeline()
    data = [("k", -1.0), ("k", -10.0), ("k", -10.5), ("k", -0.001), ("k", 0.0), ("k", -25.0)]
    out = (
        p
        | beam.Create(data)
        | stamped_by_value()
        | beam.WindowInto(window.FixedWindows(10))
        | beam.GroupByKey()
        | sorted_groups()
    )
    check(
        out,
        [
            el(("k", [-25.0]), -20.001, W(-30, -20)),
            el(("k", [-10.5]), -10.001, W(-20, -10)),
            el(("k", [-10.0, -1.0, -0.001]), -0.001, W(-10, 0)),
            el(("k", [0.0]), 9.999, W(0, 10)),
        ],
    )
    runner.run(p)


@capability("gbk.fixed")
def test_fixed_windows_with_offset(runner):
    # SEMANTICS 4: Fixed(10, offset 3) windows are [10N+3, 10N+13); 2.999 and 3 fall on either side of a boundary.
    p = runner.pipeline()
    data = [("k", 2.999), ("k", 3.0), ("k", 12.999), ("k", 13.0), ("k", -7.0), ("k", -7.001)]
    out = (
        p
        | beam.Create(data)
        | stamped_by_value()
        | beam.WindowInto(window.FixedWindows(10, offset=3))
        | beam.GroupByKey()
        | sorted_groups()
    )
    check(
        out,
        [
            el(("k", [-7.001]), -7.001, W(-17, -7)),
            el(("k", [-7.0, 2.999]), 2.999, W(-7, 3)),
            el(("k", [3.0, 12.999]), 12.999, W(3, 13)),
            el(("k", [13.0]), 22.999, W(13, 23)),
        ],
    )
    runner.run(p)


@capability("gbk.fixed")
def test_fixed_windows_offset_is_normalised_into_size(runner):
    # SEMANTICS 4: the offset is normalised into [0, size): offset 13 with size 10 is offset 3.
    p = runner.pipeline()
    data = [("k", 2.0), ("k", 4.0), ("k", 14.0)]
    out = (
        p
        | beam.Create(data)
        | stamped_by_value()
        | beam.WindowInto(window.FixedWindows(10, offset=13))
        | beam.GroupByKey()
        | sorted_groups()
    )
    check(
        out,
        [el(("k", [2.0]), 2.999, W(-7, 3)), el(("k", [4.0]), 12.999, W(3, 13)), el(("k", [14.0]), 22.999, W(13, 23))],
    )
    runner.run(p)


# --------------------------------------------------------------------------- sliding windows


@capability("gbk.sliding")
def test_sliding_windows_java_vector_in_milliseconds(runner):
    # SEMANTICS 4 (Java GBK vector): size 5 ms, period 3 ms: t=1 -> [-3,2),[0,5); t=3,4 -> [0,5),[3,8).
    p = runner.pipeline()
    data = [("k", 0.001), ("k", 0.004), ("k", 0.003)]
    out = (
        p
        | beam.Create(data)
        | stamped_by_value()
        | beam.WindowInto(window.SlidingWindows(size=0.005, period=0.003))
        | beam.GroupByKey()
        | sorted_groups()
    )
    check(
        out,
        [
            el(("k", [0.001]), 0.001, W(-0.003, 0.002)),
            el(("k", [0.001, 0.003, 0.004]), 0.004, W(0, 0.005)),
            el(("k", [0.003, 0.004]), 0.007, W(0.003, 0.008)),
        ],
    )
    runner.run(p)


@capability("gbk.sliding")
def test_sliding_windows_element_goes_to_every_window(runner):
    # SEMANTICS 4: with size 10 and period 2 every element lies in exactly 5 windows, each a separate group.
    p = runner.pipeline()
    out = (
        p
        | beam.Create([("k", 7.5)])
        | stamped_by_value()
        | beam.WindowInto(window.SlidingWindows(size=10, period=2))
        | beam.GroupByKey()
        | sorted_groups()
    )
    check(out, [el(("k", [7.5]), start + 9.999, W(start, start + 10), ON_TIME_ONLY) for start in (-2, 0, 2, 4, 6)])
    runner.run(p)


@capability("gbk.sliding")
def test_sliding_windows_with_offset_and_negative_timestamps(runner):
    # SEMANTICS 4: window starts are last_start - k*period with last_start = t - ((t - offset) mod period).
    p = runner.pipeline()
    data = [("k", 0.0), ("k", 7.0), ("k", -4.0)]
    out = (
        p
        | beam.Create(data)
        | stamped_by_value()
        | beam.WindowInto(window.SlidingWindows(size=10, period=5, offset=2))
        | beam.GroupByKey()
        | sorted_groups()
    )
    # 0 -> [-3,7), [-8,2); 7 -> [7,17), [2,12); -4 -> [-8,2), [-13,-3)
    check(
        out,
        [
            el(("k", [-4.0]), -3.001, W(-13, -3)),
            el(("k", [-4.0, 0.0]), 1.999, W(-8, 2)),
            el(("k", [0.0]), 6.999, W(-3, 7)),
            el(("k", [7.0]), 11.999, W(2, 12)),
            el(("k", [7.0]), 16.999, W(7, 17)),
        ],
    )
    runner.run(p)


# --------------------------------------------------------------------------- sessions


@capability("gbk.sessions")
def test_sessions_java_vector(runner):
    # SEMANTICS 4 (Java GBK vector, gap 4): foo@1,@4 -> [1,8); bar@3 -> [3,7); foo@9 -> [9,13).
    p = runner.pipeline()
    data = [("foo", 1), ("foo", 4), ("bar", 3), ("foo", 9)]
    out = (
        p
        | beam.Create(data)
        | stamped_by_value()
        | beam.WindowInto(window.Sessions(4))
        | beam.GroupByKey()
        | sorted_groups()
    )
    check(
        out,
        [
            el(("foo", [1, 4]), 7.999, W(1, 8), ON_TIME_ONLY),
            el(("bar", [3]), 6.999, W(3, 7), ON_TIME_ONLY),
            el(("foo", [9]), 12.999, W(9, 13), ON_TIME_ONLY),
        ],
    )
    runner.run(p)


@capability("gbk.sessions")
def test_sessions_touching_windows_do_not_merge(runner):
    # SEMANTICS 4: sessions merge only on strict overlap; [1,5) and [5,9) touch and stay apart.
    p = runner.pipeline()
    out = (
        p
        | beam.Create([("k", 1), ("k", 5)])
        | stamped_by_value()
        | beam.WindowInto(window.Sessions(4))
        | beam.GroupByKey()
        | sorted_groups()
    )
    check(out, [el(("k", [1]), 4.999, W(1, 5)), el(("k", [5]), 8.999, W(5, 9))])
    runner.run(p)


@capability("gbk.sessions")
def test_sessions_overlapping_by_one_millisecond_merge(runner):
    # SEMANTICS 4: [0,4) and [3.999,7.999) overlap by 1 ms, so they merge into their span.
    p = runner.pipeline()
    out = (
        p
        | beam.Create([("k", 0.0), ("k", 3.999)])
        | stamped_by_value()
        | beam.WindowInto(window.Sessions(4))
        | beam.GroupByKey()
        | sorted_groups()
    )
    check(out, [el(("k", [0.0, 3.999]), 7.998, W(0, 7.999))])
    runner.run(p)


@capability("gbk.sessions")
def test_sessions_merge_bridging_several_sessions(runner):
    # SEMANTICS 4: an element overlapping two sessions merges them; chains of bridges give one span.
    p = runner.pipeline()
    # 0 -> [0,4), 6 -> [6,10), 12 -> [12,16) are apart; 3 bridges the first two, 9 the last two.
    data = [("k", 0), ("k", 6), ("k", 12), ("k", 3), ("k", 9), ("k", 30)]
    out = (
        p
        | beam.Create(data)
        | stamped_by_value()
        | beam.WindowInto(window.Sessions(4))
        | beam.GroupByKey()
        | sorted_groups()
    )
    check(out, [el(("k", [0, 3, 6, 9, 12]), 15.999, W(0, 16)), el(("k", [30]), 33.999, W(30, 34))])
    runner.run(p)


@capability("gbk.sessions")
def test_sessions_merge_per_key_only(runner):
    # SEMANTICS 4: session merging happens within one key; another key's overlapping window is untouched.
    p = runner.pipeline()
    data = [("a", 0), ("b", 2), ("a", 3), ("b", 10), ("c", 5)]
    out = (
        p
        | beam.Create(data)
        | stamped_by_value()
        | beam.WindowInto(window.Sessions(4))
        | beam.GroupByKey()
        | sorted_groups()
    )
    check(
        out,
        [
            el(("a", [0, 3]), 6.999, W(0, 7)),
            el(("b", [2]), 5.999, W(2, 6)),
            el(("b", [10]), 13.999, W(10, 14)),
            el(("c", [5]), 8.999, W(5, 9)),
        ],
    )
    runner.run(p)


# Sessions in a stream (TestStream): windows merge as elements arrive, and a session is complete
# once the watermark passes its max timestamp. Default trigger, allowed lateness 0, one element
# per step; each case stops the watermark where a runner that merged wrongly would close a window.


def _in_sessions(p, stream):
    return (
        p
        | "Stream" >> stream
        | "Sessions" >> beam.WindowInto(window.Sessions(10))
        | "Group" >> beam.GroupByKey()
        | "Sort" >> sorted_groups()
    )


@capability("gbk.sessions")
def test_sessions_exactly_one_gap_apart_in_a_stream_stay_apart(runner):
    """a at 0 and b at 10 with gap 10 are two sessions: [0,10) and [10,20) touch but do not overlap
    (windows are half-open; sessions merge only on strict overlap, SEMANTICS 4). So at watermark 10
    the session [0,10) is complete and fires {a}, while b's session goes on and merges with c
    (at 12: [12,22)) into [10,22). A runner merging touching sessions holds a back and gives one
    session [0,22)."""
    stream = (
        TestStream()
        .advance_watermark_to(0)
        .add_elements([keyed_at("a", 0)])
        .advance_watermark_to(5)
        .add_elements([keyed_at("b", 10)])
        .advance_watermark_to(10)
        .add_elements([keyed_at("c", 12)])
        .advance_watermark_to_infinity()
    )
    p = runner.pipeline()
    check(
        _in_sessions(p, stream),
        [el(("k", ["a"]), 9.999, W(0, 10), ON_TIME_ONLY), el(("k", ["b", "c"]), 21.999, W(10, 22), ON_TIME_ONLY)],
    )
    runner.run(p)


@capability("gbk.sessions")
def test_sessions_one_millisecond_short_of_a_gap_merge_in_a_stream(runner):
    """a at 0 and b at 9.999 with gap 10: [0,10) and [9.999,19.999) overlap by 1 ms and merge into
    [0,19.999) as b arrives (SEMANTICS 4). So nothing is complete at watermark 10, and c (at 5,
    not late: its window [5,15) ends after the watermark) joins the same session: one pane
    {a, b, c} at the end. A runner that does not merge them fires [0,10) {a} at watermark 10."""
    stream = (
        TestStream()
        .advance_watermark_to(0)
        .add_elements([keyed_at("a", 0)])
        .advance_watermark_to(5)
        .add_elements([keyed_at("b", 9.999)])
        .advance_watermark_to(10)
        .add_elements([keyed_at("c", 5)])
        .advance_watermark_to_infinity()
    )
    p = runner.pipeline()
    check(_in_sessions(p, stream), [el(("k", ["a", "b", "c"]), 19.998, W(0, 19.999), ON_TIME_ONLY)])
    runner.run(p)


@capability("gbk.sessions")
def test_later_bridging_element_merges_two_sessions_in_a_stream(runner):
    """Two sessions already buffered, [0,10) (a) and [15,25) (b), become one when a later element
    bridges them: c at 5.001 makes [5.001,15.001), overlapping the first by 4.999 s and the second
    by 1 ms, so all three merge into [0,25) (SEMANTICS 4: merging is transitive, per key, as
    elements arrive). c arrives at watermark 9.999, the last instant [0,10) is still open; at
    watermark 10 nothing may fire, and the end of the input fires one pane {a, b, c}. A runner that
    merges only windows arriving together, or does not re-merge buffered ones, fires [0,10) at
    watermark 10."""
    stream = (
        TestStream()
        .advance_watermark_to(0)
        .add_elements([keyed_at("a", 0)])
        .add_elements([keyed_at("b", 15)])
        .advance_watermark_to(9.999)
        .add_elements([keyed_at("c", 5.001)])
        .advance_watermark_to(10)
        .advance_watermark_to_infinity()
    )
    p = runner.pipeline()
    check(_in_sessions(p, stream), [el(("k", ["a", "b", "c"]), 24.999, W(0, 25), ON_TIME_ONLY)])
    runner.run(p)


@capability("gbk.sessions")
def test_expired_session_is_gone_for_a_later_overlapping_element(runner):
    """A session garbage-collected mid-stream no longer exists: a later element whose own window
    overlaps it starts a session of its own instead of reviving it.

    Allowed lateness 0: at watermark 10 the session [0,10) {a} fires on time and expires (its max
    timestamp + lateness, 9.999, is behind the watermark; SEMANTICS 5: windows are garbage-collected
    then). d at 5 then is not droppable (its window [5,15) ends after the watermark), but there is
    no live window to merge it with: it makes the session [5,15) {d}. A runner that keeps expired
    sessions until the end of the input merges d into [0,15) and emits a twice."""
    stream = (
        TestStream()
        .advance_watermark_to(0)
        .add_elements([keyed_at("a", 0)])
        .advance_watermark_to(10)
        .add_elements([keyed_at("d", 5)])
        .advance_watermark_to_infinity()
    )
    p = runner.pipeline()
    check(
        _in_sessions(p, stream),
        [el(("k", ["a"]), 9.999, W(0, 10), ON_TIME_ONLY), el(("k", ["d"]), 14.999, W(5, 15), ON_TIME_ONLY)],
    )
    runner.run(p)


# --------------------------------------------------------------------------- encoded keys


class AllEqualKey:
    """A key whose __eq__/__hash__ claim every instance equal; its coder tells them apart."""

    def __init__(self, name):
        self.name = name

    def __eq__(self, other):
        return True

    def __hash__(self):
        return 0


class NeverEqualKey:
    """A key no two instances of which are equal in Python; instances with one name encode alike."""

    def __init__(self, name):
        self.name = name

    def __eq__(self, other):
        return False

    def __hash__(self):
        return id(self)


class _NameCoder(coders.Coder):
    """Deterministic coder of the two key classes above: the UTF-8 bytes of .name."""

    def __init__(self, cls):
        self._cls = cls

    def encode(self, value):
        return value.name.encode("utf-8")

    def decode(self, encoded):
        return self._cls(encoded.decode("utf-8"))

    def is_deterministic(self):
        return True

    def __eq__(self, other):
        return type(self) is type(other) and self._cls is other._cls

    def __hash__(self):
        return hash(self._cls)


class AllEqualKeyCoder(_NameCoder):
    def __init__(self):
        super().__init__(AllEqualKey)


class NeverEqualKeyCoder(_NameCoder):
    def __init__(self):
        super().__init__(NeverEqualKey)


coders.registry.register_coder(AllEqualKey, AllEqualKeyCoder)
coders.registry.register_coder(NeverEqualKey, NeverEqualKeyCoder)


@capability("gbk.encoded_keys")
def test_python_equal_keys_with_different_encodings_stay_apart(runner):
    # SEMANTICS 8: GBK groups by encoded key bytes: 1, 1.0 and True are equal in Python but encode differently.
    p = runner.pipeline()
    data = [(1, "int"), (1.0, "float"), (True, "bool"), (1, "int2"), (True, "bool2")]
    out = (
        p
        | beam.Create(data)
        | beam.GroupByKey()
        | sorted_groups()
        | beam.MapTuple(lambda k, vs: (type(k).__name__, vs))
    )
    check(out, grouped([("int", ["int", "int2"]), ("float", ["float"]), ("bool", ["bool", "bool2"])]))
    runner.run(p)


@capability("gbk.encoded_keys")
def test_keys_claiming_equality_but_encoding_differently_stay_apart(runner):
    # SEMANTICS 8 (Java testGroupByKeyWithBadEqualsHashCode): __eq__/__hash__ do not decide grouping, the coder does.
    p = runner.pipeline()
    data = [("a", 1), ("b", 2), ("a", 3), ("c", 4)]
    out = (
        p
        | beam.Create(data)
        | beam.MapTuple(lambda name, v: (AllEqualKey(name), v)).with_output_types(tuple[AllEqualKey, int])
        | beam.GroupByKey()
        | beam.MapTuple(lambda k, vs: (k.name, sorted(vs)))
    )
    check(out, grouped([("a", [1, 3]), ("b", [2]), ("c", [4])]))
    runner.run(p)


@capability("gbk.encoded_keys")
def test_keys_never_equal_in_python_but_encoding_alike_group(runner):
    # SEMANTICS 8: keys whose encodings are identical form one group even if Python calls them unequal.
    p = runner.pipeline()
    data = [("a", 1), ("b", 2), ("a", 3), ("a", 4)]
    out = (
        p
        | beam.Create(data)
        | beam.MapTuple(lambda name, v: (NeverEqualKey(name), v)).with_output_types(tuple[NeverEqualKey, int])
        | beam.GroupByKey()
        | beam.MapTuple(lambda k, vs: (k.name, sorted(vs)))
    )
    check(out, grouped([("a", [1, 3, 4]), ("b", [2])]))
    runner.run(p)


@capability("gbk.encoded_keys")
def test_float_zero_and_negative_zero_keys_stay_apart(runner):
    # SEMANTICS 8: 0.0 == -0.0 in Python, but the double coder encodes them as different bytes.
    import math

    p = runner.pipeline()
    data = [(0.0, "pos"), (-0.0, "neg"), (0.0, "pos2")]
    out = (
        p
        | beam.Create(data).with_output_types(tuple[float, str])
        | beam.GroupByKey()
        | beam.MapTuple(lambda k, vs: ("-0.0" if math.copysign(1.0, k) < 0 else "+0.0", sorted(vs)))
    )
    check(out, grouped([("+0.0", ["pos", "pos2"]), ("-0.0", ["neg"])]))
    runner.run(p)


@capability("gbk.encoded_keys")
def test_keys_built_separately_but_encoding_alike_group(runner):
    # SEMANTICS 8: equal encodings group, however the key objects were produced (joined strings, fresh tuples).
    p = runner.pipeline()

    def rebuild(part, v):
        # "ab", "a"+"b" and "a"+"b" built from "b": distinct string and tuple objects, identical encodings.
        text = {"ab": "ab", "a": "a" + "b", "b": "a" + part}[part]
        return (text, (1, (2, "x" * 1))), v

    out = (
        p
        | beam.Create([("ab", 1), ("a", 2), ("b", 3), ("ab", 4)])
        | beam.MapTuple(rebuild)
        | beam.GroupByKey()
        | sorted_groups()
    )
    check(out, [el((("ab", (1, (2, "x"))), [1, 2, 3, 4]), END_OF_GLOBAL_WINDOW, GLOBAL)])
    runner.run(p)


# --------------------------------------------------------------------------- large keys and values


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _pattern(size: int, seed: int) -> bytes:
    block = bytes((seed + i) % 251 for i in range(251))
    return (block * (size // len(block) + 1))[:size]


@capability("gbk.large_values")
def test_one_and_ten_megabyte_values(runner):
    # SEMANTICS 8 (LargeKeys): a GBK carries values of 1 MB and 10 MB intact.
    p = runner.pipeline()
    mb = 1 << 20
    out = (
        p
        | beam.Create([("one", mb, 1), ("ten", 10 * mb, 2), ("one", 10, 3)])
        | beam.Map(lambda t: (t[0], _pattern(t[1], t[2])))
        | beam.GroupByKey()
        | beam.MapTuple(lambda k, vs: (k, sorted((len(v), _digest(v)) for v in vs)))
    )
    check(
        out,
        grouped(
            [
                ("one", sorted([(mb, _digest(_pattern(mb, 1))), (10, _digest(_pattern(10, 3)))])),
                ("ten", [(10 * mb, _digest(_pattern(10 * mb, 2)))]),
            ]
        ),
    )
    runner.run(p)


@capability("gbk.large_values")
def test_hundred_kilobyte_keys(runner):
    # SEMANTICS 8 (LargeKeys): 100 KB keys group by their full bytes; keys differing in the last byte stay apart.
    p = runner.pipeline()
    size = 100 * 1000

    def make_key(variant):
        return _pattern(size - 1, 7) + bytes([variant])

    out = (
        p
        | beam.Create([(0, 1), (1, 2), (0, 3)])
        | beam.MapTuple(lambda variant, v: (make_key(variant), v))
        | beam.GroupByKey()
        | beam.MapTuple(lambda k, vs: ((len(k), _digest(k)), sorted(vs)))
    )
    check(out, grouped([((size, _digest(make_key(0))), [1, 3]), ((size, _digest(make_key(1))), [2])]))
    runner.run(p)


@capability("gbk.large_values")
def test_hundred_thousand_values_under_one_key(runner):
    # SEMANTICS 8: one key can hold many values; none is lost or duplicated (count and sum of 0..99999).
    p = runner.pipeline()
    n = 100_000
    out = (
        p
        | beam.Create([None])
        | beam.FlatMap(lambda _: range(n))
        | beam.Map(lambda i: ("k", i))
        | beam.GroupByKey()
        | beam.MapTuple(lambda k, vs: (k, sum(1 for _ in vs), sum(vs), len(set(vs))))
    )
    check(out, grouped([("k", n, n * (n - 1) // 2, n)]))
    runner.run(p)


# --------------------------------------------------------------------------- empty input


@capability("gbk.empty")
def test_empty_input_gives_empty_output_and_downstream_pardo_runs(runner):
    # A GBK over no elements produces no groups; the ParDo after it runs on nothing and the job succeeds (SEMANTICS 3).
    p = runner.pipeline()
    grouped = p | beam.Create([]).with_output_types(tuple[str, int]) | beam.GroupByKey()
    after = grouped | beam.MapTuple(lambda k, vs: (k, sum(vs)))
    check(grouped, [], label="grouped")
    check(after, [], label="after_pardo")
    runner.run(p)


@capability("gbk.empty")
def test_empty_input_in_fixed_windows(runner):
    # A windowed GBK over no elements produces no groups (no window is ever created, nothing fires; SEMANTICS 3 and 4).
    p = runner.pipeline()
    out = (
        p
        | beam.Create([]).with_output_types(tuple[str, int])
        | beam.WindowInto(window.FixedWindows(10))
        | beam.GroupByKey()
        | beam.MapTuple(lambda k, vs: (k, len(list(vs))))
    )
    check(out, [])
    runner.run(p)


@capability("gbk.empty")
def test_empty_after_filter_next_to_non_empty_key(runner):
    # Filtering a key away entirely leaves no (empty) group for it: GBK emits only keys that had elements.
    # (SEMANTICS 8 and 10)
    p = runner.pipeline()
    out = (
        p
        | beam.Create([("keep", 1), ("drop", 2), ("keep", 3)])
        | beam.Filter(lambda kv: kv[0] != "drop")
        | beam.GroupByKey()
        | sorted_groups()
    )
    check(out, grouped([("keep", [1, 3])]))
    runner.run(p)
