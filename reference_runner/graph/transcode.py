"""Runner transforms never re-encode: where their inputs need another coder, the SDK transcodes.

The runner reads standard coders only (graph/opaque_coders.py); a pickled or user coder on
either side of a re-encoding is opaque to it. Yet Beam pipelines ask for re-encodings:

- a Flatten whose inputs have other coders than its output (a Flatten of ints and strs, the
  tagged inputs of CoGroupByKey);
- a GroupByKey whose input key or value coder differs from its output's (Python types a
  GroupByKey's output from the input's type hint: a Flatten of KV(str, int) and KV(str, str)
  feeds KV(str, any) into a GroupByKey that outputs KV(any, iterable of any));
- a Reshuffle the runner runs itself (graph/reshuffle.py) whose output coder differs;
- a TestStream whose events are encoded with another coder than its outputs': the runner
  emits them as they are encoded, the SDK transcodes them after it.

Each such input gets an identity transform of the SDK's (beam:dofn:identity:0.1, what the SDK's
own pre-optimization inserts before Flatten inputs) whose output PCollection has the coder the
runner transform needs; it fuses into the stage producing the input. Inputs that already have
it (the SDK transcoded them itself) are left alone.
"""

from __future__ import annotations

from apache_beam.portability.api import beam_runner_api_pb2

from reference_runner.graph import urns
from reference_runner.graph.pipeline import reachable

_RUNNER_TRANSFORMS = (urns.FLATTEN, urns.GROUP_BY_KEY, urns.RESHUFFLE)


def transcode_in_sdk(proto: beam_runner_api_pb2.Pipeline) -> beam_runner_api_pb2.Pipeline:
    """A copy of ``proto`` whose runner transforms read inputs of the coders they need."""
    components = proto.components
    leaves = [
        (tid, components.transforms[tid])
        for tid in sorted(reachable(proto))
        if not components.transforms[tid].subtransforms
    ]
    mismatched = [tid for tid, t in leaves if t.spec.urn in _RUNNER_TRANSFORMS and _mismatched_inputs(components, t)]
    streams = [tid for tid, t in leaves if t.spec.urn == urns.TEST_STREAM and _mismatched_outputs(components, t)]
    if not mismatched and not streams:
        return proto
    out = beam_runner_api_pb2.Pipeline()
    out.CopyFrom(proto)
    components = out.components
    producers = {
        pcoll: t for t in components.transforms.values() if not t.subtransforms for pcoll in t.outputs.values()
    }
    parents = {child: tid for tid, t in components.transforms.items() for child in t.subtransforms}
    for tid in mismatched + streams:
        if tid in streams:
            added = _transcode_outputs(components, tid)
        else:
            added = _transcode_inputs(components, tid, producers)
        if tid in parents:
            components.transforms[parents[tid]].subtransforms.extend(added)
        else:
            out.root_transform_ids.extend(added)
    return out


# a coder as the runner compares it: (urn, component coder ids)
_CoderSpec = tuple[str, tuple[str, ...]]


def _needed_coder(components, transform: beam_runner_api_pb2.PTransform) -> tuple[_CoderSpec, str | None] | None:
    """The coder every input of this runner transform must have, as (urn, component ids), and
    the id of a coder of the pipeline's that is it, if any (None: nothing to require)."""
    if len(transform.outputs) != 1:
        return None
    [output] = transform.outputs.values()
    coder_id = components.pcollections[output].coder_id
    if transform.spec.urn != urns.GROUP_BY_KEY:
        return _spec(components.coders[coder_id]), coder_id
    # KV(K, iterable of V) out: KV(K, V) in
    kv = components.coders[coder_id]
    if kv.spec.urn != urns.KV_CODER or components.coders[kv.component_coder_ids[1]].spec.urn != urns.ITERABLE_CODER:
        return None
    key, grouped = kv.component_coder_ids
    [value] = components.coders[grouped].component_coder_ids
    needed = (urns.KV_CODER, (key, value))
    return needed, next((cid for cid, c in components.coders.items() if _spec(c) == needed), None)


def _spec(coder: beam_runner_api_pb2.Coder) -> _CoderSpec:
    return coder.spec.urn, tuple(coder.component_coder_ids)


