"""DoFns the runner adds to a Python pipeline: keys replaced by their encoding and back.

Combiner lifting (graph/lifting.py) needs the SDK's precombine to see keys whose Python
equality is their encoding. For a Python CombineFn these run inside the SDK worker, fused with
the precombine, so elements do not cross to the runner and back for it.
"""
from __future__ import annotations

import apache_beam as beam
from apache_beam.coders.coder_impl import create_InputStream, create_OutputStream


class KeysToBytes(beam.DoFn):
    def __init__(self, key_coder):
        self._coder = key_coder

    def setup(self):
        self._impl = self._coder.get_impl()

    def process(self, kv):
        out = create_OutputStream()
        self._impl.encode_to_stream(kv[0], out, True)
        yield out.get(), kv[1]


class KeysFromBytes(beam.DoFn):
    def __init__(self, key_coder):
        self._coder = key_coder

    def setup(self):
        self._impl = self._coder.get_impl()

    def process(self, kv):
        yield self._impl.decode_from_stream(create_InputStream(kv[0]), True), kv[1]
