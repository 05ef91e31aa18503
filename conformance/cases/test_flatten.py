"""Flatten: union of PCollections and its corner cases (conformance/SEMANTICS.md, section 3)."""

import apache_beam as beam
from apache_beam.transforms import window

from conformance.api import NO_FIRING, W, capability, check, created, el, grouped, sorted_groups, stamped_by_value

# --------------------------------------------------------------------------- basic


@capability("flatten.basic")
def test_flatten_three_inputs(runner):
    # SEMANTICS 3: Flatten is the multiset union of its inputs.
    p = runner.pipeline()
    a = p | "A" >> beam.Create([1, 2, 3])
    b = p | "B" >> beam.Create([3, 4])
    c = p | "C" >> beam.Create([5])
    check((a, b, c) | beam.Flatten(), created([1, 2, 3, 3, 4, 5]))
    runner.run(p)


@capability("flatten.basic")
def test_flatten_single_input(runner):
    # SEMANTICS 3: a single-input Flatten yields a new PCollection with the same content.
    p = runner.pipeline()
    a = p | beam.Create(["x", "y", "x"])
    check((a,) | beam.Flatten(), created(["x", "y", "x"]))
    runner.run(p)


@capability("flatten.basic")
def test_flatten_of_flattens(runner):
    # SEMANTICS 3: flattening already-flattened PCollections works and keeps every copy.
    p = runner.pipeline()
    a = p | "A" >> beam.Create([1, 2])
    b = p | "B" >> beam.Create([3])
    c = p | "C" >> beam.Create([4, 5])
    d = p | "D" >> beam.Create([6])
    ab = (a, b) | "FlattenAB" >> beam.Flatten()
    cd = (c, d) | "FlattenCD" >> beam.Flatten()
    inner = (ab, cd) | "FlattenAll" >> beam.Flatten()
    outer = (inner, a) | "FlattenAgain" >> beam.Flatten()
    check(inner, created([1, 2, 3, 4, 5, 6]), label="inner")
    check(outer, created([1, 2, 3, 4, 5, 6, 1, 2]), label="outer")
    runner.run(p)


@capability("flatten.basic")
def test_flatten_keeps_timestamps_windows_and_panes(runner):
    # Flatten changes nothing about an element: timestamp, window and (unknown) pane are kept (SEMANTICS 3).
    p = runner.pipeline()
    a = (
        p
        | "A" >> beam.Create([("a", 3), ("a", 14)])
        | "StampA" >> stamped_by_value()
        | "WinA" >> beam.WindowInto(window.FixedWindows(10))
    )
    b = (
        p
        | "B" >> beam.Create([("b", 7)])
        | "StampB" >> stamped_by_value()
        | "WinB" >> beam.WindowInto(window.FixedWindows(10))
    )
    check(
        (a, b) | beam.Flatten(),
        [
            el(("a", 3), 3, W(0, 10), NO_FIRING),
            el(("a", 14), 14, W(10, 20), NO_FIRING),
            el(("b", 7), 7, W(0, 10), NO_FIRING),
        ],
    )
    runner.run(p)


# --------------------------------------------------------------------------- same input several times


@capability("flatten.same_input")
def test_same_pcollection_three_times(runner):
    # SEMANTICS 3: (pc, pc, pc) | Flatten over ['a','b'] == ['a','b'] * 3.
    p = runner.pipeline()
    pc = p | beam.Create(["a", "b"])
    check((pc, pc, pc) | beam.Flatten(), created(["a", "b"]) * 3)
    runner.run(p)


@capability("flatten.same_input")
def test_same_pcollection_twice_and_a_derived_copy(runner):
    # SEMANTICS 3 (Java testFlattenInputMultipleCopies): 0..4 twice plus the shifted copy.
    p = runner.pipeline()
    pc = p | beam.Create(list(range(5)))
    shifted = pc | beam.Map(lambda x: x + 10)
    check((pc, pc, shifted) | beam.Flatten(), created(list(range(5)) * 2 + [x + 10 for x in range(5)]))
    runner.run(p)


