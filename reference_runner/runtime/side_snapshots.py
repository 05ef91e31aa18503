"""Side inputs as the next bundle of a stage sees them: indexed into the job's StateService
from the engine's contents, once per job in batch, again in streaming whenever new panes or
elements arrived since.

The SDK's DoFn invoker keeps the values of globally windowed side inputs for the life of its
bundle processor (apache/beam PR #31013: unless the worker runs with the experiment
disable_global_windowed_args_caching), and workers reuse processors across bundles and, warm,
across jobs. So a stage reading only globally windowed side inputs (the invoker reads windowed
ones again for every element) runs under a descriptor id naming a digest of their contents:
new contents, a new processor that reads them.
"""

from __future__ import annotations

import dataclasses
import hashlib

from reference_runner.engine import manager
from reference_runner.graph.descriptors import StageDescriptor
from reference_runner.graph.plan import PlannedStage
from reference_runner.worker.codecs import Coders
from reference_runner.worker.state import SideInputIndex, StateService


class SideSnapshots:
    def __init__(self, state: StateService, coders: Coders, worker):
        self._state, self._coders, self._worker = state, coders, worker
        self._versions: dict[tuple[str, str], int] = {}  # (transform, tag) -> version indexed
        self._digests: dict[tuple[str, str], bytes] = {}  # (transform, tag) -> digest of its contents
        self._variants: dict[str, StageDescriptor] = {}  # registered, by descriptor id

    def descriptor_for(
        self, stage: PlannedStage, em: manager.ElementManager, described: StageDescriptor
    ) -> StageDescriptor:
        """Index the stage's side inputs as they are now; the descriptor to run the bundle with."""
        if not stage.side_inputs:
            return described
        global_sides = all(s.globally_windowed for s in stage.side_inputs)
        for side in stage.side_inputs:
            key = (side.transform_id, side.tag)
            if self._versions.get(key) == em.side_input_version(side.pcoll):
                continue  # indexed already, contents unchanged: no snapshot taken
            version, contents = em.side_input(side.pcoll)
            self._state.side_inputs[key] = SideInputIndex(contents, self._coders, side.pcoll, side.multimap)
            self._versions[key] = version
            if global_sides:
                self._digests[key] = _digest(contents)
        if not global_sides:
            return described
        variant_id = _variant_id(described, [self._digests[(s.transform_id, s.tag)] for s in stage.side_inputs])
        variant = self._variants.get(variant_id)
        if variant is None:
            variant = self._variants[variant_id] = _renamed(described, variant_id)
            self._worker.register(variant.proto)
        return variant


def snapshot_variant(described: StageDescriptor, contents: list) -> StageDescriptor:
    """``described`` under an id naming a digest of its globally windowed side inputs' contents
    (``contents``, one per side input, in the stage's order), for a worker that keeps bundle
    processors between uses of the same stage."""
    return _renamed(described, _variant_id(described, [_digest(c) for c in contents]))


def _variant_id(described: StageDescriptor, digests: list[bytes]) -> str:
    return f"{described.proto.id}~{hashlib.sha1(b''.join(digests)).hexdigest()[:16]}"


def _renamed(described: StageDescriptor, descriptor_id: str) -> StageDescriptor:
    proto = type(described.proto)()
    proto.CopyFrom(described.proto)
    proto.id = descriptor_id
    return dataclasses.replace(described, proto=proto)


def _digest(contents) -> bytes:
    """Of a side input's contents as em.side_input gives them (a list, or window -> list)."""
    h = hashlib.sha1()
    groups = [(w, contents[w]) for w in sorted(contents)] if isinstance(contents, dict) else [(b"", contents)]
    for window, elements in groups:
        h.update(len(window).to_bytes(4, "big") + window + len(elements).to_bytes(4, "big"))
        for e in elements:
            h.update(len(e).to_bytes(4, "big"))
            h.update(e)
    return h.digest()
