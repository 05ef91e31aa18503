"""DoFns the runner adds to a Python pipeline: keys replaced by their encoding and back.

Combiner lifting (graph/lifting.py) needs the SDK's precombine to see keys whose Python
equality is their encoding. For a Python CombineFn these run inside the SDK worker, fused with
the precombine, so elements do not cross to the runner and back for it.
"""
from __future__ import annotations

import apache_beam as beam


class _WithKeyCoder(beam.DoFn):
    """Holds the key coder's implementation, rebuilt on unpickling rather than in setup(): a
    DoFn without setup or teardown lets warm workers reuse its stage (worker/warm.py)."""

    def __init__(self, key_coder):
        self._coder = key_coder
        self._impl = key_coder.get_impl()

    def __getstate__(self):
        return {"_coder": self._coder}

    def __setstate__(self, state):
        self.__init__(state["_coder"])


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
