"""A fused SDK stage -> the ProcessBundleDescriptor the SDK worker runs.

Its PCollections keep the coders the SDK declared (a harness may need them: Java's schema ParDos
read their schemas off them). Where the runner meets the stage's bytes, the descriptor names the
runner's readable coders instead (graph/opaque_coders.py), as Beam's portable runners do: the
data ports' wire coders, the PCollections read as side inputs (the runner serves their elements
as it holds them), the timer families, and the main input of a stage whose input bytes come back
to the runner (a stateful head's state keys, a splittable head's residuals).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from apache_beam.portability.api import beam_fn_api_pb2, beam_runner_api_pb2

from reference_runner.graph import subset, urns
from reference_runner.graph.fusion import FusedStage
from reference_runner.graph.opaque_coders import Readable
from reference_runner.graph.pipeline import is_stateful

#: where a Plan's descriptors point before a backend instantiates them (plan.Descriptor)
ENDPOINT_PLACEHOLDER = "@runner-endpoint@"
#: the Fn API "address" of a worker embedded in this process (it needs no endpoint)
EMBEDDED_ENDPOINT = "embedded"


@dataclass
class StageDescriptor:
    proto: beam_fn_api_pb2.ProcessBundleDescriptor
    input_transform: str  # where the runner sends the stage's main input
    output_transforms: dict[str, str]  # transform id -> PCollection it carries to the runner


def build(
    stage: FusedStage,
    components: beam_runner_api_pb2.Components,
    descriptor_id: str | None = None,
    endpoint: str = EMBEDDED_ENDPOINT,
    by_content: bool = False,
) -> StageDescriptor:
    """``endpoint``: the runner's Fn API address for a remote worker ("embedded" in process).
    ``by_content``: suffix the id with a digest of the descriptor (see name_by_content)."""
    pbd = beam_fn_api_pb2.ProcessBundleDescriptor(id=descriptor_id or stage.id)
    # only what the stage's transforms name: the whole pipeline's would make every stage of a
    # large pipeline as large as the pipeline
    used = subset.needed(components, {t.id: t.proto for t in stage.transforms}, [*stage.inputs, *stage.outputs])
    for kind in ("pcollections", "coders", "windowing_strategies", "environments"):
        for key, value in getattr(used, kind).items():
            getattr(pbd, kind)[key].CopyFrom(value)
    for t in stage.transforms:
        pbd.transforms[t.id].CopyFrom(t.proto)
        if t.urn == urns.SDK_FLATTEN:
            pbd.transforms[t.id].spec.urn = urns.FLATTEN
    readable = Readable(components)
    [main] = stage.inputs
    input_id = f"{stage.id}/input"
    _port(pbd, input_id, urns.DATA_INPUT, main, readable, endpoint, outputs={"out": main})
    outputs = {}
    for pcoll in stage.outputs:
        transform_id = f"{stage.id}/output/{pcoll}"
        _port(pbd, transform_id, urns.DATA_OUTPUT, pcoll, readable, endpoint, inputs={"in": pcoll})
        outputs[transform_id] = pcoll
    head = stage.transforms[0]
    runner_read = {pcoll for pcoll, _, _ in stage.side_inputs}
    if is_stateful(head) or head.urn in urns.STAGE_ROOTS:
        runner_read.add(main)
    # (and a PCollection of windowed values, which a harness would misread: Readable.pcollection)
    runner_read |= {
        p for p, pc in pbd.pcollections.items() if readable.coder(pc.coder_id).spec.urn == urns.WINDOWED_VALUE_CODER
    }
    for pcoll in sorted(runner_read):
        pbd.pcollections[pcoll].coder_id = _readable(
            pbd, readable, readable.pcollection(pbd.pcollections[pcoll].coder_id)
        )
    for t in stage.transforms:
        _readable_timers(pbd, pbd.transforms[t.id], readable)
    # Side inputs and state travel over the state channel; the embedded worker ignores the address.
    pbd.state_api_service_descriptor.url = endpoint
    if any((t.pardo_payload() or beam_runner_api_pb2.ParDoPayload()).timer_family_specs for t in stage.transforms):
        # Timers travel on the data channel too; the SDK sets up timer streams only when asked.
        pbd.timer_api_service_descriptor.url = endpoint
    if by_content:
        name_by_content(pbd)
    return StageDescriptor(pbd, input_id, outputs)


def instantiate(
    serialized: bytes,
    input_transform: str,
    output_transforms: dict[str, str],
    descriptor_id: str,
    endpoint: str,
    by_content: bool,
) -> StageDescriptor:
    """A descriptor built with ENDPOINT_PLACEHOLDER, named ``descriptor_id`` and pointed at
    ``endpoint`` (the runner's Fn API address; "embedded" in process)."""
    pbd = beam_fn_api_pb2.ProcessBundleDescriptor.FromString(serialized)
    pbd.id = descriptor_id
    for transform in pbd.transforms.values():
        if transform.spec.urn in (urns.DATA_INPUT, urns.DATA_OUTPUT):
            port = beam_fn_api_pb2.RemoteGrpcPort.FromString(transform.spec.payload)
            if port.api_service_descriptor.url == ENDPOINT_PLACEHOLDER:
                port.api_service_descriptor.url = endpoint
                transform.spec.payload = port.SerializeToString()
    for service in (pbd.state_api_service_descriptor, pbd.timer_api_service_descriptor):
        if service.url == ENDPOINT_PLACEHOLDER:
            service.url = endpoint
    if by_content:
        name_by_content(pbd)
    return StageDescriptor(pbd, input_transform, dict(output_transforms))


def name_by_content(pbd: beam_fn_api_pb2.ProcessBundleDescriptor) -> str:
    """Suffix the descriptor's id with a digest of everything else in it.

    The SDK harness caches bundle processors by descriptor id, so an identical stage of a later
    job run on the same warm worker (worker/warm.py) reuses them instead of building them again;
    a stage that differs in anything (code, coders, windowing) gets another id.
    """
    base = pbd.id
    pbd.id = ""
    digest = hashlib.sha1(pbd.SerializeToString(deterministic=True)).hexdigest()[:20]
    pbd.id = f"{base}@{digest}"
    return pbd.id


def _port(pbd, transform_id: str, urn: str, pcoll: str, readable: Readable, endpoint: str, inputs=None, outputs=None):
    data_port(pbd, transform_id, urn, _wire_coder(pbd, pcoll, readable), endpoint, inputs, outputs)


def data_port(pbd, transform_id: str, urn: str, wire_coder: str, endpoint: str, inputs=None, outputs=None) -> None:
    """A DATA_INPUT / DATA_OUTPUT transform: where the runner's data enters or leaves a descriptor."""
    port = beam_fn_api_pb2.RemoteGrpcPort(coder_id=wire_coder)
    port.api_service_descriptor.url = endpoint
    transform = pbd.transforms[transform_id]
    transform.unique_name = transform_id
    transform.spec.urn = urn
    transform.spec.payload = port.SerializeToString()
    for tag, p in (inputs or {}).items():
        transform.inputs[tag] = p
    for tag, p in (outputs or {}).items():
        transform.outputs[tag] = p


def _wire_coder(pbd, pcoll: str, readable: Readable) -> str:
    """windowed_value(element coder, window coder), both readable: how elements of ``pcoll``
    cross the data channel."""
    coder_id = f"wire/{pcoll}"
    if coder_id not in pbd.coders:
        p = readable.components.pcollections[pcoll]
        ws = readable.components.windowing_strategies[p.windowing_strategy_id]
        parts = [_readable(pbd, readable, readable.pcollection(p.coder_id)), readable.window(ws.window_coder_id)]
        readable.copy_into(pbd.coders, parts[1])
        coder = pbd.coders[coder_id]
        coder.spec.urn = urns.WINDOWED_VALUE_CODER
        coder.component_coder_ids.extend(parts)
    return coder_id


def _readable(pbd, readable: Readable, coder_id: str) -> str:
    """The readable version of element coder ``coder_id``, with what it is built of in ``pbd``."""
    readable_id = readable.element(coder_id)
    readable.copy_into(pbd.coders, readable_id)
    return readable_id


def _readable_timers(pbd, transform: beam_runner_api_pb2.PTransform, readable: Readable) -> None:
    """Timers cross the data channel: their families' coders become readable in ``transform``."""
    if transform.spec.urn not in urns.PARDO_LIKE:
        return
    payload = beam_runner_api_pb2.ParDoPayload.FromString(transform.spec.payload)
    if not payload.timer_family_specs:
        return
    for spec in payload.timer_family_specs.values():
        spec.timer_family_coder_id = _readable(pbd, readable, spec.timer_family_coder_id)
    transform.spec.payload = payload.SerializeToString(deterministic=True)  # (name_by_content digests it)
