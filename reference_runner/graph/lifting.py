"""Combiner lifting: a CombinePerKey composite -> partial combining before the shuffle.

    KV(K, V) -> combine_per_key_precombine (SDK)       -> KV(K, accumulator)
             -> GroupByKey (runner)                      -> KV(K, iterable of accumulators)
             -> combine_per_key_merge_accumulators (SDK) -> KV(K, accumulator)
             -> combine_per_key_extract_outputs (SDK)    -> the composite's output

Lifting is legal when grouping accumulators gives the same panes as grouping values: the
default trigger (one pane per key and window in batch) and windows the runner knows how to
merge (non-merging WindowFns, or sessions: the precombine combines per unmerged window, the
runner's GroupByKey merges the windows and merge_accumulators combines their accumulators).
Anything else keeps the composite's own subtransforms.

Keys: the model groups by encoded key bytes (1, 1.0 and True are three keys), but the SDK's
precombine keeps its partial accumulators in a Python dict, which merges keys that are equal
in Python. When the key coder makes the two agree (bytes, strings, integers, booleans, and
KVs of those) the keys go through as they are; otherwise (pickled or float keys) the runner
replaces each key by its encoding before the precombine and decodes it after the extract
(KEYS_TO_BYTES / KEYS_FROM_BYTES), so the SDK only ever sees bytes keys. For a Python CombineFn
that re-keying is a ParDo of ours in the SDK (graph/rekey.py), fused with the precombine;
otherwise the runner does it between stages.
"""

from __future__ import annotations

from apache_beam.portability import python_urns
from apache_beam.portability.api import beam_runner_api_pb2

from reference_runner.graph import copy_on_write, python_coders, rekey, urns
from reference_runner.graph.pipeline import reachable


def lift(proto: beam_runner_api_pb2.Pipeline) -> beam_runner_api_pb2.Pipeline:
    """A copy of ``proto`` with every liftable CombinePerKey lifted (the input is not changed)."""
    liftable = [tid for tid, t in proto.components.transforms.items() if _can_lift(proto.components, t)]
    return copy_on_write.edit_each(proto, liftable, _lift_one)


def unlift(proto: beam_runner_api_pb2.Pipeline) -> beam_runner_api_pb2.Pipeline:
    """Combines the SDK lifted itself, outside a CombinePerKey composite (pre_optimize=all leaves
    only the parts: precombine -> GroupByKey -> merge_accumulators -> extract_outputs), become one
    CombinePerKey again, for ``lift`` to lift by the runner's rules: the SDK's precombine keys
    by Python equality, the model by encoded bytes (the input is not changed).

    Inside a CombinePerKey composite the parts need nothing: ``lift`` replaces them."""
    return copy_on_write.edit_each(proto, list(_sdk_lifted_chains(proto)), _collapse)


def _sdk_lifted_chains(proto: beam_runner_api_pb2.Pipeline):
    """(precombine, group, merge, extract) transform ids, each part the only consumer of the
    one before, not already parts of a CombinePerKey composite."""
    transforms = proto.components.transforms
    live = reachable(proto)
    parent = {child: tid for tid in live for child in transforms[tid].subtransforms}
    leaves = [(tid, transforms[tid]) for tid in sorted(live) if not transforms[tid].subtransforms]
    consumers: dict[str, list[str]] = {}
    for tid, t in leaves:
        for pcoll in t.inputs.values():
            consumers.setdefault(pcoll, []).append(tid)
    follow = (urns.GROUP_BY_KEY, urns.COMBINE_MERGE_ACCUMULATORS, urns.COMBINE_EXTRACT_OUTPUTS)
    for tid, t in leaves:
        if t.spec.urn != urns.COMBINE_PRECOMBINE:
            continue
        if tid in parent and transforms[parent[tid]].spec.urn == urns.COMBINE_PER_KEY:
            continue
        chain, current = [tid], t
        for urn in follow:
            outputs = list(current.outputs.values())
            readers = consumers.get(outputs[0], []) if len(outputs) == 1 else []
            if len(readers) != 1 or transforms[readers[0]].spec.urn != urn:
                break
            chain.append(readers[0])
            current = transforms[readers[0]]
        if len(chain) == 4:
            yield tuple(chain)


