"""Standard coders: values (and deterministic keys) round-trip through a GroupByKey
(conformance/SEMANTICS.md, section 1 and the standard_coders.yaml vectors)."""

import math
import typing

import apache_beam as beam

from conformance.api import capability, check, group_panes, grouped

# Each case creates its data with its KV type, so the standard coders are used, then groups it, each
# group's values sorted by repr (group_panes).


@capability("coders.standard")
def test_bytes_keys_and_values(runner):
    # beam:coder:bytes:v1 keys and values: empty, NUL, every byte value (SEMANTICS 1 and 8).
    p = runner.pipeline()
    every_byte = bytes(range(256))
    data = [(b"", b"x"), (b"\x00", every_byte), (b"\xff\xfe", b""), (b"", b"\x00\x00"), (every_byte, b"\x80")]
    out = group_panes(p | beam.Create(data).with_output_types(tuple[bytes, bytes]), sort_key=repr)
    check(
        out,
        grouped(
            [
                (b"", sorted([b"x", b"\x00\x00"], key=repr)),
                (b"\x00", [every_byte]),
                (b"\xff\xfe", [b""]),
                (every_byte, [b"\x80"]),
            ]
        ),
    )
    runner.run(p)


@capability("coders.standard")
def test_utf8_string_keys_and_values(runner):
    # beam:coder:string_utf8:v1: empty, non-ASCII (2-, 3- and 4-byte UTF-8), NUL and newlines survive;
    # keys group by their UTF-8 bytes ("é" precomposed and "e\u0301" decomposed are different keys; SEMANTICS 1 and 8).
    p = runner.pipeline()
    data = [
        ("", ""),
        ("é", "naïve"),
        ("e\u0301", "decomposed"),
        ("日本", "語"),
        ("😀", "a\x00b\n"),
        ("é", "Ωmega"),
        ("", "empty key"),
    ]
    out = group_panes(p | beam.Create(data).with_output_types(tuple[str, str]), sort_key=repr)
    check(
        out,
        grouped(
            [
                ("", sorted(["", "empty key"], key=repr)),
                ("é", sorted(["naïve", "Ωmega"], key=repr)),
                ("e\u0301", ["decomposed"]),
                ("日本", ["語"]),
                ("😀", ["a\x00b\n"]),
            ]
        ),
    )
    runner.run(p)


@capability("coders.standard")
def test_varint_keys_and_values(runner):
    # beam:coder:varint:v1 covers the full signed 64-bit range: 0, -1, 2**63-1, -2**63 as keys and values.
    # (SEMANTICS 1 and 8)
    p = runner.pipeline()
    extremes = [0, -1, 2**63 - 1, -(2**63)]
    data = [(k, v) for k in extremes for v in (k, 1, 127, 128, -128)]
    out = group_panes(p | beam.Create(data).with_output_types(tuple[int, int]), sort_key=repr)
    check(out, grouped([(k, sorted([k, 1, 127, 128, -128], key=repr)) for k in extremes]))
    runner.run(p)


@capability("coders.standard")
def test_double_values(runner):
    # beam:coder:double:v1 keeps -0.0 (its sign), infinities, NaN, subnormals and the exact bits of 0.1 (SEMANTICS 1).
    p = runner.pipeline()
    values = [-0.0, 0.0, math.inf, -math.inf, math.nan, 5e-324, 1.7976931348623157e308, 0.1, -2.5]

    def describe(v):
        return "nan" if math.isnan(v) else v.hex()

    out = group_panes(
        p | beam.Create([("k", v) for v in values]).with_output_types(tuple[str, float]), sort_key=repr
    ) | beam.MapTuple(lambda k, vs: (k, sorted(describe(v) for v in vs)))
    check(out, grouped([("k", sorted(describe(v) for v in values))]))
    runner.run(p)


@capability("coders.standard")
def test_double_keys(runner):
    # Doubles are deterministic keys: infinities, -0.0 and fractions group by their 8-byte encoding (SEMANTICS 1 and 8).
    p = runner.pipeline()
    data = [(math.inf, "a"), (-math.inf, "b"), (0.5, "c"), (-0.0, "d"), (math.inf, "e"), (0.5, "f")]
    out = group_panes(p | beam.Create(data).with_output_types(tuple[float, str]), sort_key=repr) | beam.MapTuple(
        lambda k, vs: (k.hex(), vs)
    )
    check(
        out,
        grouped(
            [(math.inf.hex(), ["a", "e"]), ((-math.inf).hex(), ["b"]), ((0.5).hex(), ["c", "f"]), ((-0.0).hex(), ["d"])]
        ),
    )
    runner.run(p)


@capability("coders.standard")
def test_bool_keys_and_values(runner):
    # beam:coder:bool:v1 keys and values stay booleans (not ints; SEMANTICS 1 and 8).
    p = runner.pipeline()
    data = [(True, False), (False, True), (True, True), (False, False)]
    out = group_panes(p | beam.Create(data).with_output_types(tuple[bool, bool]), sort_key=repr) | beam.MapTuple(
        lambda k, vs: ((type(k).__name__, k), [(type(v).__name__, v) for v in vs])
    )
    check(
        out,
        grouped(
            [(("bool", True), [("bool", False), ("bool", True)]), (("bool", False), [("bool", False), ("bool", True)])]
        ),
    )
    runner.run(p)


