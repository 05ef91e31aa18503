"""Unit tests of conformance.model.batch against the vectors in conformance/SEMANTICS.md (sections 3 and 4).

Units follow the vectors: Java tests count milliseconds, the Python transcripts count whole
units with windows written [start, max_timestamp]; the model works on any integer unit.
"""

from conformance.model import batch as model
from conformance.model.batch import EARLIEST, END_OF_WINDOW, GLOBAL, LATEST, ON_TIME_ONLY, Elem, Interval
from conformance.model.time import END_OF_GLOBAL_WINDOW_MS


def test_fixed_windows_with_and_without_offset():
    fixed = model.FixedWindows(10)
    assert fixed.assign(0) == [Interval(0, 10)]
    assert fixed.assign(9) == [Interval(0, 10)]
    assert fixed.assign(10) == [Interval(10, 20)]
    assert fixed.assign(-1) == [Interval(-10, 0)]
    # Before the epoch the max timestamp is still end - 1, inside the window.
    assert fixed.assign(-1)[0].max_timestamp == -1
    assert fixed.assign(fixed.assign(-15)[0].max_timestamp) == [Interval(-20, -10)]
    # Offset 13 normalises to 3: windows [3, 13), [13, 23), ...
    shifted = model.FixedWindows(10, offset=13)
    assert shifted.assign(2) == [Interval(-7, 3)]
    assert shifted.assign(3) == [Interval(3, 13)]
    assert shifted.assign(12) == [Interval(3, 13)]


def test_sliding_vector_from_java_gbk_test():
    # SEMANTICS 4: size 5, period 3: t=1 -> [-3,2), [0,5); t=4 and t=3 -> [0,5), [3,8); latest start first.
    sliding = model.SlidingWindows(5, 3)
    assert sliding.assign(1) == [Interval(0, 5), Interval(-3, 2)]
    assert sliding.assign(4) == [Interval(3, 8), Interval(0, 5)]
    assert sliding.assign(3) == [Interval(3, 8), Interval(0, 5)]


def test_sliding_with_offset_and_period_dividing_size():
    sliding = model.SlidingWindows(10, 5, offset=2)
    assert sliding.assign(7) == [Interval(7, 17), Interval(2, 12)]
    assert sliding.assign(6) == [Interval(2, 12), Interval(-3, 7)]


def test_sessions_vector_from_java_gbk_test():
    # SEMANTICS 4: gap 4: foo@1, foo@4 -> [1, 8); bar@3 -> [3, 7); foo@9 -> [9, 13).
    elems = model.create([(("foo", 1), 1), (("foo", 4), 4), (("bar", 3), 3), (("foo", 9), 9)], model.Sessions(4))
    groups = model.group_by_key(elems, model.Sessions(4))
    assert sorted(groups, key=repr) == sorted(
        [
            Elem(("foo", [1, 4]), 7, Interval(1, 8), ON_TIME_ONLY),
            Elem(("bar", [3]), 6, Interval(3, 7), ON_TIME_ONLY),
            Elem(("foo", [9]), 12, Interval(9, 13), ON_TIME_ONLY),
        ],
        key=repr,
    )


def test_touching_sessions_do_not_merge_but_overlapping_ones_chain():
    assert model.Sessions.merge([Interval(1, 5), Interval(5, 9)]) == {
        Interval(1, 5): Interval(1, 5),
        Interval(5, 9): Interval(5, 9),
    }
    # [0,4) overlaps [3,7) which overlaps [6,10): all three merge transitively.
    merged = model.Sessions.merge([Interval(0, 4), Interval(6, 10), Interval(3, 7)])
    assert set(merged.values()) == {Interval(0, 10)}


def test_sessions_merge_per_key_only():
    elems = model.create([(("a", 1), 0), (("b", 2), 3)], model.Sessions(5))
    groups = model.group_by_key(elems, model.Sessions(5))
    assert sorted(g.window for g in groups) == [Interval(0, 5), Interval(3, 8)]


def test_timestamp_combiner_transcript():
    # SEMANTICS 4: 1,2,3,10,11,25 in Fixed(10): EOW 9/19/29, EARLIEST 1/10/25, LATEST 3/11/25.
    inputs = [(("k", t), t) for t in (1, 2, 3, 10, 11, 25)]
    fixed = model.FixedWindows(10)
    expected = {END_OF_WINDOW: [9, 19, 29], EARLIEST: [1, 10, 25], LATEST: [3, 11, 25]}
    for combiner, timestamps in expected.items():
        groups = sorted(model.group_by_key(model.create(inputs, fixed), fixed, combiner), key=lambda g: g.window)
        assert [g.timestamp for g in groups] == timestamps, combiner
        assert [g.value for g in groups] == [("k", [1, 2, 3]), ("k", [10, 11]), ("k", [25])]


def test_java_earliest_and_latest_in_ten_minute_window():
    # SEMANTICS 4: values at 0 and 10 ms in a 10-minute window -> EARLIEST 0, LATEST 10.
    fixed = model.FixedWindows(600_000)
    elems = model.create([(("k", 0), 0), (("k", 10), 10)], fixed)
    assert model.group_by_key(elems, fixed, EARLIEST)[0].timestamp == 0
    assert model.group_by_key(elems, fixed, LATEST)[0].timestamp == 10
    assert model.group_by_key(elems, fixed)[0].timestamp == 599_999


def test_global_window_end_of_window_timestamp():
    elems = model.create([(("k", 1), 5)])
    assert model.group_by_key(elems, model.GlobalWindows()) == [
        Elem(("k", [1]), END_OF_GLOBAL_WINDOW_MS, GLOBAL, ON_TIME_ONLY)
    ]


def test_grouping_uses_encoded_key_identity():
    elems = model.create([((1, "int"), 0), (("1", "str"), 0), ((1, "int2"), 0)])
    groups = model.group_by_key(elems, model.GlobalWindows())
    assert sorted(g.value for g in groups if g.value[0] == 1) == [(1, ["int", "int2"])]
    assert len(groups) == 2


def test_combine_per_key_keeps_group_timestamps_and_windows():
    fixed = model.FixedWindows(10)
    elems = model.create([(("k", 1), 1), (("k", 2), 4), (("j", 5), 12)], fixed)
    assert sorted(model.combine_per_key(elems, fixed, sum, LATEST)) == [
        Elem(("j", 5), 12, Interval(10, 20), ON_TIME_ONLY),
        Elem(("k", 3), 4, Interval(0, 10), ON_TIME_ONLY),
    ]


def test_flatten_is_a_multiset_union():
    # SEMANTICS 3: the same PCollection flattened three times contributes three copies.
    pc = model.create([("a", 1), ("b", 2)])
    assert sorted(e.value for e in model.flatten(pc, pc, pc)) == ["a", "a", "a", "b", "b", "b"]
    assert model.flatten() == []


def test_rewindowing_sliding_output_duplicates_per_window():
    sliding = model.SlidingWindows(10, 5)
    elems = model.create([("x", 7)], sliding)
    assert len(elems) == 2
    rewindowed = model.window_into(elems, model.FixedWindows(10))
    assert rewindowed == [Elem("x", 7, Interval(0, 10), None)] * 2