@capability("flatten.same_input")
def test_same_pcollection_three_times_then_count(runner):
    # SEMANTICS 3: every occurrence contributes a copy, also when counted after a GroupByKey.
    p = runner.pipeline()
    pc = p | beam.Create([("k", 1), ("j", 2)])
    out = (pc, pc, pc) | beam.Flatten() | beam.GroupByKey() | sorted_groups()
    check(out, grouped([("k", [1, 1, 1]), ("j", [2, 2, 2])]))
    runner.run(p)


# --------------------------------------------------------------------------- empty flatten


@capability("flatten.empty")
def test_empty_flatten_consumed_by_pardo(runner):
    # SEMANTICS 3 (testFlattenPCollectionsEmptyThenParDo): Flatten of zero inputs is empty and a ParDo can consume it.
    p = runner.pipeline()
    empty = () | beam.Flatten(pipeline=p)
    check(empty, [], label="empty")
    check(empty | beam.Map(lambda x: x * 2), [], label="after_pardo")
    runner.run(p)


@capability("flatten.empty")
def test_empty_flatten_as_list_side_input(runner):
    # SEMANTICS 3 (testEmptyFlattenAsSideInput): an empty Flatten used as a side input is an empty list.
    p = runner.pipeline()
    empty = () | beam.Flatten(pipeline=p)
    main = p | beam.Create(["a", "b"])
    out = main | beam.Map(lambda x, side: (x, list(side)), side=beam.pvalue.AsList(empty))
    check(out, created([("a", []), ("b", [])]))
    runner.run(p)


@capability("flatten.empty")
def test_empty_flatten_as_singleton_side_input_with_default(runner):
    # SEMANTICS 3 and 6: an empty Flatten as a singleton side input with a default resolves to the default.
    p = runner.pipeline()
    empty = () | beam.Flatten(pipeline=p)
    main = p | beam.Create([1, 2])
    out = main | beam.Map(lambda x, s: x + s, s=beam.pvalue.AsSingleton(empty, default_value=10))
    check(out, created([11, 12]))
    runner.run(p)


@capability("flatten.empty")
def test_empty_flatten_flattened_with_non_empty(runner):
    # SEMANTICS 3: an empty Flatten is a neutral input of a further Flatten and of a GroupByKey.
    p = runner.pipeline()
    empty = () | "Empty" >> beam.Flatten(pipeline=p)
    full = p | beam.Create([("k", 1), ("k", 2)])
    out = (empty, full) | "Union" >> beam.Flatten() | beam.GroupByKey() | sorted_groups()
    check(out, grouped([("k", [1, 2])]))
    runner.run(p)


# --------------------------------------------------------------------------- heterogeneous coders


@capability("flatten.heterogeneous_coders")
def test_ints_and_strs_with_different_coders_then_gbk(runner):
    # SEMANTICS 3 (FlattenWithHeterogeneousCoders): inputs coded as varint and as UTF-8 strings are
    # transcoded to the output's coder; the union then groups correctly.
    p = runner.pipeline()
    ints = (
        p
        | "Ints" >> beam.Create([1, 2, 300]).with_output_types(int)
        | "KeyInts" >> beam.Map(lambda x: ("k", x)).with_output_types(tuple[str, int])
    )
    strs = (
        p
        | "Strs" >> beam.Create(["a", "bb"]).with_output_types(str)
        | "KeyStrs" >> beam.Map(lambda x: ("k", x)).with_output_types(tuple[str, str])
    )
    out = (ints, strs) | beam.Flatten() | beam.GroupByKey() | beam.MapTuple(lambda k, vs: (k, sorted(vs, key=repr)))
    check(out, grouped([("k", sorted([1, 2, 300, "a", "bb"], key=repr))]))
    runner.run(p)


@capability("flatten.heterogeneous_coders")
def test_bare_ints_and_strs_with_different_coders(runner):
    # SEMANTICS 3: the flattened elements of a varint input and a string input keep their exact values and types.
    p = runner.pipeline()
    ints = p | "Ints" >> beam.Create([0, -1, 2**40]).with_output_types(int)
    strs = p | "Strs" >> beam.Create(["0", ""]).with_output_types(str)
    out = (ints, strs) | beam.Flatten() | beam.Map(lambda x: (type(x).__name__, x))
    check(out, created([("int", 0), ("int", -1), ("int", 2**40), ("str", "0"), ("str", "")]))
    runner.run(p)


