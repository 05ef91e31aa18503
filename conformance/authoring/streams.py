"""The input of every streaming case: TestStreams whose events a runner of any SDK can decode.

A runner emits a TestStream's events itself, so it must decode them with the coder the
TestStreamPayload names, and only the standard coders (StandardCoders in beam_runner_api.proto)
mean the same thing in every SDK. Beam's Python TestStream encodes with FastPrimitivesCoder unless
told otherwise, which the Runner API calls beam:coder:pickled_python:v1 and which no Java runner
can decode (apache/beam#19934); and it leaves its output PCollection untyped, so even a TestStream
given a standard coder emits into a PCollection of another coder (the pipeline infers ``Any``,
FastPrimitivesCoder again), which a runner that types its source by the output's coder cannot
reconcile with the events it decoded (docs/findings/flink.md, F2).

``TestStream`` here is Beam's TestStream with three differences:

- Without ``coder=`` it infers a standard coder from every element value added to it (all events,
  all tags): int -> varint, str -> string_utf8, bytes -> bytes, float -> double, bool -> bool, a
  2-tuple -> KV of its two components' coders, a list -> iterable of its elements' coder, nested
  alike. A value with no standard coder (None, a tuple of another length, a user class, values of
  different types in one stream) is refused when the stream is applied, naming the value.
- ``coder=`` is used as given, but refused unless every coder in its Runner API coder tree is
  standard, unless the case declares ``python_only="why the case needs Python-only values"``. The
  declaration is written into the pipeline proto as an annotation of the TestStream's transform
  (PYTHON_ONLY_ANNOTATION), where tests/pipeline_captures.py and the case runner read it.
- Its output PCollections get exactly the payload's coder: they are typed with the type hint the
  coder reads and writes, and a coder whose type hint would give the output another coder is
  refused.

``TaggedTestStream`` feeds several PCollections from one totally ordered sequence of events: ONE
single-output TestStream of (tag, value) elements, split downstream by an element-wise step into
one PCollection per tag, all under the stream's one watermark (see its docstring).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import apache_beam as beam
from apache_beam import pvalue
from apache_beam import typehints as th
from apache_beam.coders import coders
from apache_beam.coders.typecoders import registry
from apache_beam.portability.api import beam_runner_api_pb2
from apache_beam.runners import pipeline_context
from apache_beam.testing import test_stream
from apache_beam.transforms.window import TimestampedValue
from apache_beam.utils.windowed_value import WindowedValue

# The annotation on a TestStream's transform (PTransform.annotations in the pipeline proto) that
# holds the case's reason for feeding a Python-only coder (UTF-8), when it declared one.
PYTHON_ONLY_ANNOTATION = "beam_conformance:python_only"

STANDARD_CODER_URNS = frozenset(
    value.GetOptions().Extensions[beam_runner_api_pb2.beam_urn]
    for value in beam_runner_api_pb2.StandardCoders.Enum.DESCRIPTOR.values
)

_WHAT_TO_DO = (
    "restructure the input into standard types (int, str, bytes, float, bool, 2-tuples and lists "
    'of them), or pass coder= and declare python_only="why this case needs Python-only values"'
)


class StreamInputError(ValueError):
    """A TestStream whose events a runner of another SDK could not decode, refused when it is applied."""


# --------------------------------------------------------------------------- coders


def coder_tree(coder: coders.Coder) -> tuple[str, beam_runner_api_pb2.Components]:
    """The coder as the Runner API writes it: its id and the coders of a fresh context."""
    context = pipeline_context.PipelineContext()
    coder_id = context.coders.get_id(coder)
    return coder_id, context.to_runner_api()


def coder_urns(coder_id: str, components: beam_runner_api_pb2.Components) -> list[str]:
    """Every URN of the coder tree under ``coder_id`` (depth first, each once)."""
    seen: list[str] = []

    def walk(cid: str) -> None:
        proto = components.coders[cid]
        if proto.spec.urn not in seen:
            seen.append(proto.spec.urn)
        for child in proto.component_coder_ids:
            walk(child)

    walk(coder_id)
    return seen


def non_standard_urns(coder: coders.Coder) -> list[str]:
    """The URNs of the coder's Runner API tree that are no standard coder's."""
    return [urn for urn in coder_urns(*coder_tree(coder)) if urn not in STANDARD_CODER_URNS]


# --------------------------------------------------------------------------- inference

# A value's shape: a leaf type, ("kv", key, value), ("iterable", element), or _EMPTY (the
# element of an empty list, which fits any shape).
_EMPTY = "no elements"
_LEAVES = (bool, int, float, str, bytes)
_LEAF_NAMES = {bool: "bool", int: "int", float: "float", str: "str", bytes: "bytes"}


class _Mismatch(Exception):
    pass


def _shape(value: Any) -> Any:
    kind = type(value)
    if kind in _LEAVES:  # exactly: an IntEnum or a str subclass is a user type
        return kind
    if kind is tuple:
        if len(value) != 2:
            raise StreamInputError(
                f"{value!r}: a tuple of {len(value)} components has no standard coder (a KV has two; "
                "nest it, e.g. (a, (b, c)))"
            )
        return ("kv", _shape(value[0]), _shape(value[1]))
    if kind is list:
        element: Any = _EMPTY
        for item in value:
            try:
                element = _unify(element, _shape(item))
            except _Mismatch:
                raise StreamInputError(
                    f"{value!r}: a list whose elements are of different types ({_describe(element)} and "
                    f"{_describe(_shape(item))}) has no standard coder"
                ) from None
        return ("iterable", element)
    if value is None:
        raise StreamInputError("None has no standard coder (and no type to infer one from)")
    raise StreamInputError(f"{value!r} of type {kind.__module__}.{kind.__qualname__} has no standard coder")


def _unify(a: Any, b: Any) -> Any:
    if a == _EMPTY:
        return b
    if b == _EMPTY or a == b:
        return a
    if isinstance(a, tuple) and isinstance(b, tuple) and a[0] == b[0]:
        return (a[0], *(_unify(x, y) for x, y in zip(a[1:], b[1:], strict=True)))
    raise _Mismatch()


def _describe(shape: Any) -> str:
    if shape == _EMPTY:
        return "empty"
    if not isinstance(shape, tuple):
        return _LEAF_NAMES[shape]
    if shape[0] == "kv":
        return f"({_describe(shape[1])}, {_describe(shape[2])})"
    return f"list of {_describe(shape[1])}"


def _hint(shape: Any) -> Any:
    if shape == _EMPTY:
        raise StreamInputError(
            "the stream's lists are all empty, so their element type cannot be inferred; pass coder="
        )
    if not isinstance(shape, tuple):
        return shape
    if shape[0] == "kv":
        return th.Tuple[_hint(shape[1]), _hint(shape[2])]
    return th.Iterable[_hint(shape[1])]  # Python's ListCoder is Python-only: a list is an iterable


def infer_coder(values: Iterable[Any], what: str = "TestStream") -> tuple[coders.Coder, Any]:
    """The standard coder of every value (one coder for all of them), and its type hint."""
    shape: Any = _EMPTY
    first = None
    count = 0
    for value in values:
        try:
            shape = _unify(shape, _shape(value))
        except StreamInputError as e:
            raise StreamInputError(f"{what}: {e}; {_WHAT_TO_DO}") from None
        except _Mismatch:
            raise StreamInputError(
                f"{what}: {value!r} ({_describe(_shape(value))}) is not of the type of the values before "
                f"it ({_describe(shape)}, the first {first!r}); one stream has one coder, and values of "
                f"different types have no standard coder in common; {_WHAT_TO_DO}"
            ) from None
        if count == 0:
            first = value
        count += 1
    if count == 0:
        raise StreamInputError(
            f"{what} has no elements to infer its coder from: pass coder= (a standard coder, e.g. "
            "coders.VarIntCoder()), which its output PCollection gets too"
        )
    try:
        hint = _hint(shape)
    except StreamInputError as e:
        raise StreamInputError(f"{what}: {e}") from None
    return registry.get_coder(hint), hint


# --------------------------------------------------------------------------- TestStream


class TestStream(test_stream.TestStream):
    """Beam's TestStream, with a standard coder inferred from its elements (or checked when given),
    its output PCollections typed to exactly that coder, and ``python_only`` to declare why a case
    needs a coder only the Python SDK can decode. Events are added as with Beam's TestStream."""

    __test__ = False  # a PTransform, not a pytest class

    def __init__(
        self,
        coder: coders.Coder | None = None,
        events=None,
        output_tags=None,
        endpoint=None,
        *,
        python_only: str = "",
    ):
        if not isinstance(python_only, str):
            raise TypeError("python_only= is the reason (a str) the case needs Python-only values")
        # Beam's TestStream needs a coder now; the stream's own is fixed when it is applied.
        super().__init__(coder if coder is not None else coders.BytesCoder(), events, output_tags, endpoint)
        self.declared_coder = coder
        self.python_only = python_only.strip()
        self._resolved: tuple[coders.Coder, Any] | None = None

    def annotations(self):
        annotations = super().annotations()
        if self.python_only:
            annotations[PYTHON_ONLY_ANNOTATION] = self.python_only.encode("utf-8")
        return annotations

    def element_values(self) -> list:
        """Every element value of every element event, in order."""
        return [
            tv.value
            for event in self._events
            if isinstance(event, test_stream.ElementEvent)
            for tv in event.timestamped_values
        ]

    def _declared_output_type(self):
        hints = self.get_type_hints()
        return hints.simple_output_type(self.label) if hints.output_types else None

    def resolve(self) -> tuple[coders.Coder, Any]:
        """The stream's coder and its output type hint, or StreamInputError saying why there is none."""
        what = f"TestStream {self.label!r}"
        if self.declared_coder is None:
            if self.python_only:
                raise StreamInputError(
                    f"{what} declares python_only but has no coder=: the Python-only coder the case needs must be given"
                )
            coder, hint = infer_coder(self.element_values(), what)
        else:
            coder = self.declared_coder
            odd = non_standard_urns(coder)
            if odd and not self.python_only:
                raise StreamInputError(
                    f"{what}: its coder {coder} is not standard ({', '.join(odd)} in its coder tree), so a "
                    f"runner of another SDK cannot decode its events; {_WHAT_TO_DO}"
                )
            if not odd and self.python_only:
                raise StreamInputError(
                    f"{what} declares python_only, but its coder {coder} is standard: drop the declaration"
                )
            try:
                hint = coder.to_type_hint()
            except NotImplementedError:  # Beam's Coder default: a coder that names no type (checked below)
                hint = None
        declared = self._declared_output_type()
        if declared is not None:
            hint = declared
        output = registry.get_coder(hint) if hint is not None else None
        if output != coder:
            raise StreamInputError(
                f"{what}: its output PCollection would get the coder {output} (type {hint}), not its "
                f"events' coder {coder}; give the coder a type hint the coder registry maps back to it "
                "(register the coder for its type, or .with_output_types(...) of that type)"
            )
        for value in self.element_values():
            try:
                coder.encode(value)
            except Exception as e:
                raise StreamInputError(f"{what}: {value!r} cannot be encoded with {coder}: {e}") from None
        return coder, hint

    def expand(self, pbegin):
        assert isinstance(pbegin, pvalue.PBegin)
        self.coder, hint = self._resolved = self.resolve()
        self.pipeline = pbegin.pipeline
        if not self.output_tags:
            self.output_tags = {None}
        if self.output_tags == {None}:
            return pvalue.PCollection(self.pipeline, element_type=hint, is_bounded=False, tag=None)
        return {
            tag: pvalue.PCollection(self.pipeline, element_type=hint, is_bounded=False, tag=tag)
            for tag in self.output_tags
        }

    def to_runner_api_parameter(self, context):
        if self._resolved is not None and self.resolve()[0] != self._resolved[0]:
            raise StreamInputError(
                f"TestStream {self.label!r}: elements added after it was applied need the coder "
                f"{self.resolve()[0]}, not {self._resolved[0]}: add every element before applying it"
            )
        return super().to_runner_api_parameter(context)


