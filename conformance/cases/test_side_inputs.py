"""Side inputs: views, window mapping, missing windows and readiness (conformance/SEMANTICS.md, section 6)."""

import apache_beam as beam
from apache_beam.pvalue import AsDict, AsIter, AsList, AsMultiMap, AsSingleton, EmptySideInput
from apache_beam.transforms import window

from conformance.api import NO_FIRING, W, capability, check, created, el, grouped, value_at_time

# ---------------------------------------------------------------------------
# side_inputs.singleton


@capability("side_inputs.singleton")
def test_singleton_value_seen_by_every_element(runner):
    # AsSingleton over a one-element PCollection gives that value to every main element (SEMANTICS 6).
    p = runner.pipeline()
    side = p | "Side" >> beam.Create([10])
    out = p | "Main" >> beam.Create([1, 2, 3]) | beam.Map(lambda x, s: x + s, AsSingleton(side))
    check(out, created([11, 12, 13]))
    runner.run(p)


@capability("side_inputs.singleton")
def test_singleton_default_used_on_empty_input(runner):
    # SEMANTICS 6: AsSingleton(side, 10) on an empty PCollection -> 10.
    p = runner.pipeline()
    side = p | "Side" >> beam.Create([])
    out = p | "Main" >> beam.Create([1, 2]) | beam.Map(lambda x, s: (x, s), AsSingleton(side, default_value=10))
    check(out, created([(1, 10), (2, 10)]))
    runner.run(p)


@capability("side_inputs.singleton")
def test_singleton_default_ignored_when_value_present(runner):
    # The default applies only to an empty side input: a present value wins (SEMANTICS 6).
    p = runner.pipeline()
    side = p | "Side" >> beam.Create(["real"])
    out = p | "Main" >> beam.Create([1]) | beam.Map(lambda x, s: (x, s), AsSingleton(side, default_value="dflt"))
    check(out, created([(1, "real")]))
    runner.run(p)


@capability("side_inputs.singleton")
def test_singleton_without_default_on_empty_is_empty_side_input(runner):
    # SEMANTICS 6: Python (unlike Java) gives the EmptySideInput sentinel for an empty singleton without default.
    p = runner.pipeline()
    side = p | "Side" >> beam.Create([])
    out = (
        p
        | "Main" >> beam.Create([1, 2])
        | beam.Map(lambda x, s: (x, "empty" if isinstance(s, EmptySideInput) else "full"), AsSingleton(side))
    )
    check(out, created([(1, "empty"), (2, "empty")]))
    runner.run(p)


@capability("side_inputs.singleton")
def test_singleton_over_several_values_fails_job(runner):
    # SEMANTICS 6: a singleton view over more than one value is an error in every SDK.
    p = runner.pipeline()
    side = p | "Side" >> beam.Create([3, 4])
    _ = p | "Main" >> beam.Create([1, 2]) | beam.Map(lambda x, s: x * s, AsSingleton(side))
    runner.run_expecting_failure(p, match="singleton view")


@capability("side_inputs.singleton")
def test_singleton_of_structured_value(runner):
    # A singleton carries arbitrary encodable values (here a dict) unchanged (SEMANTICS 6).
    p = runner.pipeline()
    side = p | "Side" >> beam.Create([{"a": 1, "b": [2, 3]}])
    out = p | "Main" >> beam.Create(["a", "b"]) | beam.Map(lambda k, d: (k, d[k]), AsSingleton(side))
    check(out, created([("a", 1), ("b", [2, 3])]))
    runner.run(p)


# ---------------------------------------------------------------------------
# side_inputs.iterable


@capability("side_inputs.iterable")
def test_iterable_side_input_sees_all_values_and_reiterates(runner):
    # AsIter yields every side value (multiset); it can be iterated more than once (SEMANTICS 6).
    def use(x, it):
        first = sorted(it)
        second = sorted(it)
        return (x, first, first == second)

    p = runner.pipeline()
    side = p | "Side" >> beam.Create([3, 1, 2, 2])
    out = p | "Main" >> beam.Create(["a", "b"]) | beam.Map(use, AsIter(side))
    check(out, created([("a", [1, 2, 2, 3], True), ("b", [1, 2, 2, 3], True)]))
    runner.run(p)


