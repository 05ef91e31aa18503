"""How a front-end pass changes a pipeline: on a copy, never its input (graph/front_end.py).

A pass hands back its input itself when it finds nothing to rewrite, so an untouched pipeline
is not copied; otherwise a copy with each thing it found rewritten.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from apache_beam.portability.api import beam_runner_api_pb2

T = TypeVar("T")


def copy(proto: beam_runner_api_pb2.Pipeline) -> beam_runner_api_pb2.Pipeline:
    """A deep copy, to edit while ``proto`` stays as it was."""
    out = beam_runner_api_pb2.Pipeline()
    out.CopyFrom(proto)
    return out


def edit_each(
    proto: beam_runner_api_pb2.Pipeline,
    found: Sequence[T],
    edit: Callable[[beam_runner_api_pb2.Pipeline, T], None],
) -> beam_runner_api_pb2.Pipeline:
    """``proto`` itself when ``found`` is empty, else a copy with ``edit(copy, item)`` applied to
    each item found, in order."""
    if not found:
        return proto
    out = copy(proto)
    for item in found:
        edit(out, item)
    return out