@capability("flatten.heterogeneous_coders")
def test_kv_inputs_with_different_value_coders_grouped(runner):
    # SEMANTICS 3: KVs whose value coders differ (varint, bytes, double) flatten and group under one key coder.
    p = runner.pipeline()
    a = p | "A" >> beam.Create([("x", 1), ("y", 2)]).with_output_types(tuple[str, int])
    b = p | "B" >> beam.Create([("x", b"\x00\xff")]).with_output_types(tuple[str, bytes])
    c = p | "C" >> beam.Create([("y", 2.5), ("x", -0.5)]).with_output_types(tuple[str, float])
    out = (
        (a, b, c)
        | beam.Flatten()
        | beam.GroupByKey()
        | beam.MapTuple(lambda k, vs: (k, sorted((type(v).__name__, v) for v in vs)))
    )
    check(
        out,
        grouped([("x", [("bytes", b"\x00\xff"), ("float", -0.5), ("int", 1)]), ("y", [("float", 2.5), ("int", 2)])]),
    )
    runner.run(p)


# --------------------------------------------------------------------------- into GroupByKey


@capability("flatten.into_gbk")
def test_flatten_feeding_gbk(runner):
    # SEMANTICS 3: a GBK after a Flatten groups values from all inputs under each key.
    p = runner.pipeline()
    a = p | "A" >> beam.Create([("k", 1), ("j", 2)])
    b = p | "B" >> beam.Create([("k", 3)])
    c = p | "C" >> beam.Create([("j", 4), ("i", 5)])
    out = (a, b, c) | beam.Flatten() | beam.GroupByKey() | sorted_groups()
    check(out, grouped([("k", [1, 3]), ("j", [2, 4]), ("i", [5])]))
    runner.run(p)


@capability("flatten.into_gbk")
def test_same_input_consumed_by_flatten_and_gbk(runner):
    # SEMANTICS 3 (Python test_flatten_and_gbk, #34647): one PCollection read by both a Flatten and a GBK.
    p = runner.pipeline()
    pc = p | "Shared" >> beam.Create([("k", 1), ("k", 2)])
    other = p | "Other" >> beam.Create([("k", 3)])
    direct = pc | "DirectGBK" >> beam.GroupByKey() | "SortDirect" >> sorted_groups()
    via_flatten = (
        (pc, other) | beam.Flatten() | "FlattenedGBK" >> beam.GroupByKey() | "SortFlattened" >> sorted_groups()
    )
    check(direct, grouped([("k", [1, 2])]), label="direct")
    check(via_flatten, grouped([("k", [1, 2, 3])]), label="via_flatten")
    runner.run(p)


@capability("flatten.into_gbk")
def test_flatten_of_windowed_inputs_into_gbk(runner):
    # SEMANTICS 3/4: after a Flatten of inputs with the same Fixed windowing, the GBK groups per key and window
    # across inputs.
    p = runner.pipeline()
    a = (
        p
        | "A" >> beam.Create([("k", 1), ("k", 12)])
        | "StampA" >> stamped_by_value()
        | "WinA" >> beam.WindowInto(window.FixedWindows(10))
    )
    b = (
        p
        | "B" >> beam.Create([("k", 5), ("k", 25)])
        | "StampB" >> stamped_by_value()
        | "WinB" >> beam.WindowInto(window.FixedWindows(10))
    )
    out = (a, b) | beam.Flatten() | beam.GroupByKey() | sorted_groups()
    check(
        out, grouped([("k", [1, 5])], W(0, 10)) + grouped([("k", [12])], W(10, 20)) + grouped([("k", [25])], W(20, 30))
    )
    runner.run(p)


@capability("flatten.into_gbk")
def test_flatten_same_input_twice_into_gbk_in_global_window(runner):
    # SEMANTICS 3: the two copies from a doubled input both reach the GBK; the group is in the global window.
    p = runner.pipeline()
    pc = p | beam.Create([("k", "v")])
    out = (pc, pc) | beam.Flatten() | beam.GroupByKey() | sorted_groups()
    check(out, grouped([("k", ["v", "v"])]))
    runner.run(p)
