"""A metric's step reads the same whether a runner reports the transform's full name or its id in the
pipeline proto (the Fn API's PTRANSFORM label), and a step a runner left out fails a case with a
diff, not a TypeError."""

import apache_beam as beam
import pytest
from apache_beam.metrics.execution import MetricKey, MetricResult
from apache_beam.metrics.metricbase import MetricName

from conformance.authoring.case_runner import RunResult, _transform_names
from conformance.cases.test_metrics import NS, per_step


def _counter(step, name, value):
    return MetricResult(MetricKey(step, MetricName(NS, name)), committed=value, attempted=value)


def _pipeline():
    p = beam.Pipeline()
    _ = p | beam.Create([1]) | "Outer/MyStep1" >> beam.Map(lambda x: x) | "MyStep2" >> beam.Map(lambda x: x)
    return p


def test_transform_names_map_proto_ids_to_full_names():
    names = _transform_names(_pipeline().to_runner_api())
    assert "Outer/MyStep1" in names.values() and "MyStep2" in names.values()
    # the ids are not the names: matching a reported id needs the map
    assert {tid for tid, name in names.items() if name in ("Outer/MyStep1", "MyStep2")}.isdisjoint(names.values())


def test_a_step_reported_by_proto_id_or_by_full_name_is_the_same_step():
    names = _transform_names(_pipeline().to_runner_api())
    by_id = {name: tid for tid, name in names.items()}
    metrics = {"counters": [_counter(by_id["Outer/MyStep1"], "count", 3), _counter("MyStep2", "count", 6)]}
    result = RunResult("DONE", metrics, names)
    assert per_step(result, "counters", "count", "MyStep1") == 3
    assert per_step(result, "counters", "count", "MyStep2") == 6


def test_a_step_the_runner_left_out_matches_nothing_and_says_so():
    metrics = {"counters": [_counter(None, "count", 3), _counter("Elsewhere", "count", 6)]}
    with pytest.raises(AssertionError, match=r"at step 'MyStep1'; reported: \[\('Elsewhere'.*\('None'"):
        per_step(RunResult("DONE", metrics, {}), "counters", "count", "MyStep1")