# --------------------------------------------------------------------------- tagged streams


class _Untag(beam.DoFn):
    def __init__(self, tag: str, coder: coders.Coder):
        self.tag = tag
        self.coder = coder

    def process(self, element):
        tag, encoded = element
        if tag == self.tag:
            yield self.coder.decode(encoded)


class TaggedTestStream(beam.PTransform):
    """Several PCollections fed from ONE totally ordered sequence of events.

    A single-output TestStream (ours) of (tag, value) elements, each value encoded as bytes with
    its tag's own standard coder (so the values of different tags may be of different types: the
    stream's coder is KV of string_utf8 and bytes), split downstream by one element-wise step per
    tag that keeps the tag's elements, decoded, in a PCollection of the tag's coder. Applying it
    returns a dict tag -> PCollection.

    What a multi-output TestStream whose outputs' watermarks always move together gives, this
    gives too: every event is one event of one stream, applied in order once the runner has
    processed what the earlier ones made processable, and each output's watermark is the stream's
    (an element-wise step holds no watermark back). It needs no runner support for TestStreams
    with several outputs. Events: ``add_elements(tag, elements)`` (TimestampedValue, or a plain
    value at the current watermark), ``advance_watermark_to(t)`` and
    ``advance_watermark_to_infinity()`` (every tag's), ``advance_processing_time(seconds)``.
    A tag's coder is inferred from its values like TestStream's; ``tag_coders`` gives it instead
    (a tag without elements needs one)."""

    def __init__(self, *tags: str, tag_coders: Mapping[str, coders.Coder] | None = None):
        super().__init__()
        if not tags or len(set(tags)) != len(tags) or not all(isinstance(t, str) and t for t in tags):
            raise ValueError(f"TaggedTestStream needs distinct non-empty str tags, not {tags!r}")
        unknown = set(tag_coders or {}) - set(tags)
        if unknown:
            raise ValueError(f"TaggedTestStream: tag_coders for unknown tags {sorted(unknown)}")
        self.tags = tags
        self.tag_coders = dict(tag_coders or {})
        self._events: list[tuple[str, Any]] = []

    def add_elements(self, tag: str, elements) -> TaggedTestStream:
        if tag not in self.tags:
            raise ValueError(f"TaggedTestStream: unknown tag {tag!r} (tags: {', '.join(self.tags)})")
        self._events.append(("elements", (tag, list(elements))))
        return self

    def advance_watermark_to(self, new_watermark) -> TaggedTestStream:
        self._events.append(("watermark", new_watermark))
        return self

    def advance_watermark_to_infinity(self) -> TaggedTestStream:
        self._events.append(("watermark", None))
        return self

    def advance_processing_time(self, advance_by) -> TaggedTestStream:
        self._events.append(("processing_time", advance_by))
        return self

    def _coders(self) -> dict[str, tuple[coders.Coder, Any]]:
        resolved = {}
        for tag in self.tags:
            what = f"TaggedTestStream {self.label!r}, tag {tag!r}"
            given = self.tag_coders.get(tag)
            if given is None:
                resolved[tag] = infer_coder(
                    (_value(e) for kind, arg in self._events if kind == "elements" and arg[0] == tag for e in arg[1]),
                    what,
                )
                continue
            odd = non_standard_urns(given)
            if odd:
                raise StreamInputError(f"{what}: its coder {given} is not standard ({', '.join(odd)})")
            resolved[tag] = given, given.to_type_hint()
        return resolved

    def expand(self, pbegin):
        tag_coders = self._coders()
        stream = TestStream(coder=coders.TupleCoder([coders.StrUtf8Coder(), coders.BytesCoder()]))
        for kind, arg in self._events:
            if kind == "elements":
                tag, elements = arg
                coder = tag_coders[tag][0]
                stream.add_elements([_retagged(tag, coder, e) for e in elements])
            elif kind == "watermark":
                stream = stream.advance_watermark_to_infinity() if arg is None else stream.advance_watermark_to(arg)
            else:
                stream.advance_processing_time(arg)
        tagged = pbegin | "Events" >> stream
        return {
            tag: tagged | f"Only[{tag}]" >> beam.ParDo(_Untag(tag, coder)).with_output_types(hint)
            for tag, (coder, hint) in tag_coders.items()
        }


def _value(element):
    return element.value if isinstance(element, (TimestampedValue, WindowedValue)) else element


def _retagged(tag: str, coder: coders.Coder, element):
    """The element as (tag, its value's encoding), keeping its timestamp if it has one."""
    if isinstance(element, (TimestampedValue, WindowedValue)):
        return TimestampedValue((tag, coder.encode(element.value)), element.timestamp)
    return (tag, coder.encode(element))
