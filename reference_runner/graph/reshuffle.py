"""Reshuffle as a runner-side step instead of its expansion.

Beam's Reshuffle composite expands to random keys, a GroupByKey and four ParDos that put every
element back as it was; since Beam 2.65 it keeps value, timestamp, window and pane. A runner
may run it itself: here it becomes a one-input pass-through that ends the fused stage before
it (kind FLATTEN in graph/fusion.py). The Spark backend redistributes its elements evenly
over the partitions (``repartition``), which the expansion's random keys only approximate.
"""

from __future__ import annotations

from apache_beam.portability.api import beam_runner_api_pb2

from reference_runner.graph import copy_on_write, urns


def replace(proto: beam_runner_api_pb2.Pipeline) -> beam_runner_api_pb2.Pipeline:
    """A copy of ``proto`` whose Reshuffle composites are leaves (the input is not changed)."""
    found = [
        tid
        for tid, t in proto.components.transforms.items()
        if t.spec.urn == urns.RESHUFFLE and t.subtransforms and len(t.inputs) == 1 and len(t.outputs) == 1
    ]
    return copy_on_write.edit_each(proto, found, _make_leaf)


def _make_leaf(proto: beam_runner_api_pb2.Pipeline, tid: str) -> None:
    # A Reshuffle nested in another is left unreachable, as its parts are.
    transform = proto.components.transforms[tid]
    del transform.subtransforms[:]
    transform.spec.payload = b""
