"""Runner transforms whose inputs need another coder: the runner re-encodes them where it can,
the pipeline's SDK where it cannot.

Beam pipelines ask for re-encodings:

- a Flatten whose inputs have other coders than its output (a Flatten of ints and strs, the
  tagged inputs of CoGroupByKey, Java's FlattenTest of NullableCoder(BigEndianLongCoder) and
  VarLongCoder into NullableCoder(VarLongCoder));
- a GroupByKey whose input key or value coder differs from its output's (Python types a
  GroupByKey's output from the input's type hint: a Flatten of KV(str, int) and KV(str, str)
  feeds KV(str, any) into a GroupByKey that outputs KV(any, iterable of any));
- a Reshuffle the runner runs itself (graph/reshuffle.py) whose output coder differs;
- a TestStream whose events are encoded with another coder than its outputs' (Go gives its
  outputs a length prefix around the events' coder).

Where the runner reads both coders, or they differ by a length prefix or not at all as it reads
them (graph/recode.py owns that rule), the runner re-encodes: a Flatten or Reshuffle converts
the inputs its Plan lists (PlannedStage.converted), a GroupByKey reads its input's key and values
and writes its output's, a TestStream reads its events and writes its outputs' coder
(executor/stage_specs.py, shared by both backends). Elsewhere (opaque coders of the SDK's own on
both sides) the SDK transcodes: the input gets a transform of the SDK's whose output
PCollection has the coder the runner transform needs, which fuses into the stage producing the
input. Beam's Python SDK gets its identity DoFn (``beam:dofn:identity:0.1``, what its own
pre-optimization inserts before Flatten inputs); any other SDK a one-input Flatten run inside
its bundle (urns.SDK_FLATTEN: the Go and Java harnesses run Flattens themselves, as Prism asks of
them). A pipeline with no environment to ask is refused by graph/check.py, naming the coders.
"""

from __future__ import annotations

from apache_beam.portability.api import beam_runner_api_pb2

from reference_runner.graph import copy_on_write, recode, sdks, urns
from reference_runner.graph.pipeline import reachable

_RUNNER_TRANSFORMS = (urns.FLATTEN, urns.GROUP_BY_KEY, urns.RESHUFFLE)


def transcode(proto: beam_runner_api_pb2.Pipeline) -> beam_runner_api_pb2.Pipeline:
    """A copy of ``proto`` whose runner transforms read inputs the runner can re-encode itself
    (the input is not changed; returned as is when nothing needs the SDK)."""
    components = proto.components
    leaves = [
        (tid, components.transforms[tid])
        for tid in sorted(reachable(proto))
        if not components.transforms[tid].subtransforms
    ]
    mismatched = [tid for tid, t in leaves if t.spec.urn in _RUNNER_TRANSFORMS and sdk_inputs(components, t)]
    streams = [tid for tid, t in leaves if t.spec.urn == urns.TEST_STREAM and sdk_outputs(components, t)]
    if not mismatched and not streams:
        return proto
    out = copy_on_write.copy(proto)
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


def sdk_inputs(components, transform: beam_runner_api_pb2.PTransform) -> dict[str, str]:
    """The inputs (tag -> coder id) of a runner transform that the runner cannot re-encode
    itself to the coder the transform needs (``needed_coder``)."""
    needed = _needed_form(components, transform)
    if needed is None:
        return {}
    coders = {tag: components.pcollections[pcoll].coder_id for tag, pcoll in transform.inputs.items()}
    forms = {tag: recode.form(components, c) for tag, c in coders.items()}
    # a GroupByKey reads its input's key and value itself: the input must be a KV, not wrapped
    kv_only = transform.spec.urn == urns.GROUP_BY_KEY
    return {
        tag: c
        for tag, c in coders.items()
        if not recode.recodes(forms[tag], needed) or (kv_only and forms[tag][0] != urns.KV_CODER)
    }


def sdk_outputs(components, stream: beam_runner_api_pb2.PTransform) -> dict[str, str]:
    """The outputs (tag -> coder id) of a TestStream whose coder the runner cannot re-encode its
    events to."""
    events = events_coder(stream)
    coders = {tag: components.pcollections[pcoll].coder_id for tag, pcoll in stream.outputs.items()}
    return {tag: c for tag, c in coders.items() if not recode.runner_recodes(components, events, c)}


def events_coder(stream: beam_runner_api_pb2.PTransform) -> str:
    return beam_runner_api_pb2.TestStreamPayload.FromString(stream.spec.payload).coder_id