@capability("side_inputs.iterable")
def test_iterable_side_input_of_empty_create_is_empty(runner):
    # SEMANTICS 6: an empty side input resolves to an empty iterable.
    p = runner.pipeline()
    side = p | "Side" >> beam.Create([])
    out = p | "Main" >> beam.Create([1, 2]) | beam.Map(lambda x, it: (x, list(it)), AsIter(side))
    check(out, created([(1, []), (2, [])]))
    runner.run(p)


@capability("side_inputs.iterable")
def test_iterable_side_input_many_values(runner):
    # An iterable side input with many elements is delivered completely (SEMANTICS 6).
    p = runner.pipeline()
    side = p | "Side" >> beam.Create(list(range(1000)))
    out = p | "Main" >> beam.Create(["x"]) | beam.Map(lambda x, it: (x, sum(it), len(list(it))), AsIter(side))
    check(out, created([("x", 499500, 1000)]))
    runner.run(p)


# Several MB: more than a portable runner sends in one state response (gRPC's default message limit
# is 4 MB), so a runner must page it (continuation tokens) or raise its limits.
LARGE_CHUNKS, LARGE_PER_CHUNK = 25, 1_000
LARGE_SUFFIX = ":" + "side-input-filler-" * 13


def _large_side_values(chunk):
    for i in range(chunk * LARGE_PER_CHUNK, (chunk + 1) * LARGE_PER_CHUNK):
        yield f"{i:07d}{LARGE_SUFFIX}"


def _aggregate(values):
    """(count, sum of the leading numbers, total length) of one iteration over the side input."""
    count = total = length = 0
    for v in values:
        count += 1
        total += int(v[:7])
        length += len(v)
    return count, total, length


