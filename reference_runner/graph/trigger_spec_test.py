import pickle

import apache_beam as beam
from apache_beam.portability.api import beam_runner_api_pb2
from apache_beam.transforms import trigger, window

from reference_runner.engine import triggers
from reference_runner.graph import front_end, plan, trigger_spec


def _proto(t: trigger.TriggerFn):
    return t.to_runner_api(None)


def test_a_nested_trigger_translates_once_and_pickles():
    t = trigger_spec.from_proto(
        _proto(
            trigger.AfterWatermark(
                early=trigger.AfterProcessingTime(5),
                late=trigger.OrFinally(trigger.AfterCount(2), trigger.AfterAll(trigger.AfterCount(1))),
            )
        )
    )
    assert t == triggers.AfterWatermark(
        triggers.AfterProcessingTime((("delay", 5_000_000),)),
        triggers.OrFinally(triggers.AfterCount(2), triggers.AfterAll((triggers.AfterCount(1),))),
    )
    assert pickle.loads(pickle.dumps(t)) == t


def test_a_translated_trigger_waits_for_processing_time_where_a_sub_trigger_does():
    # The engine owns the rule (engine/triggers.py); a proto is asked through its translation.
    for t, waits in [
        (trigger.AfterWatermark(early=trigger.AfterProcessingTime(5)), True),
        (trigger.Repeatedly(trigger.AfterAny(trigger.AfterCount(3), trigger.AfterProcessingTime(1))), True),
        (trigger.AfterWatermark(late=trigger.AfterCount(1)), False),
        (trigger.DefaultTrigger(), False),
    ]:
        assert triggers.waits_for_processing_time(trigger_spec.from_proto(_proto(t))) is waits
    synchronized = beam_runner_api_pb2.Trigger(
        after_synchronized_processing_time=beam_runner_api_pb2.Trigger.AfterSynchronizedProcessingTime()
    )
    assert triggers.waits_for_processing_time(trigger_spec.from_proto(synchronized))


def test_the_plan_keeps_the_engine_trigger_and_pickles():
    p = beam.Pipeline()
    _ = (
        p
        | beam.Create([("k", 1)])
        | beam.WindowInto(
            window.FixedWindows(10),
            trigger=trigger.Repeatedly(trigger.AfterCount(2)),
            accumulation_mode=trigger.AccumulationMode.DISCARDING,
        )
        | beam.GroupByKey()
    )
    planned = plan.build_plan(p.to_runner_api(), front_end.REFERENCE)
    [group] = [s for s in planned.stages if s.group is not None]
    assert group.group is not None and group.group.trigger == triggers.Repeatedly(triggers.AfterCount(2))
    assert pickle.loads(pickle.dumps(group)).group == group.group