def _mismatched_inputs(components, transform: beam_runner_api_pb2.PTransform) -> list[str]:
    needed = _needed_coder(components, transform)
    if needed is None:
        return []
    spec, _ = needed
    return [
        tag
        for tag, pcoll in transform.inputs.items()
        if _spec(components.coders[components.pcollections[pcoll].coder_id]) != spec
    ]


def _transcode_inputs(components, transform_id: str, producers: dict) -> list[str]:
    transform = components.transforms[transform_id]
    needed = _needed_coder(components, transform)
    assert needed is not None, "called only for transforms with mismatched inputs, which need a coder"
    (urn, parts), coder_id = needed
    if coder_id is None:
        coder_id = f"{transform_id}/input_coder"
        components.coders[coder_id].spec.urn = urn
        components.coders[coder_id].component_coder_ids.extend(parts)
    added = []
    for tag in _mismatched_inputs(components, transform):
        source = transform.inputs[tag]
        transcoded = _pcollection_like(components, f"{transform_id}/transcoded/{tag}", source, coder_id)
        added.append(
            _identity(
                components,
                f"{transform_id}/Transcode/{tag}",
                f"{transform.unique_name}/Transcode/{tag}",
                source,
                transcoded,
                _environment(components, producers.get(source)),
            )
        )
        transform.inputs[tag] = transcoded
    return added


def _mismatched_outputs(components, stream: beam_runner_api_pb2.PTransform) -> list[str]:
    coder_id = beam_runner_api_pb2.TestStreamPayload.FromString(stream.spec.payload).coder_id
    return [
        tag
        for tag, pcoll in stream.outputs.items()
        if not _same_coder(components, components.pcollections[pcoll].coder_id, coder_id)
    ]


def _same_coder(components, a: str, b: str) -> bool:
    """Two coder ids that encode alike: the same spec, their components alike (the Go SDK gives
    a TestStream's events a coder of their own, equal to its output's)."""
    if a == b:
        return True
    x, y = components.coders[a], components.coders[b]
    parts = list(zip(x.component_coder_ids, y.component_coder_ids, strict=False))
    return (
        (x.spec.urn, x.spec.payload) == (y.spec.urn, y.spec.payload)
        and len(parts) == len(x.component_coder_ids) == len(y.component_coder_ids)
        and all(_same_coder(components, i, j) for i, j in parts)
    )


def _transcode_outputs(components, stream_id: str) -> list[str]:
    """The TestStream emits into PCollections of its events' coder; the SDK re-encodes them
    into the outputs the pipeline reads."""
    stream = components.transforms[stream_id]
    coder_id = beam_runner_api_pb2.TestStreamPayload.FromString(stream.spec.payload).coder_id
    environment = next(iter(components.environments), "")
    added = []
    for tag in _mismatched_outputs(components, stream):
        target = stream.outputs[tag]
        emitted = _pcollection_like(components, f"{stream_id}/emitted/{tag}", target, coder_id)
        added.append(
            _identity(
                components,
                f"{stream_id}/Transcode/{tag}",
                f"{stream.unique_name}/Transcode/{tag}",
                emitted,
                target,
                environment,
            )
        )
        stream.outputs[tag] = emitted
    return added


def _pcollection_like(components, pcoll_id: str, like: str, coder_id: str) -> str:
    pcoll = components.pcollections[pcoll_id]
    pcoll.CopyFrom(components.pcollections[like])
    pcoll.unique_name = pcoll_id
    pcoll.coder_id = coder_id
    return pcoll_id


def _identity(components, transform_id: str, name: str, source: str, target: str, environment: str) -> str:
    transform = components.transforms[transform_id]
    transform.unique_name = name
    transform.spec.urn = urns.IDENTITY_DOFN
    transform.environment_id = environment
    transform.inputs["in"] = source
    transform.outputs["out"] = target
    return transform_id


def _environment(components, producer: beam_runner_api_pb2.PTransform | None) -> str:
    """The SDK environment that runs the transcode: the producer's, or any."""
    if producer is not None and producer.environment_id:
        return producer.environment_id
    return next(iter(components.environments), "")
