"""Length-prefix every coder the runner does not know, so it never needs the user's code.

The runner decodes elements only for what the model needs: timestamps, windows and panes, keys
as bytes, the shape of KVs and iterables. It reads standard coders (urns.READABLE_LEAF_CODERS,
and KV, iterable, windowed value and timer coders over them). Any other coder (a pickled Python
coder, a user's own, a row or nullable or sharded-key coder, another SDK's) is wrapped in a
length prefix, the Runner API's way of saying "opaque bytes" (the SDK decodes the same data
as before, the runner sees bytes and groups by them). A window coder the runner does not know
becomes beam:coder:custom_window:v1 over the length-prefixed original: the window's max
timestamp, then its opaque encoding.

The rewrite applies to every PCollection's coder and windowing strategy and to the timer coders
of stateful ParDos: the coders at every place where the runner meets data (the data channel,
side inputs and state keys, timers). The SDK's descriptors carry the rewritten components, so
both sides read the same bytes the same way.
"""

from __future__ import annotations

from apache_beam.portability.api import beam_runner_api_pb2

from reference_runner.graph import urns


def length_prefix_unknown(proto: beam_runner_api_pb2.Pipeline) -> beam_runner_api_pb2.Pipeline:
    """A copy of ``proto`` whose PCollections, windowing strategies and timers use only coders
    the runner reads (the input is not changed; returned as is when nothing needs it)."""
    out = beam_runner_api_pb2.Pipeline()
    out.CopyFrom(proto)
    rewrite = _Rewrite(out.components)
    changed = False
    for pcoll in out.components.pcollections.values():
        readable = rewrite.pcollection(pcoll.coder_id)
        changed |= readable != pcoll.coder_id
        pcoll.coder_id = readable
    for ws in out.components.windowing_strategies.values():
        readable = rewrite.window(ws.window_coder_id)
        changed |= readable != ws.window_coder_id
        ws.window_coder_id = readable
    for transform in out.components.transforms.values():
        if transform.spec.urn in urns.PARDO_LIKE:
            changed |= _timer_coders(transform, rewrite)
    return out if changed else proto


def _timer_coders(transform: beam_runner_api_pb2.PTransform, rewrite: _Rewrite) -> bool:
    payload = beam_runner_api_pb2.ParDoPayload.FromString(transform.spec.payload)
    changed = False
    for spec in payload.timer_family_specs.values():
        readable = rewrite.element(spec.timer_family_coder_id)
        if readable != spec.timer_family_coder_id:
            spec.timer_family_coder_id, changed = readable, True
    if changed:
        transform.spec.payload = payload.SerializeToString()
    return changed


class _Rewrite:
    """Readable versions of coders, added to ``components`` as needed (memoized)."""

    def __init__(self, components: beam_runner_api_pb2.Components):
        self._components = components
        self._elements: dict[str, str] = {}
        self._windows: dict[str, str] = {}

    def pcollection(self, coder_id: str) -> str:
        """A PCollection's coder. Elements that are themselves windowed values (Java's
        Create.windowedValues makes such a PCollection) are carried opaque: the SDK harnesses
        (Java's and Python's) take a PCollection coder of beam:coder:windowed_value:v1 for the
        wire coder, without another windowed value around it, and misread those elements."""
        if self._components.coders[coder_id].spec.urn == urns.WINDOWED_VALUE_CODER:
            return self._add(f"{coder_id}/length_prefixed", urns.LENGTH_PREFIX_CODER, [coder_id])
        return self.element(coder_id)

    def element(self, coder_id: str) -> str:
        known = self._elements.get(coder_id)
        if known is None:
            known = self._elements[coder_id] = self._element(coder_id)
        return known

    def _element(self, coder_id: str) -> str:
        proto = self._components.coders[coder_id]
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

    def window(self, coder_id: str) -> str:
        known = self._windows.get(coder_id)
        if known is None:
            urn = self._components.coders[coder_id].spec.urn
            known = (
                coder_id
                if urn in urns.WINDOW_CODERS
                else self._add(
                    f"{coder_id}/timestamp_prefixed",
                    urns.CUSTOM_WINDOW_CODER,
                    [self._add(f"{coder_id}/length_prefixed", urns.LENGTH_PREFIX_CODER, [coder_id])],
                )
            )
            self._windows[coder_id] = known
        return known

    def _add(self, coder_id: str, urn: str, parts: list[str]) -> str:
        if coder_id not in self._components.coders:
            coder = self._components.coders[coder_id]
            coder.spec.urn = urn
            coder.component_coder_ids.extend(parts)
        return coder_id


# Which components of a structured coder are window coders.
_WINDOW_PARTS = {urns.WINDOWED_VALUE_CODER: (1,), urns.TIMER_CODER: (1,)}
