"""The part of a pipeline's Components that some transforms need: their PCollections, those
PCollections' windowing strategies, every coder any of them names (transitively) and their
environments.

A stage's descriptor, and what a Spark task gets of the pipeline, carry this subset instead of
the whole pipeline's Components: otherwise every stage of a pipeline of K branches carries all
K branches, and the work per stage (building, shipping, parsing, digesting it) grows with the
pipeline.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from apache_beam.portability.api import beam_runner_api_pb2

from reference_runner.graph import urns

_PAYLOADS: dict[str, Any] = {
    **{urn: beam_runner_api_pb2.ParDoPayload for urn in (*urns.PARDO_LIKE, urns.SDF_TRUNCATE_SIZED)},
    **{urn: beam_runner_api_pb2.CombinePayload for urn in urns.COMBINE_TRANSFORMS},
    urns.TEST_STREAM: beam_runner_api_pb2.TestStreamPayload,
    urns.WINDOW_INTO: beam_runner_api_pb2.WindowIntoPayload,
    urns.ASSIGN_WINDOWS: beam_runner_api_pb2.WindowIntoPayload,
}
# payloads known to name no coder (or none at all)
_NO_CODERS = {
    urns.IMPULSE,
    urns.GROUP_BY_KEY,
    urns.FLATTEN,
    urns.RESHUFFLE,
    urns.MAP_WINDOWS,
    urns.MERGE_WINDOWS,
    urns.KEYS_TO_BYTES,
    urns.KEYS_FROM_BYTES,
}


def needed(
    components: beam_runner_api_pb2.Components,
    transforms: Mapping[str, beam_runner_api_pb2.PTransform],
    pcollections: Iterable[str] = (),
) -> beam_runner_api_pb2.Components:
    """``transforms`` (kept as given), the ``pcollections`` and those the transforms read or
    write, and everything these name. A payload this module cannot read keeps every coder and
    environment: more than needed, never less."""
    out = beam_runner_api_pb2.Components()
    coder_ids: list[str] = []
    environment_ids: list[str] = []
    everything = False
    wanted = list(pcollections)
    for transform_id, transform in transforms.items():
        out.transforms[transform_id].CopyFrom(transform)
        wanted += transform.inputs.values()
        wanted += transform.outputs.values()
        environment_ids.append(transform.environment_id)
        named = _payload_coders(transform.spec)
        if named is None:
            everything = True
        else:
            coder_ids += named
    for pcoll_id in wanted:
        pcoll = components.pcollections.get(pcoll_id)
        if pcoll is None or pcoll_id in out.pcollections:
            continue
        out.pcollections[pcoll_id].CopyFrom(pcoll)
        coder_ids.append(pcoll.coder_id)
        strategy = components.windowing_strategies.get(pcoll.windowing_strategy_id)
        if strategy is not None and pcoll.windowing_strategy_id not in out.windowing_strategies:
            out.windowing_strategies[pcoll.windowing_strategy_id].CopyFrom(strategy)
            coder_ids.append(strategy.window_coder_id)
            environment_ids.append(strategy.environment_id)
    if everything:
        coder_ids, environment_ids = list(components.coders), list(components.environments)
    while coder_ids:
        coder_id = coder_ids.pop()
        coder = components.coders.get(coder_id)
        if coder is None or coder_id in out.coders:
            continue
        out.coders[coder_id].CopyFrom(coder)
        coder_ids += coder.component_coder_ids
    for environment_id in environment_ids:
        environment = components.environments.get(environment_id)
        if environment is not None:
            out.environments[environment_id].CopyFrom(environment)
    return out


def _payload_coders(spec: beam_runner_api_pb2.FunctionSpec) -> list[str] | None:
    """The coder ids a transform's payload names; None when its payload is not one we read."""
    if spec.urn in _NO_CODERS or not spec.payload:
        return []
    payload_type = _PAYLOADS.get(spec.urn)
    if payload_type is None:
        return None
    found: list[str] = []
    _coder_ids(payload_type.FromString(spec.payload), found)
    return found


def _coder_ids(message, found: list[str]) -> None:
    """Every ``*coder_id`` and ``*coder_ids`` field in ``message``, at any depth."""
    for field, value in message.ListFields():
        if field.type == field.TYPE_MESSAGE:
            if field.message_type.GetOptions().map_entry:
                values = value.values()
                if field.message_type.fields_by_name["value"].type == field.TYPE_MESSAGE:
                    for item in values:
                        _coder_ids(item, found)
            elif _repeated(field):
                for item in value:
                    _coder_ids(item, found)
            else:
                _coder_ids(value, found)
        elif field.type == field.TYPE_STRING and field.name.endswith("coder_id"):
            found.append(value)
        elif field.type == field.TYPE_STRING and field.name.endswith("coder_ids"):
            found += value


def _repeated(field) -> bool:
    """Is the field repeated? (``label`` is deprecated in newer protobuf, ``is_repeated`` missing in older.)"""
    is_repeated = getattr(field, "is_repeated", None)
    if is_repeated is not None:
        return is_repeated() if callable(is_repeated) else bool(is_repeated)
    return field.label == field.LABEL_REPEATED
