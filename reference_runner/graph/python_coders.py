"""What the runner may know of a Python SDK coder without unpickling it: its class's name.

The Python SDK writes a coder of its own (beam:coder:pickled_python:v1) as a protobuf BytesValue
holding ``ClassName$`` and then the pickled coder. The name is all the runner reads: unpickling
would run the user's code and import the user's modules, which the runner may not have (a coder
defined in the user's ``__main__``, a job server started from another directory).
"""

from __future__ import annotations

from google.protobuf import wrappers_pb2
from google.protobuf.message import DecodeError

from reference_runner.graph import urns

# Beam's coders for pickled Python values (which one a pipeline gets depends on the Beam version
# and update compatibility): each writes a str and a bytes with different type tags.
PRIMITIVES = frozenset(
    {"FastPrimitivesCoder", "DeterministicFastPrimitivesCoder", "DeterministicFastPrimitivesCoderV2"}
)
# Beam's coders whose encoding of equal values may differ (pickling, a dict's order): never keys.
# (Those that take component coders, such as a tuple's, hide them in the pickle: the SDK checks.)
NOT_DETERMINISTIC = frozenset(
    {"FastPrimitivesCoder", "PickleCoder", "CloudpickleCoder", "Base64PickleCoder", "DillCoder", "MapCoder"}
)


def class_name(coder, components=None) -> str | None:
    """The class name in a pickled Python coder's proto (a beam_runner_api_pb2.Coder), or in the
    one a length prefix wraps (given the pipeline's ``components``); None for any other coder, or
    a payload not in the SDK's form."""
    if components is not None and coder.spec.urn == urns.LENGTH_PREFIX_CODER:
        return class_name(components.coders[coder.component_coder_ids[0]], components)
    if coder.spec.urn != urns.PICKLED_PYTHON_CODER:
        return None
    try:
        payload = wrappers_pb2.BytesValue.FromString(coder.spec.payload).value
    except DecodeError:
        return None
    name, dollar, _ = payload.partition(b"$")
    if not dollar or not name.isascii() or not name.decode().isidentifier():
        return None
    return name.decode()