def needed_coder(components, transform: beam_runner_api_pb2.PTransform) -> str:
    """The coder the inputs of a runner transform must have, as an error names it."""
    spec = _needed_spec(components, transform)
    if spec is None:
        return "(none)"
    urn, parts = spec
    return f"{urn}({', '.join(recode.describe(components, p) for p in parts)})" if parts else urn


# a coder as the runner compares it: (urn, component coder ids)
_CoderSpec = tuple[str, tuple[str, ...]]


def _needed_spec(components, transform: beam_runner_api_pb2.PTransform) -> _CoderSpec | None:
    """The coder every input of this runner transform must have, as (urn, component ids)
    (None: nothing to require)."""
    if len(transform.outputs) != 1:
        return None
    [output] = transform.outputs.values()
    coder = components.coders[components.pcollections[output].coder_id]
    if transform.spec.urn != urns.GROUP_BY_KEY:
        return _spec(coder)
    # KV(K, iterable of V) out: KV(K, V) in
    if coder.spec.urn != urns.KV_CODER:
        return None
    key, grouped = coder.component_coder_ids
    if components.coders[grouped].spec.urn != urns.ITERABLE_CODER:
        return None
    [value] = components.coders[grouped].component_coder_ids
    return urns.KV_CODER, (key, value)


def _needed_form(components, transform: beam_runner_api_pb2.PTransform) -> recode.Form | None:
    spec = _needed_spec(components, transform)
    if spec is None:
        return None
    if transform.spec.urn != urns.GROUP_BY_KEY:
        [output] = transform.outputs.values()
        return recode.form(components, components.pcollections[output].coder_id)
    _, (key, value) = spec
    return (urns.KV_CODER, recode.form(components, key), recode.form(components, value))


def _spec(coder: beam_runner_api_pb2.Coder) -> _CoderSpec:
    return coder.spec.urn, tuple(coder.component_coder_ids)


def _transcode_inputs(components, transform_id: str, producers: dict) -> list[str]:
    transform = components.transforms[transform_id]
    spec = _needed_spec(components, transform)
    assert spec is not None, "called only for transforms with inputs the SDK re-encodes, which need a coder"
    if transform.spec.urn != urns.GROUP_BY_KEY:  # the output's coder itself (opaque ones are told by id only)
        [output] = transform.outputs.values()
        coder_id: str | None = components.pcollections[output].coder_id
    else:  # a KV coder of the pipeline's over the output's key and value coders, if it has one
        coder_id = next((cid for cid, c in components.coders.items() if _spec(c) == spec), None)
    if coder_id is None:
        coder_id = f"{transform_id}/input_coder"
        components.coders[coder_id].spec.urn = spec[0]
        components.coders[coder_id].component_coder_ids.extend(spec[1])
    added = []
    for tag in sdk_inputs(components, transform):
        source = transform.inputs[tag]
        transcoded = _pcollection_like(components, f"{transform_id}/transcoded/{tag}", source, coder_id)
        producer = producers.get(source)
        environment = transform.environment_id or (producer.environment_id if producer is not None else "")
        added.append(
            _sdk_transcode(
                components,
                f"{transform_id}/Transcode/{tag}",
                f"{transform.unique_name}/Transcode/{tag}",
                source,
                transcoded,
                environment or next(iter(components.environments), ""),
            )
        )
        transform.inputs[tag] = transcoded
    return added


def _transcode_outputs(components, stream_id: str) -> list[str]:
    """The TestStream emits into PCollections of its events' coder; the SDK re-encodes them
    into the outputs the pipeline reads."""
    stream = components.transforms[stream_id]
    coder_id = events_coder(stream)
    environment = stream.environment_id or next(iter(components.environments), "")
    added = []
    for tag in sdk_outputs(components, stream):
        target = stream.outputs[tag]
        emitted = _pcollection_like(components, f"{stream_id}/emitted/{tag}", target, coder_id)
        added.append(
            _sdk_transcode(
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


def _sdk_transcode(components, transform_id: str, name: str, source: str, target: str, environment: str) -> str:
    """A transform of the SDK of ``environment`` that passes ``source``'s elements on, re-encoded
    as ``target``'s (an environment-less one is refused by graph/check.py)."""
    transform = components.transforms[transform_id]
    transform.unique_name = name
    python = sdks.sdk_of(components, environment) == sdks.PYTHON
    transform.spec.urn = urns.IDENTITY_DOFN if python else urns.SDK_FLATTEN
    transform.environment_id = environment
    transform.inputs["in"] = source
    transform.outputs["out"] = target
    return transform_id
