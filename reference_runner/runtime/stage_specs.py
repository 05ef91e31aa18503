"""A Plan's stages -> what the engine runs them with: the coder-backed functions behind the
engine's plain data (grouping codecs, Flatten conversions, TestStream events, keyed-stage
decoding, side-window needs, the impulse element). Both backends build their runner-side
primitives here, so a GroupByKey or a Flatten behaves the same on each. ``engine_spec`` (with
``place_spec``, its coder-free part) is the one adapter from a PlannedStage to the engine's
StageSpec.
"""

from __future__ import annotations

import dataclasses

from apache_beam.portability.api import beam_runner_api_pb2
from apache_beam.transforms import window as beam_window
from apache_beam.utils import windowed_value
from apache_beam.utils.timestamp import Timestamp

from reference_runner.engine import grouping, manager
from reference_runner.engine.spec import StageKind
from reference_runner.graph.pipeline import test_stream_output
from reference_runner.graph.plan import GroupSpec, Plan, PlannedStage
from reference_runner.runtime import sidewindows
from reference_runner.runtime.keyed_head import KeyedHead
from reference_runner.worker import codecs

#: Flatten conversions by name (PlannedStage.conversion)
CONVERSIONS = {
    "transcode": codecs.Transcoder,
    "keys_to_bytes": codecs.KeysToBytesConversion,
    "keys_from_bytes": codecs.KeysFromBytesConversion,
}


def grouping_of(spec: GroupSpec, codec: codecs.GroupCodec, merge_fn=None) -> grouping.Grouping:
    """The engine's Grouping for a GroupByKey; ``merge_fn``: the SDK's window merging, for a
    custom merging WindowFn (spec.merge_in_sdk)."""
    return grouping.Grouping(
        codec,
        merging=spec.merging,
        merge_fn=merge_fn,
        timestamp_combiner=spec.timestamp_combiner,
        allowed_lateness=spec.allowed_lateness,
        trigger=spec.trigger,
        accumulating=spec.accumulating,
        empty_on_time=spec.empty_on_time,
        empty_final=spec.empty_final,
    )


def group_codec(coders: codecs.Coders, stage: PlannedStage) -> codecs.GroupCodec:
    [main], [out] = stage.inputs, stage.outputs
    return codecs.GroupCodec(coders.windowed(main), coders.windowed(out))


def conversions(coders: codecs.Coders, stage: PlannedStage) -> dict:
    """Flatten inputs whose elements the runner re-encodes (PlannedStage.converted) -> their
    re-encoding (the runner's own KEYS_TO_BYTES / KEYS_FROM_BYTES re-key, as one-input Flattens)."""
    [out] = stage.outputs
    convert = CONVERSIONS[stage.conversion]
    return {pcoll: convert(coders.windowed(pcoll), coders.windowed(out)) for pcoll in stage.converted}


def impulse_element(coders: codecs.Coders, pcoll: str) -> bytes:
    wv = windowed_value.WindowedValue(b"", windowed_value.MIN_TIMESTAMP, (beam_window.GlobalWindow(),))
    return codecs.encode_nested(coders.windowed(pcoll).get_impl(), wv)


def stream_events(plan: Plan, coders: codecs.Coders, stage: PlannedStage) -> list:
    """A TestStream's events as engine data: elements encoded as the output's windowed values
    (global window, no pane), times in micros."""
    transform = plan.graph.by_id[stage.test_stream].proto
    payload = beam_runner_api_pb2.TestStreamPayload.FromString(transform.spec.payload)
    events: list[tuple[str, str | None, list[bytes] | int]] = []
    for event in payload.events:
        kind = event.WhichOneof("event")
        if kind == "element_event":
            pcoll = test_stream_output(transform, event.element_event.tag)
            assert pcoll is not None  # graph/check.py refuses an event tag without an output
            impl = coders.windowed(pcoll).get_impl()
            # the runner re-encodes the events as the output's coder (graph/transcode.py)
            read = coders.event_reader(payload.coder_id, stage.events_nested)
            elements = [
                codecs.encode_nested(
                    impl,
                    windowed_value.WindowedValue(
                        read(e.encoded_element), Timestamp(micros=e.timestamp * 1000), (beam_window.GlobalWindow(),)
                    ),
                )
                for e in event.element_event.elements
            ]
            events.append((manager.ELEMENTS, pcoll, elements))
        elif kind == "watermark_event":
            events.append(
                (
                    manager.WATERMARK,
                    test_stream_output(transform, event.watermark_event.tag),
                    event.watermark_event.new_watermark * 1000,
                )
            )
        else:
            events.append((manager.PROCESSING_TIME, None, event.processing_time_event.advance_duration * 1000))
    return events


def place_spec(stage: PlannedStage) -> manager.StageSpec:
    """The engine's StageSpec of ``stage`` with only its place in the pipeline (kind, inputs,
    outputs, side inputs): all a stage object needs that only moves watermarks (Spark's streaming
    driver, whose stages run in partitions). engine_spec adds the coder-backed parts."""
    return manager.StageSpec(stage.id, stage.kind, list(stage.inputs), list(stage.outputs), stage.side_pcolls)


def engine_spec(
    plan: Plan,
    coders: codecs.Coders,
    stage: PlannedStage,
    keyed: KeyedHead | None,
    merge_fn=None,
    side_mapper: sidewindows.SdkMapper | None = None,
) -> manager.StageSpec:
    """The engine's StageSpec of ``stage``; ``keyed``: its KeyedHead, if it has a keyed head;
    ``side_mapper``: the SDK's window mapping, for a side input of a user's WindowFn in streaming."""
    side_windows = None
    if plan.test_stream_driven and stage.kind == StageKind.SDK and stage.side_inputs:
        # streaming: how the engine finds the side windows a main-input element waits for
        side_windows = sidewindows.side_window_needs(
            plan.components, coders, stage.inputs[0], stage.side_inputs, side_mapper
        )
    return dataclasses.replace(
        place_spec(stage),
        grouping=grouping_of(stage.group, group_codec(coders, stage), merge_fn) if stage.group else None,
        convert=conversions(coders, stage) if stage.kind == StageKind.FLATTEN else {},
        keyed=keyed.spec() if keyed else None,
        events=stream_events(plan, coders, stage) if stage.kind == StageKind.TEST_STREAM else [],
        side_windows=side_windows,
    )


def side_decoders(plan: Plan, coders: codecs.Coders) -> dict:
    """The side inputs the engine keeps per window, pane by pane (engine/sideinputs.py), with
    the decoder of each: those read by pane (SideInput.by_pane); the rest are read whole."""
    sides = {s.pcoll: s.own_panes for stage in plan.stages for s in stage.side_inputs if s.by_pane}
    return {p: sidewindows.pane_decoder(coders, p, own) for p, own in sorted(sides.items())}