@capability("side_inputs.large")
def test_large_iterable_side_input_is_complete_and_reiterable(runner):
    # 25,000 side values of 242 characters (about 6 MB encoded), made by the pipeline itself: the main
    # element sees all of them, exactly once each, and again when it iterates a second time (SEMANTICS 6).
    n = LARGE_CHUNKS * LARGE_PER_CHUNK
    p = runner.pipeline()
    side = p | "Chunks" >> beam.Create(list(range(LARGE_CHUNKS))) | "Expand" >> beam.FlatMap(_large_side_values)
    out = p | "Main" >> beam.Create(["x"]) | beam.Map(lambda x, it: (x, _aggregate(it), _aggregate(it)), AsIter(side))
    once = (n, n * (n - 1) // 2, n * (7 + len(LARGE_SUFFIX)))
    check(out, created([("x", once, once)]))
    runner.run(p)


# ---------------------------------------------------------------------------
# side_inputs.list


@capability("side_inputs.list")
def test_list_side_input_supports_len_and_indexing(runner):
    # AsList is a list of every side value: len() and indexing after sorting are exact (SEMANTICS 6).
    def use(i, values):
        ordered = sorted(values)
        return (i, len(values), ordered[i])

    p = runner.pipeline()
    side = p | "Side" >> beam.Create(["c", "a", "b", "a"])
    out = p | "Main" >> beam.Create([0, 3]) | beam.Map(use, AsList(side))
    check(out, created([(0, 4, "a"), (3, 4, "c")]))
    runner.run(p)


@capability("side_inputs.list")
def test_list_side_input_of_empty_flatten_is_empty(runner):
    # SEMANTICS 3: an empty Flatten (zero inputs) can be used as an empty side input.
    p = runner.pipeline()
    side = () | "EmptyFlatten" >> beam.Flatten(pipeline=p)
    out = p | "Main" >> beam.Create([1, 2]) | beam.Map(lambda x, values: (x, list(values)), AsList(side))
    check(out, created([(1, []), (2, [])]))
    runner.run(p)


# ---------------------------------------------------------------------------
# side_inputs.dict


@capability("side_inputs.dict")
def test_dict_side_input_lookup(runner):
    # AsDict maps each unique key to its value (SEMANTICS 6).
    p = runner.pipeline()
    side = p | "Side" >> beam.Create([("a", 1), ("b", 2), ("c", 3)])
    out = p | "Main" >> beam.Create(["a", "c", "z"]) | beam.Map(lambda k, d: (k, d.get(k, -1), len(d)), AsDict(side))
    check(out, created([("a", 1, 3), ("c", 3, 3), ("z", -1, 3)]))
    runner.run(p)


@capability("side_inputs.dict")
def test_dict_side_input_of_empty_input_is_empty(runner):
    # An empty PCollection as AsDict is an empty map (SEMANTICS 6).
    p = runner.pipeline()
    side = p | "Side" >> beam.Create([])
    out = p | "Main" >> beam.Create(["a"]) | beam.Map(lambda k, d: (k, len(d), k in d), AsDict(side))
    check(out, created([("a", 0, False)]))
    runner.run(p)


@capability("side_inputs.dict")
def test_dict_side_input_with_tuple_keys(runner):
    # Keys of any encodable type (tuples here) are looked up by value (SEMANTICS 6).
    p = runner.pipeline()
    side = p | "Side" >> beam.Create([((1, "x"), "one-x"), ((2, "y"), "two-y")])
    out = p | "Main" >> beam.Create([(1, "x"), (2, "y")]) | beam.Map(lambda k, d: d[k], AsDict(side))
    check(out, created(["one-x", "two-y"]))
    runner.run(p)


# ---------------------------------------------------------------------------
# side_inputs.multimap


@capability("side_inputs.multimap")
def test_multimap_side_input_groups_values_per_key(runner):
    # AsMultiMap maps each key to all its values (unordered; sorted here; SEMANTICS 6).
    p = runner.pipeline()
    side = p | "Side" >> beam.Create([("a", 1), ("b", 2), ("a", 3), ("a", 1)])
    out = p | "Main" >> beam.Create(["a", "b"]) | beam.Map(lambda k, m: (k, sorted(m[k])), AsMultiMap(side))
    check(out, created([("a", [1, 1, 3]), ("b", [2])]))
    runner.run(p)


@capability("side_inputs.multimap")
def test_multimap_side_input_missing_key_is_empty(runner):
    # A key absent from the multimap has no values (SEMANTICS 6).
    p = runner.pipeline()
    side = p | "Side" >> beam.Create([("a", 1)])
    out = p | "Main" >> beam.Create(["zz"]) | beam.Map(lambda k, m: (k, list(m[k])), AsMultiMap(side))
    check(out, created([("zz", [])]))
    runner.run(p)


# ---------------------------------------------------------------------------
# side_inputs.windowed


def _viewtest_main(p):
    """ViewTest main input: A@4, B@15, C@7 in Fixed(10)."""
    return (
        p
        | "Main" >> beam.Create([("A", 4), ("B", 15), ("C", 7)])
        | value_at_time("StampMain")
        | "MainWindows" >> beam.WindowInto(window.FixedWindows(10))
    )


def _summed_side(p, values_at, windowfn):
    """Side values summed per side window, as a singleton view with the CombineFn's default (0)."""
    return (
        p
        | "Side" >> beam.Create(values_at)
        | value_at_time("StampSide")
        | "SideWindows" >> beam.WindowInto(windowfn)
        | "SumSide" >> beam.CombineGlobally(sum).as_singleton_view()
    )


@capability("side_inputs.windowed")
def test_fixed_main_fixed_side_window_mapping(runner):
    # SEMANTICS 6 (ViewTest FixedToFixed): side 1@1, 2@11, 3@13 summed per Fixed(10) window -> A1, B5, C1.
    p = runner.pipeline()
    side = _summed_side(p, [(1, 1), (2, 11), (3, 13)], window.FixedWindows(10))
    out = _viewtest_main(p) | beam.Map(lambda x, s: (x, s), side)
    check(
        out,
        [
            el(("A", 1), 4, W(0, 10), NO_FIRING),
            el(("B", 5), 15, W(10, 20), NO_FIRING),
            el(("C", 1), 7, W(0, 10), NO_FIRING),
        ],
    )
    runner.run(p)


@capability("side_inputs.windowed")
def test_fixed_main_global_side(runner):
    # SEMANTICS 6: a globally windowed side input is visible in every main window -> A6, B6, C6.
    p = runner.pipeline()
    side = _summed_side(p, [(1, 1), (2, 11), (3, 13)], window.GlobalWindows())
    out = _viewtest_main(p) | beam.Map(lambda x, s: (x, s), side)
    check(
        out,
        [
            el(("A", 6), 4, W(0, 10), NO_FIRING),
            el(("B", 6), 15, W(10, 20), NO_FIRING),
            el(("C", 6), 7, W(0, 10), NO_FIRING),
        ],
    )
    runner.run(p)


@capability("side_inputs.windowed")
def test_windowed_singleton_values_per_window(runner):
    # SEMANTICS 6: windowed singleton 47@1, 48@11 in Fixed(10); main at 4, 7, 15 -> 47, 47, 48.
    p = runner.pipeline()
    side = (
        p
        | "Side" >> beam.Create([(47, 1), (48, 11)])
        | value_at_time("StampSide")
        | "SideWindows" >> beam.WindowInto(window.FixedWindows(10))
    )
    main = (
        p
        | "Main" >> beam.Create([("a", 4), ("b", 7), ("c", 15)])
        | value_at_time("StampMain")
        | "MainWindows" >> beam.WindowInto(window.FixedWindows(10))
    )
    out = main | beam.Map(lambda x, s: (x, s), AsSingleton(side))
    check(
        out,
        [
            el(("a", 47), 4, W(0, 10), NO_FIRING),
            el(("b", 47), 7, W(0, 10), NO_FIRING),
            el(("c", 48), 15, W(10, 20), NO_FIRING),
        ],
    )
    runner.run(p)


@capability("side_inputs.windowed")
def test_sliding_main_fixed_side(runner):
    # SEMANTICS 6: each sliding main window maps its max timestamp into the fixed side windows.
    # Main x@7 is in [5,15) (max 14.999 -> side [10,20) = 5) and [0,10) (max 9.999 -> side [0,10) = 1).
    p = runner.pipeline()
    side = _summed_side(p, [(1, 1), (2, 11), (3, 13)], window.FixedWindows(10))
    main = (
        p
        | "Main" >> beam.Create([("x", 7)])
        | value_at_time("StampMain")
        | "MainWindows" >> beam.WindowInto(window.SlidingWindows(10, 5))
    )
    out = main | beam.Map(lambda x, s: (x, s), side)
    check(out, [el(("x", 5), 7, W(5, 15), NO_FIRING), el(("x", 1), 7, W(0, 10), NO_FIRING)])
    runner.run(p)


@capability("side_inputs.windowed")
def test_fixed_main_sliding_side_uses_earliest_window(runner):
    # SEMANTICS 6: for a sliding side input the earliest side window containing the main window's end is used.
    # Side Sliding(10, 5) sums: [0,10)=1+2=3, [5,15)=2+4=6, [10,20)=4, [15,25) empty.
    # Main [0,10) (max 9.999 in [0,10) and [5,15)) -> 3; main [10,20) (max 19.999 in [10,20), [15,25)) -> 4.
    p = runner.pipeline()
    side = _summed_side(p, [(1, 1), (2, 6), (4, 12)], window.SlidingWindows(10, 5))
    main = (
        p
        | "Main" >> beam.Create([("a", 3), ("b", 14)])
        | value_at_time("StampMain")
        | "MainWindows" >> beam.WindowInto(window.FixedWindows(10))
    )
    out = main | beam.Map(lambda x, s: (x, s), side)
    check(out, [el(("a", 3), 3, W(0, 10), NO_FIRING), el(("b", 4), 14, W(10, 20), NO_FIRING)])
    runner.run(p)


@capability("side_inputs.windowed")
def test_global_main_global_side(runner):
    # Global main window with a global side input: the whole side PCollection is visible (SEMANTICS 6).
    p = runner.pipeline()
    side = p | "Side" >> beam.Create([5, 6, 7]) | "SideWindows" >> beam.WindowInto(window.GlobalWindows())
    main = p | "Main" >> beam.Create(["m"]) | "MainWindows" >> beam.WindowInto(window.GlobalWindows())
    out = main | beam.Map(lambda x, values: (x, sorted(values)), AsList(side))
    check(out, created([("m", [5, 6, 7])]))
    runner.run(p)


@capability("side_inputs.windowed")
def test_list_side_input_per_fixed_window(runner):
    # A windowed AsList shows only the side values of the mapped window (SEMANTICS 6).
    p = runner.pipeline()
    side = (
        p
        | "Side" >> beam.Create([("s1", 1), ("s2", 2), ("s3", 12), ("s4", 25)])
        | value_at_time("StampSide")
        | "SideWindows" >> beam.WindowInto(window.FixedWindows(10))
    )
    main = (
        p
        | "Main" >> beam.Create([("a", 5), ("b", 19), ("c", 21)])
        | value_at_time("StampMain")
        | "MainWindows" >> beam.WindowInto(window.FixedWindows(10))
    )
    out = main | beam.Map(lambda x, values: (x, sorted(values)), AsList(side))
    check(
        out,
        [
            el(("a", ["s1", "s2"]), 5, W(0, 10), NO_FIRING),
            el(("b", ["s3"]), 19, W(10, 20), NO_FIRING),
            el(("c", ["s4"]), 21, W(20, 30), NO_FIRING),
        ],
    )
    runner.run(p)


# ---------------------------------------------------------------------------
# side_inputs.missing_window


@capability("side_inputs.missing_window")
def test_missing_side_window_singleton_uses_default(runner):
    # SEMANTICS 6 (ViewTest): side only 2@11, 3@13 as a summed singleton view -> A0, B5, C0.
    p = runner.pipeline()
    side = _summed_side(p, [(2, 11), (3, 13)], window.FixedWindows(10))
    out = _viewtest_main(p) | beam.Map(lambda x, s: (x, s), side)
    check(
        out,
        [
            el(("A", 0), 4, W(0, 10), NO_FIRING),
            el(("B", 5), 15, W(10, 20), NO_FIRING),
            el(("C", 0), 7, W(0, 10), NO_FIRING),
        ],
    )
    runner.run(p)


@capability("side_inputs.missing_window")
def test_missing_side_window_explicit_default(runner):
    # A side window with no data resolves to the singleton's explicit default (SEMANTICS 6).
    p = runner.pipeline()
    side = (
        p
        | "Side" >> beam.Create([("only", 25)])
        | value_at_time("StampSide")
        | "SideWindows" >> beam.WindowInto(window.FixedWindows(10))
    )
    main = (
        p
        | "Main" >> beam.Create([("a", 5), ("b", 27)])
        | value_at_time("StampMain")
        | "MainWindows" >> beam.WindowInto(window.FixedWindows(10))
    )
    out = main | beam.Map(lambda x, s: (x, s), AsSingleton(side, default_value="none"))
    check(out, [el(("a", "none"), 5, W(0, 10), NO_FIRING), el(("b", "only"), 27, W(20, 30), NO_FIRING)])
    runner.run(p)


@capability("side_inputs.missing_window")
def test_missing_side_window_collections_are_empty(runner):
    # SEMANTICS 6: a missing side window gives an empty list, iterable, dict and multimap.
    p = runner.pipeline()
    side = (
        p
        | "Side" >> beam.Create([(("k", 1), 15)])
        | value_at_time("StampSide")
        | "SideWindows" >> beam.WindowInto(window.FixedWindows(10))
    )
    main = (
        p
        | "Main" >> beam.Create([("a", 5), ("b", 15)])
        | value_at_time("StampMain")
        | "MainWindows" >> beam.WindowInto(window.FixedWindows(10))
    )
    out = main | beam.Map(
        lambda x, lst, it, d, mm: (x, list(lst), list(it), dict(d), list(mm["k"])),
        AsList(side),
        AsIter(side),
        AsDict(side),
        AsMultiMap(side),
    )
    check(
        out,
        [
            el(("a", [], [], {}, []), 5, W(0, 10), NO_FIRING),
            el(("b", [("k", 1)], [("k", 1)], {"k": 1}, [1]), 15, W(10, 20), NO_FIRING),
        ],
    )
    runner.run(p)


# ---------------------------------------------------------------------------
# side_inputs.multiple


@capability("side_inputs.multiple")
def test_several_side_inputs_with_different_coders(runner):
    # One ParDo reads ints, strings, tuples and bytes side inputs, each with its own coder (SEMANTICS 1 and 6).
    def use(x, n, words, pairs, blobs):
        return (x, n, sorted(words), pairs[x], sorted(blobs))

    p = runner.pipeline()
    ints = p | "Ints" >> beam.Create([7])
    strs = p | "Strs" >> beam.Create(["hello", "wörld"])
    tups = p | "Tups" >> beam.Create([("a", (1, "one")), ("b", (2, "two"))])
    blob = p | "Bytes" >> beam.Create([b"\x00\xff", b"beam"])
    out = (
        p
        | "Main" >> beam.Create(["a", "b"])
        | beam.Map(use, AsSingleton(ints), AsList(strs), AsDict(tups), AsIter(blob))
    )
    check(
        out,
        created(
            [
                ("a", 7, ["hello", "wörld"], (1, "one"), [b"\x00\xff", b"beam"]),
                ("b", 7, ["hello", "wörld"], (2, "two"), [b"\x00\xff", b"beam"]),
            ]
        ),
    )
    runner.run(p)


@capability("side_inputs.multiple")
def test_same_side_input_used_twice(runner):
    # The same PCollection may back two side inputs (of different kinds) of one ParDo (SEMANTICS 6).
    p = runner.pipeline()
    side = p | "Side" >> beam.Create([4])
    out = p | "Main" >> beam.Create([1, 2]) | beam.Map(lambda x, a, b: (x, a, list(b)), AsSingleton(side), AsList(side))
    check(out, created([(1, 4, [4]), (2, 4, [4])]))
    runner.run(p)


@capability("side_inputs.multiple")
def test_side_input_shared_by_two_pardos_and_keyword_arg(runner):
    # A side input shared by two ParDos, once positionally and once as a keyword argument (SEMANTICS 6 and 10).
    p = runner.pipeline()
    side = p | "Side" >> beam.Create([100])
    main = p | "Main" >> beam.Create([1, 2])
    check(main | "Pos" >> beam.Map(lambda x, s: x + s, AsSingleton(side)), created([101, 102]), label="positional")
    check(main | "Kw" >> beam.Map(lambda x, s=None: x - s, s=AsSingleton(side)), created([-99, -98]), label="keyword")
    runner.run(p)


@capability("side_inputs.multiple")
def test_empty_flatten_and_empty_create_side_inputs(runner):
    # SEMANTICS 3: empty Flatten and empty Create both work as (empty) side inputs next to a full one.
    p = runner.pipeline()
    empty_flatten = () | "EmptyFlatten" >> beam.Flatten(pipeline=p)
    empty_create = p | "EmptyCreate" >> beam.Create([])
    full = p | "Full" >> beam.Create([1, 2])
    out = (
        p
        | "Main" >> beam.Create(["m"])
        | beam.Map(
            lambda x, a, b, c, d: (x, list(a), list(b), sorted(c), d),
            AsIter(empty_flatten),
            AsList(empty_create),
            AsList(full),
            AsSingleton(empty_flatten, default_value=-1),
        )
    )
    check(out, created([("m", [], [], [1, 2], -1)]))
    runner.run(p)


@capability("side_inputs.readiness")
def test_side_input_computed_after_group_by_key(runner):
    # SEMANTICS 6 readiness: a side input produced late (after a GroupByKey) is complete when read.
    p = runner.pipeline()
    grouped = (
        p
        | "Pairs" >> beam.Create([("a", 1), ("b", 2), ("a", 3), ("c", 4), ("b", 5)])
        | beam.GroupByKey()
        | "Sizes" >> beam.MapTuple(lambda k, vs: (k, sorted(vs)))
    )
    total = grouped | "Values" >> beam.FlatMapTuple(lambda k, vs: vs) | beam.CombineGlobally(sum)
    out = (
        p
        | "Main" >> beam.Create(["x"])
        | beam.Map(lambda x, groups, t: (x, sorted(groups.items()), t), AsDict(grouped), AsSingleton(total))
    )
    check(out, created([("x", [("a", [1, 3]), ("b", [2, 5]), ("c", [4])], 15)]))
    runner.run(p)


@capability("side_inputs.readiness")
def test_side_input_into_main_input_after_group_by_key(runner):
    # Readiness on both sides of a shuffle: main and side inputs both come out of GroupByKeys (SEMANTICS 6).
    p = runner.pipeline()
    side = (
        p
        | "SidePairs" >> beam.Create([("k", 1), ("k", 2), ("j", 10)])
        | "SideGBK" >> beam.GroupByKey()
        | "SideSum" >> beam.MapTuple(lambda k, vs: (k, sum(vs)))
    )
    main = (
        p
        | "MainPairs" >> beam.Create([("k", "x"), ("j", "y"), ("k", "z")])
        | "MainGBK" >> beam.GroupByKey()
        | "MainSort" >> beam.MapTuple(lambda k, vs: (k, sorted(vs)))
    )
    out = main | beam.Map(lambda kv, sums: (kv[0], kv[1], sums[kv[0]]), AsDict(side))
    check(out, grouped([("k", ["x", "z"], 3), ("j", ["y"], 10)]))
    runner.run(p)