def _collapse(proto: beam_runner_api_pb2.Pipeline, chain: tuple) -> None:
    """Replace the four parts by one CombinePerKey leaf where the precombine was."""
    transforms = proto.components.transforms
    precombine, *_, extract = (transforms[tid] for tid in chain)
    combine_id = f"{chain[0]}/combine_per_key"
    combine = transforms[combine_id]
    combine.spec.urn = urns.COMBINE_PER_KEY
    combine.spec.payload = precombine.spec.payload  # the CombinePayload of the original combine
    combine.environment_id = precombine.environment_id
    name = precombine.unique_name
    combine.unique_name = name[: -len("/Precombine")] if name.endswith("/Precombine") else f"{name}/Combine"
    [(in_tag, source)] = precombine.inputs.items()
    [(_, result)] = extract.outputs.items()
    combine.inputs[in_tag] = source
    combine.outputs["out"] = result
    for t in transforms.values():
        if chain[0] in t.subtransforms:
            t.subtransforms.append(combine_id)
    if chain[0] in proto.root_transform_ids:
        proto.root_transform_ids.append(combine_id)
    _remove(proto, set(chain))


def _remove(proto: beam_runner_api_pb2.Pipeline, gone: set) -> None:
    """Removes transforms from the pipeline, and with them every composite left without parts
    (an SDK stage that held only the merge and extract of a combine would be a leaf with no URN)."""
    transforms = proto.components.transforms
    while gone:
        emptied = set()
        for tid, t in transforms.items():
            if tid not in gone and any(s in gone for s in t.subtransforms):
                kept = [s for s in t.subtransforms if s not in gone]
                del t.subtransforms[:]
                t.subtransforms.extend(kept)
                if not kept:
                    emptied.add(tid)
        roots = [r for r in proto.root_transform_ids if r not in gone]
        del proto.root_transform_ids[:]
        proto.root_transform_ids.extend(roots)
        for tid in gone:
            del transforms[tid]
        gone = emptied


def _can_lift(components, t: beam_runner_api_pb2.PTransform) -> bool:
    if t.spec.urn != urns.COMBINE_PER_KEY or len(t.inputs) != 1 or len(t.outputs) != 1:
        return False
    [main], [result] = t.inputs.values(), t.outputs.values()
    pcoll = components.pcollections[main]
    # Both ends must be KVs the runner can see into: an SDK may code a combine's output with a
    # coder of its own (the TypeScript SDK's genericobjectjs), and the lifted parts are built
    # from the key and value coders.
    if any(components.coders[components.pcollections[p].coder_id].spec.urn != urns.KV_CODER for p in (main, result)):
        return False
    ws = components.windowing_strategies[pcoll.windowing_strategy_id]
    if ws.trigger.WhichOneof("trigger") != "default":
        return False
    return ws.merge_status != beam_runner_api_pb2.MergeStatus.NEEDS_MERGE or ws.window_fn.urn == urns.SESSION_WINDOWS


# Coders under which two values are == in Python exactly when their encodings are equal.
_EQUALITY_IS_ENCODING = {urns.BYTES_CODER, urns.STRING_UTF8_CODER, urns.VARINT_CODER, urns.BOOL_CODER}


def _equality_is_encoding(components, coder_id: str) -> bool:
    coder = components.coders[coder_id]
    if coder.spec.urn in (urns.KV_CODER, urns.LENGTH_PREFIX_CODER):
        return all(_equality_is_encoding(components, c) for c in coder.component_coder_ids)
    return coder.spec.urn in _EQUALITY_IS_ENCODING


