"""DoFns the runner adds to a Python pipeline: keys replaced by their encoding and back.

Combiner lifting (graph/lifting.py) needs the SDK's precombine to see keys whose Python
equality is their encoding. For a Python CombineFn these run inside the SDK worker, fused with
the precombine, so elements do not cross to the runner and back for it.

They carry the key coder as its Runner API proto and build it in the SDK worker: the runner
never builds a user's coder (it may not be able to import it). ``pickled`` pickles them by
value, so an SDK worker without this kit installed (a user's LOOPBACK or container worker) runs
them too.
"""

from __future__ import annotations

import sys

import apache_beam as beam
from apache_beam.internal import pickler
from apache_beam.portability.api import beam_runner_api_pb2


class _WithKeyCoder(beam.DoFn):
    """Holds the key coder's implementation, built on unpickling (in the SDK worker) rather than
    in setup(): a DoFn without setup or teardown lets warm workers reuse its stage
    (worker/warm.py). The runner only creates and pickles it, and never builds the coder: the
    user's coder class may not be importable where the runner runs."""

    def __init__(self, coder_id: str, components: bytes):
        self._coder_id, self._components = coder_id, components

    def __getstate__(self):
        return {"coder_id": self._coder_id, "components": self._components}

    def __setstate__(self, state):
        self._load(state["coder_id"], state["components"])

    def _load(self, coder_id: str, components: bytes) -> None:
        from apache_beam.runners import pipeline_context

        self._coder_id, self._components = coder_id, components
        context = pipeline_context.PipelineContext(beam_runner_api_pb2.Components.FromString(components))
        self._impl = context.coders[coder_id].get_impl()


class KeysToBytes(_WithKeyCoder):
    def process(self, kv):
        return [(self._impl.encode_nested(kv[0]), kv[1])]  # a list: cheaper than a generator per element


class KeysFromBytes(_WithKeyCoder):
    def process(self, kv):
        return [(self._impl.decode_nested(kv[0]), kv[1])]


class KeysToBytesUnlessStr(_WithKeyCoder):
    """For pickled (FastPrimitivesCoder) keys: a key that is exactly a str passes as it is (two
    strs are == exactly when their encodings are), any other key becomes its encoding. The
    re-keyed PCollection keeps the pickled coder, which tags str and bytes apart, so a passed
    str never meets an encoding of another key. Word counts skip an encode per element."""

    def process(self, kv):
        if type(kv[0]) is str:
            return [kv]
        return [(self._impl.encode_nested(kv[0]), kv[1])]


class KeysFromBytesUnlessStr(_WithKeyCoder):
    def process(self, kv):
        if type(kv[0]) is str:
            return [kv]
        return [(self._impl.decode_nested(kv[0]), kv[1])]


def pickled(fn: _WithKeyCoder) -> bytes:
    """The DoFn as the SDK's pickled DoFn info, its classes pickled by value."""
    from apache_beam.internal import cloudpickle_pickler

    if pickler.desired_pickle_lib is cloudpickle_pickler:
        from apache_beam.internal.cloudpickle import cloudpickle

        cloudpickle.register_pickle_by_value(sys.modules[__name__])
    return pickler.dumps((fn, (), {}, [], None))


def coder_closure(components: beam_runner_api_pb2.Components, coder_id: str) -> bytes:
    """Serialized Components holding ``coder_id`` and every coder it is built from."""
    closure = beam_runner_api_pb2.Components()
    pending = [coder_id]
    while pending:
        cid = pending.pop()
        if cid not in closure.coders:
            closure.coders[cid].CopyFrom(components.coders[cid])
            pending.extend(components.coders[cid].component_coder_ids)
    return closure.SerializeToString(deterministic=True)
