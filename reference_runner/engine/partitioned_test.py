"""A stage run elsewhere in parts (engine/stages.py PartitionedStage), as Spark's streaming driver
keeps one per GroupByKey or SDK stage, and the cross-stage rules it shares with the manager."""

from dataclasses import dataclass

from reference_runner.engine import watermarks
from reference_runner.engine.spec import StageKind, StageSpec
from reference_runner.engine.stages import ImpulseStage, PartitionedStage
from reference_runner.engine.windows import MIN_TIMESTAMP, PLUS_INFINITY


@dataclass
class _Report:
    watermark: int
    active: bool
    deadline: int | None = None
    ready_at: int | None = None
    counts: tuple = (0, 0, 0, 0, 0)
    held: int = 0


def _stage(side_inputs=(), test_stream_driven=True) -> PartitionedStage:
    return PartitionedStage(StageSpec("g", StageKind.GROUP, ["a"], ["b"], list(side_inputs)), test_stream_driven)


def test_output_watermark_is_the_least_the_parts_keeping_state_reported():
    stage = _stage()
    stage.accept("a", ["handle"], 0)
    stage.advance(10, 0)
    assert (stage.input_watermark, stage.output_watermark) == (10, MIN_TIMESTAMP)  # no part saw it yet
    stage.ran([_Report(7, True, deadline=50), _Report(10, False, deadline=40, ready_at=60)])
    stage.advance(10, 0)
    assert stage.output_watermark == 7
    assert list(stage.deadlines()) == [40, 60] and stage.active
    stage.advance(20, 0)  # not run again: the part keeping state still holds it
    assert (stage.input_watermark, stage.output_watermark) == (20, 7)
    stage.ran([_Report(20, False)])
    stage.advance(20, 0)
    assert stage.output_watermark == 20
    stage.advance(30, 0)  # no part keeps state: it follows its input
    assert stage.output_watermark == 30


def test_a_run_with_no_reports_holds_nothing_and_keeps_the_last_counts():
    stage = _stage()
    stage.ran([_Report(5, True, counts=(1, 2, 0, 0, 3))])
    stage.ran([])
    stage.advance(40, 0)
    assert stage.output_watermark == 40 and stage.counts() == (1, 2, 0, 0, 3)


def test_stuck_description_is_the_managers_for_parts_too():
    impulse = ImpulseStage(StageSpec("i", StageKind.IMPULSE, [], ["a", "s"]))
    stage = _stage(side_inputs=["s"])
    producer = {"a": impulse, "s": impulse}
    stage.ran([_Report(MIN_TIMESTAMP, True, counts=(2, 0, 0, 0, 1), held=3)])
    assert not watermarks.finished([impulse, stage])
    described = watermarks.describe_stuck([impulse, stage], producer)
    assert "i (impulse): output watermark -inf" in described
    assert "g (group): output watermark -inf, pending 2, deferred 0, in flight 0, buffered" in described
    assert "waiting for side inputs 3 elements held for windows of ['s']" in described
    batch = _stage(side_inputs=["s"], test_stream_driven=False)
    assert "waiting for side inputs ['s']" in watermarks.describe_stuck([batch], producer)
    assert not watermarks.side_inputs_finished(batch, producer)
    impulse.started = True
    impulse.advance(PLUS_INFINITY, 0)
    assert watermarks.side_inputs_finished(batch, producer)
    assert watermarks.upstream(batch, producer) == PLUS_INFINITY
