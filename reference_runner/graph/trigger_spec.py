"""Runner API Trigger protos -> the engine's trigger data (engine/triggers.py).

The one translation: the Plan runs it once per GroupByKey (graph/plan.py, GroupSpec.trigger) and
both backends build their trigger state machines from what it gives. The other functions here
read the proto itself, for the front end's checks before there is a Plan.
"""

from __future__ import annotations

from apache_beam.portability.api import beam_runner_api_pb2

from reference_runner.engine import triggers


class UnknownTrigger(ValueError):
    pass


def from_proto(proto: beam_runner_api_pb2.Trigger) -> triggers.Trigger:
    kind = proto.WhichOneof("trigger")
    if kind == "default":
        return triggers.Default()
    if kind == "never":
        return triggers.Never()
    if kind == "always":
        return triggers.Always()
    if kind == "element_count":
        return triggers.AfterCount(proto.element_count.element_count)
    if kind == "after_processing_time":
        transforms = proto.after_processing_time.timestamp_transforms
        return triggers.AfterProcessingTime(tuple(_transform(t) for t in transforms))
    if kind == "after_synchronized_processing_time":
        return triggers.AfterSynchronizedProcessingTime()
    if kind == "after_end_of_window":
        p = proto.after_end_of_window
        return triggers.AfterWatermark(
            from_proto(p.early_firings) if p.HasField("early_firings") else None,
            from_proto(p.late_firings) if p.HasField("late_firings") else None,
        )
    if kind == "repeat":
        return triggers.Repeatedly(from_proto(proto.repeat.subtrigger))
    if kind in ("after_each", "after_any", "after_all"):
        subs = tuple(from_proto(t) for t in getattr(proto, kind).subtriggers)
        return {"after_each": triggers.AfterEach, "after_any": triggers.AfterAny, "after_all": triggers.AfterAll}[kind](
            subs
        )
    if kind == "or_finally":
        return triggers.OrFinally(from_proto(proto.or_finally.main), from_proto(getattr(proto.or_finally, "finally")))
    raise UnknownTrigger(f"trigger {kind or '(none)'}")


def fires_panes_in_batch(proto: beam_runner_api_pb2.Trigger) -> bool:
    """Must a GroupByKey run this trigger even on bounded input? Not the default trigger, nor
    Always (Reshuffle's): with all input there before the watermark passes any window's end,
    both fire exactly one pane per key and window, at its end."""
    return proto.WhichOneof("trigger") not in ("default", "always")


def problems(proto: beam_runner_api_pb2.Trigger) -> list[str]:
    """What the engine cannot run in this trigger (an unknown kind), by name."""
    try:
        from_proto(proto)
    except UnknownTrigger as e:
        return [str(e)]
    return []


def _transform(t: beam_runner_api_pb2.TimestampTransform) -> tuple:
    if t.WhichOneof("timestamp_transform") == "delay":
        return ("delay", t.delay.delay_millis * 1000)
    return ("align", t.align_to.period * 1000, t.align_to.offset * 1000)