def _lift_one(proto: beam_runner_api_pb2.Pipeline, tid: str) -> None:
    components = proto.components
    combine = components.transforms[tid]
    payload = beam_runner_api_pb2.CombinePayload.FromString(combine.spec.payload)
    [(in_tag, main)] = combine.inputs.items()
    [(out_tag, result)] = combine.outputs.items()
    key_coder, value_coder = components.coders[components.pcollections[main].coder_id].component_coder_ids
    acc = payload.accumulator_coder_id
    in_windowing = components.pcollections[main].windowing_strategy_id
    out_windowing = components.pcollections[result].windowing_strategy_id
    bounded = components.pcollections[main].is_bounded
    parts = []
    as_bytes = not _equality_is_encoding(components, key_coder)
    in_sdk = payload.combine_fn.urn == python_urns.PICKLED_COMBINE_FN
    # pickled keys: strs pass as they are, the rest become bytes, under the same coder
    unless_str = as_bytes and in_sdk and _pickles_primitives(components, key_coder)
    if as_bytes:
        original_key = key_coder
        key_coder = original_key if unless_str else _coder(components, f"{tid}/key_bytes", urns.BYTES_CODER, [])
        output_coder = components.coders[components.pcollections[result].coder_id].component_coder_ids[1]
        keyed_in = _coder(components, f"{tid}/bytes_keyed_input", urns.KV_CODER, [key_coder, value_coder])
        keyed_out = _coder(components, f"{tid}/bytes_keyed_output", urns.KV_CODER, [key_coder, output_coder])
        bytes_in = _pcollection(components, f"{tid}/bytes_keyed_input", keyed_in, in_windowing, bounded)
        bytes_out = _pcollection(components, f"{tid}/bytes_keyed_output", keyed_out, out_windowing, bounded)
        to_bytes = (
            _rekey(components, original_key, "KeysToBytesUnlessStr" if unless_str else "KeysToBytes")
            if in_sdk
            else urns.KEYS_TO_BYTES
        )
        parts.append(("KeysToBytes", to_bytes, main, bytes_in))
        main, final_result = bytes_in, result
        result = bytes_out

    keyed_acc = _coder(components, f"{tid}/keyed_accumulator", urns.KV_CODER, [key_coder, acc])
    accs = _coder(components, f"{tid}/accumulators", urns.ITERABLE_CODER, [acc])
    grouped_accs = _coder(components, f"{tid}/grouped_accumulators", urns.KV_CODER, [key_coder, accs])
    precombined = _pcollection(components, f"{tid}/precombined", keyed_acc, in_windowing, bounded)
    grouped = _pcollection(components, f"{tid}/grouped", grouped_accs, out_windowing, bounded)
    merged = _pcollection(components, f"{tid}/merged", keyed_acc, out_windowing, bounded)

    parts += [
        ("Precombine", urns.COMBINE_PRECOMBINE, main, precombined),
        ("Group", urns.GROUP_BY_KEY, precombined, grouped),
        ("MergeAccumulators", urns.COMBINE_MERGE_ACCUMULATORS, grouped, merged),
        ("ExtractOutputs", urns.COMBINE_EXTRACT_OUTPUTS, merged, result),
    ]
    if as_bytes:
        from_bytes = (
            _rekey(components, original_key, "KeysFromBytesUnlessStr" if unless_str else "KeysFromBytes")
            if in_sdk
            else urns.KEYS_FROM_BYTES
        )
        parts.append(("KeysFromBytes", from_bytes, result, final_result))
    del combine.subtransforms[:]
    for name, urn, source, target in parts:
        part_id = f"{tid}/lifted/{name}"
        part = components.transforms[part_id]
        part.unique_name = f"{combine.unique_name}/{name}"
        if isinstance(urn, beam_runner_api_pb2.ParDoPayload):  # our own DoFn, in the SDK
            part.spec.urn, part.spec.payload = urns.PAR_DO, urn.SerializeToString()
            part.environment_id = combine.environment_id
        else:
            part.spec.urn = urn
            if urn in urns.SDK_TRANSFORMS:  # the SDK parts run the CombineFn in the combine's environment
                part.spec.payload = combine.spec.payload
                part.environment_id = combine.environment_id
        part.inputs[in_tag] = source
        part.outputs[out_tag] = target
        combine.subtransforms.append(part_id)


def _pickles_primitives(components, key_coder_id: str) -> bool:
    return python_coders.class_name(components.coders[key_coder_id]) in python_coders.PRIMITIVES


def _rekey(components, key_coder_id: str, which: str) -> beam_runner_api_pb2.ParDoPayload:
    """A ParDo payload running graph/rekey.py's DoFn for this key coder."""
    fn = getattr(rekey, which)(key_coder_id, rekey.coder_closure(components, key_coder_id))
    return beam_runner_api_pb2.ParDoPayload(
        do_fn=beam_runner_api_pb2.FunctionSpec(urn=python_urns.PICKLED_DOFN_INFO, payload=rekey.pickled(fn))
    )


def _coder(components, coder_id: str, urn: str, parts: list[str]) -> str:
    if coder_id in components.coders:
        return coder_id
    coder = components.coders[coder_id]
    coder.spec.urn = urn
    coder.component_coder_ids.extend(parts)
    return coder_id


def _pcollection(components, pcoll_id: str, coder_id: str, windowing_id: str, bounded) -> str:
    pcoll = components.pcollections[pcoll_id]
    pcoll.unique_name = pcoll_id
    pcoll.coder_id = coder_id
    pcoll.windowing_strategy_id = windowing_id
    pcoll.is_bounded = bounded
    return pcoll_id
