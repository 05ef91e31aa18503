"""The coders the runner reads data with: every coder it does not know, length-prefixed.

The runner decodes elements only for what the model needs: timestamps, windows and panes, keys
as bytes, the shape of KVs and iterables. It reads standard coders (urns.READABLE_LEAF_CODERS,
and KV, iterable, windowed value and timer coders over them). Any other coder (a pickled Python
coder, a user's own, a row or nullable or sharded-key coder, another SDK's) is wrapped in a
length prefix, the Runner API's way of saying "opaque bytes": the SDK decodes the same values
as with the coder it declared, the runner sees bytes and groups by them. A window coder the
runner does not know becomes beam:coder:custom_window:v1 over the length-prefixed original: the
window's max timestamp, then its opaque encoding.

``Readable`` owns this rule. Elements keep the SDK's own coders in the pipeline and inside a
stage (an SDK may depend on them: Java's schema ParDos find their schemas there); the readable
versions apply only where runner and SDK exchange bytes: the data channel's ports, side inputs,
the keys of user state, timers and splittable residuals (graph/descriptors.py says so to the SDK;
worker/codecs.py decodes that way). Windows are another matter: the runner reads them wherever
they appear (state keys, timers, side input windows, merging), so ``readable_windows`` gives
every windowing strategy its readable window coder once, in the front end.
"""

from __future__ import annotations

import threading

from apache_beam.portability.api import beam_runner_api_pb2

from reference_runner.graph import copy_on_write, urns


class Readable:
    """Readable versions of the coders of ``components``, which stays as it is: the coders this
    adds (named after the coder they stand for) are kept in ``added``. Thread-safe: a runner's
    Coders is shared by the threads serving one job."""

    def __init__(self, components: beam_runner_api_pb2.Components):
        self.components = components
        self.added = beam_runner_api_pb2.Components()
        self._elements: dict[str, str] = {}
        self._windows: dict[str, str] = {}
        self._lock = threading.RLock()  # (a coder is added in two steps: none may see it half made)

    def coder(self, coder_id: str) -> beam_runner_api_pb2.Coder:
        """The proto of a coder of ``components`` or one added here."""
        added = self.added.coders.get(coder_id)
        return added if added is not None else self.components.coders[coder_id]

    def element(self, coder_id: str) -> str:
        """The readable version of element coder ``coder_id`` (itself when it is readable)."""
        known = self._elements.get(coder_id)
        if known is None:
            with self._lock:
                known = self._elements[coder_id] = self._element(coder_id)
        return known

    def pcollection(self, coder_id: str) -> str:
        """The readable version of a PCollection's element coder, as the runner and the SDK both
        hold it on the data channel. Elements that are themselves windowed values (Java's
        Create.windowedValues makes such a PCollection) are carried opaque: the SDK harnesses
        (Java's and Python's) take a PCollection coder of beam:coder:windowed_value:v1 for the
        wire coder, without another windowed value around it, and misread those elements."""
        if self.coder(coder_id).spec.urn == urns.WINDOWED_VALUE_CODER:
            with self._lock:
                return self._add(f"{coder_id}/length_prefixed", urns.LENGTH_PREFIX_CODER, [coder_id])
        return self.element(coder_id)

    def window(self, coder_id: str) -> str:
        """The readable version of window coder ``coder_id``."""
        known = self._windows.get(coder_id)
        if known is None:
            with self._lock:
                if self.coder(coder_id).spec.urn in urns.WINDOW_CODERS:
                    known = coder_id
                else:
                    opaque = self._add(f"{coder_id}/length_prefixed", urns.LENGTH_PREFIX_CODER, [coder_id])
                    known = self._add(f"{coder_id}/timestamp_prefixed", urns.CUSTOM_WINDOW_CODER, [opaque])
                self._windows[coder_id] = known
        return known

    def copy_into(self, coders, coder_id: str) -> None:
        """Copy ``coder_id`` and every coder it is built from into the map ``coders`` (a
        descriptor's), where missing."""
        pending = [coder_id]
        while pending:
            cid = pending.pop()
            if cid not in coders:
                coders[cid].CopyFrom(self.coder(cid))
                pending.extend(coders[cid].component_coder_ids)

    def _element(self, coder_id: str) -> str:
        proto = self.coder(coder_id)
        urn = proto.spec.urn
        if urn in urns.READABLE_LEAF_CODERS or urn == urns.LENGTH_PREFIX_CODER:
            return coder_id  # (what a length prefix holds, the runner reads as bytes if it must)
        if urn in urns.STRUCTURED_CODERS:
            window_parts = _WINDOW_PARTS.get(urn, ())
            parts = [
                self.window(c) if i in window_parts else self.element(c)
                for i, c in enumerate(proto.component_coder_ids)
            ]
            if parts == list(proto.component_coder_ids):
                return coder_id
            return self._add(f"{coder_id}/readable", urn, parts)
        return self._add(f"{coder_id}/length_prefixed", urns.LENGTH_PREFIX_CODER, [coder_id])

    def _add(self, coder_id: str, urn: str, parts: list[str]) -> str:
        if coder_id not in self.added.coders and coder_id not in self.components.coders:
            coder = beam_runner_api_pb2.Coder(component_coder_ids=parts)
            coder.spec.urn = urn
            self.added.coders[coder_id].CopyFrom(coder)
        return coder_id


def readable_windows(proto: beam_runner_api_pb2.Pipeline) -> beam_runner_api_pb2.Pipeline:
    """A copy of ``proto`` whose windowing strategies use only window coders the runner reads
    (the input is not changed; returned as is when nothing needs it)."""
    readable = Readable(proto.components)
    rewritten = {
        ws_id: readable.window(ws.window_coder_id) for ws_id, ws in proto.components.windowing_strategies.items()
    }
    if all(rewritten[ws_id] == ws.window_coder_id for ws_id, ws in proto.components.windowing_strategies.items()):
        return proto
    out = copy_on_write.copy(proto)
    for coder_id, coder in readable.added.coders.items():
        out.components.coders[coder_id].CopyFrom(coder)
    for ws_id, coder_id in rewritten.items():
        out.components.windowing_strategies[ws_id].window_coder_id = coder_id
    return out


# Which components of a structured coder are window coders.
_WINDOW_PARTS = {urns.WINDOWED_VALUE_CODER: (1,), urns.TIMER_CODER: (1,)}
