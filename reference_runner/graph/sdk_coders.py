"""Beam's coder objects for coder protos, built only to ask a coder questions (is it
deterministic, which of Beam's coders is it), never to decode data: worker/codecs.py reads data
with standard coders alone.

A coder of the user's own (pickled, from a module the runner cannot import) cannot be built
here; the answer is then None and the caller trusts the SDK, which checked it when the
pipeline was built.
"""

from __future__ import annotations

import logging

from apache_beam.coders import coders
from apache_beam.runners import pipeline_context

_LOG = logging.getLogger(__name__)


def build(components, coder_id: str) -> coders.Coder | None:
    try:
        return pipeline_context.PipelineContext(components).coders[coder_id]
    except Exception as e:  # noqa: BLE001 - unpickling a user's coder fails in many ways
        _LOG.debug("coder %s cannot be built in the runner: %s", coder_id, e)
        return None
