"""Can the runner re-encode elements of one coder as another by itself? The one owner of that rule.

The runner reads standard coders (worker/codecs.py: bytes, string_utf8, varint, bool, double and
the windows, KV, iterable, windowed value and length prefix over them); every other coder is
carried opaque, length-prefixed (graph/opaque_coders.py). So it can re-encode A as B where what it
reads of A is what B writes:

- both are the same standard coder, or the same structure (KV, iterable, windowed value) over
  parts it can re-encode;
- one is a length prefix around a coder the other can be re-encoded to (wrapping and unwrapping a
  length prefix: the bytes are the same up to the prefix);
- both are the same opaque coder (the same URN, payload and components): the runner carries its
  bytes as they are. A coder and a length prefix around it count as the same opaque coder, since
  the runner length-prefixes every opaque coder anyway.

Anything else (two different opaque coders, or a standard coder as an opaque one, or varints as
strings) needs the SDK that knows both coders (graph/transcode.py asks it).
"""

from __future__ import annotations

from apache_beam.portability.api import beam_runner_api_pb2

from reference_runner.graph import urns

# A coder as the runner reads it: ("leaf", urn), ("lp", form), (structure urn, *forms), or
# ("opaque", identity) for a coder it carries as bytes.
Form = tuple


def same_encoding(components: beam_runner_api_pb2.Components, a: str, b: str) -> bool:
    """Do coders ``a`` and ``b`` write the same bytes for every element, as the runner holds them?"""
    return a == b or form(components, a) == form(components, b)


def runner_recodes(components: beam_runner_api_pb2.Components, a: str, b: str) -> bool:
    """Can the runner itself re-encode elements of coder ``a`` as coder ``b``?"""
    return a == b or recodes(form(components, a), form(components, b))


def describe(components: beam_runner_api_pb2.Components, coder_id: str) -> str:
    """A coder as an error names it: its id and its URNs, components in parentheses."""
    return f"{coder_id} ({_urns(components, coder_id)})"


def form(components: beam_runner_api_pb2.Components, coder_id: str) -> Form:
    """A coder as the runner reads it, whatever its id (what same_encoding compares)."""
    coder = components.coders[coder_id]
    urn, parts = coder.spec.urn, list(coder.component_coder_ids)
    if urn in urns.READABLE_LEAF_CODERS:
        return ("leaf", urn)
    if urn == urns.LENGTH_PREFIX_CODER:
        [inner] = parts
        if readable(components, inner):
            return ("lp", form(components, inner))
        return ("opaque", _identity(components, inner))
    if urn in urns.STRUCTURED_CODERS or urn == urns.CUSTOM_WINDOW_CODER:
        return (urn, *(form(components, p) for p in parts))
    return ("opaque", _identity(components, coder_id))


def recodes(a: Form, b: Form) -> bool:
    """``runner_recodes``, of two coders' forms."""
    if a == b:
        return True
    if a[0] == "lp" and recodes(a[1], b):
        return True
    if b[0] == "lp" and recodes(a, b[1]):
        return True
    structured = a[0] not in ("leaf", "lp", "opaque")
    return structured and a[0] == b[0] and len(a) == len(b) and all(map(recodes, a[1:], b[1:]))


def readable(components: beam_runner_api_pb2.Components, coder_id: str) -> bool:
    """Does the runner decode this coder (worker/codecs.py)? Standard all the way down, where a
    length prefix may hold anything (its content is read as bytes)."""
    coder = components.coders[coder_id]
    urn = coder.spec.urn
    if urn in urns.READABLE_LEAF_CODERS or urn in (urns.LENGTH_PREFIX_CODER, urns.CUSTOM_WINDOW_CODER):
        return True
    return urn in urns.STRUCTURED_CODERS and all(readable(components, c) for c in coder.component_coder_ids)


def _identity(components, coder_id: str) -> tuple:
    """An opaque coder as the SDK defines it: URN, payload and components, not its id (the Go SDK
    gives a TestStream's events a coder of their own, equal to its output's)."""
    coder = components.coders[coder_id]
    return (coder.spec.urn, coder.spec.payload, tuple(_identity(components, c) for c in coder.component_coder_ids))


def _urns(components, coder_id: str) -> str:
    coder = components.coders[coder_id]
    parts = ", ".join(_urns(components, c) for c in coder.component_coder_ids)
    return f"{coder.spec.urn or 'no URN'}({parts})" if parts else coder.spec.urn or "no URN"