@capability("coders.standard")
def test_nested_tuple_keys_and_values(runner):
    # beam:coder:kv:v1 / tuple coders nest: tuple keys group component-wise, nested tuple values survive.
    # (SEMANTICS 1 and 8)
    p = runner.pipeline()
    Key = tuple[str, int]
    Value = tuple[int, tuple[str, bytes]]
    data = [(("a", 1), (1, ("x", b"\x01"))), (("a", 2), (2, ("", b""))), (("a", 1), (-3, ("ü", b"\xff")))]
    out = group_panes(p | beam.Create(data).with_output_types(tuple[Key, Value]), sort_key=repr)
    check(
        out,
        grouped(
            [(("a", 1), sorted([(1, ("x", b"\x01")), (-3, ("ü", b"\xff"))], key=repr)), (("a", 2), [(2, ("", b""))])]
        ),
    )
    runner.run(p)


@capability("coders.standard")
def test_iterable_values(runner):
    # beam:coder:iterable:v1 values: empty, short and long iterables keep order and content (SEMANTICS 1).
    p = runner.pipeline()
    long = list(range(-500, 500))
    data = [("empty", []), ("short", [3, 1, 2]), ("long", long), ("short", [0])]
    out = (
        p
        | beam.Create(data).with_output_types(tuple[str, typing.Iterable[int]])
        | beam.GroupByKey()
        | beam.MapTuple(lambda k, vs: (k, sorted((list(v) for v in vs), key=repr)))
    )
    check(out, grouped([("empty", [[]]), ("short", sorted([[3, 1, 2], [0]], key=repr)), ("long", [long])]))
    runner.run(p)


@capability("coders.standard")
def test_none_and_nullable_values(runner):
    # beam:coder:nullable:v1 (Optional[int]) values: None and integers both round-trip (SEMANTICS 1).
    p = runner.pipeline()
    data = [("k", None), ("k", 0), ("k", -7), ("j", None)]
    out = (
        p
        | beam.Create(data).with_output_types(tuple[str, int | None])
        | beam.GroupByKey()
        | beam.MapTuple(lambda k, vs: (k, sorted(vs, key=lambda v: (v is not None, v or 0))))
    )
    check(out, grouped([("k", [None, -7, 0]), ("j", [None])]))
    runner.run(p)


@capability("coders.standard")
def test_none_and_nullable_keys(runner):
    # A nullable key coder is deterministic: None is a key of its own, distinct from "" and "None" (SEMANTICS 1 and 8).
    p = runner.pipeline()
    data = [(None, 1), ("", 2), ("None", 3), (None, 4)]
    out = (
        p
        | beam.Create(data).with_output_types(tuple[str | None, int])
        | beam.GroupByKey()
        | beam.MapTuple(lambda k, vs: (k, sorted(vs)))
    )
    check(out, grouped([(None, [1, 4]), ("", [2]), ("None", [3])]))
    runner.run(p)


@capability("coders.standard")
def test_row_values(runner):
    # beam:coder:row:v1: beam.Row values (schema inferred from the Rows) round-trip field by field (SEMANTICS 1).
    p = runner.pipeline()
    rows = [
        beam.Row(id=1, name="ä", score=0.5),
        beam.Row(id=-2, name="", score=-1.0),
        beam.Row(id=3, name="x", score=2.25),
    ]
    out = (
        p
        | beam.Create([("k" if r.id != 3 else "j", r) for r in rows])
        | beam.GroupByKey()
        | beam.MapTuple(lambda k, vs: (k, sorted((r.id, r.name, r.score) for r in vs)))
    )
    check(out, grouped([("k", [(-2, "", -1.0), (1, "ä", 0.5)]), ("j", [(3, "x", 2.25)])]))
    runner.run(p)


@capability("coders.standard")
def test_row_keys(runner):
    # Rows of deterministic fields are deterministic keys: equal Rows group, different ones do not (SEMANTICS 1 and 8).
    p = runner.pipeline()
    data = [(beam.Row(a=1, b="x"), 1), (beam.Row(a=1, b="y"), 2), (beam.Row(a=1, b="x"), 3)]
    out = p | beam.Create(data) | beam.GroupByKey() | beam.MapTuple(lambda k, vs: ((k.a, k.b), sorted(vs)))
    check(out, grouped([((1, "x"), [1, 3]), ((1, "y"), [2])]))
    runner.run(p)


@capability("coders.standard")
def test_list_values_of_strings(runner):
    # A list-of-strings value coder keeps order, empty strings and empty lists (SEMANTICS 1).
    p = runner.pipeline()
    data = [("k", ["b", "", "a"]), ("k", []), ("j", ["ü"])]
    out = (
        p
        | beam.Create(data).with_output_types(tuple[str, list[str]])
        | beam.GroupByKey()
        | beam.MapTuple(lambda k, vs: (k, sorted((list(v) for v in vs), key=repr)))
    )
    check(out, grouped([("k", sorted([["b", "", "a"], []], key=repr)), ("j", [["ü"]])]))
    runner.run(p)
