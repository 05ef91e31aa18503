"""clock=wall: processing time is real time. The runner waits for processing-time deadlines
(trigger deadlines, TestStream processing-time advances, the requested delay of a
self-checkpoint) instead of jumping to them; the virtual clock (the default) gives the same
results without waiting. Only lower bounds on elapsed time are asserted: waiting at least as
long as asked is the wall clock's correctness property; how much longer depends on the machine."""

import itertools
import time

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing import test_stream
from apache_beam.transforms import trigger, window
from apache_beam.utils.timestamp import Duration

from conformance.cases.test_sdf import CountProvider  # [0, n), unsplit
from reference_runner import ReferenceRunner
from reference_runner.knobs import Knobs, OptionError

RESULTS: dict = {}
RESUMED: list = []


class _Collect(beam.DoFn):
    def __init__(self, name):
        self.name = name

    def process(self, x, pane=beam.DoFn.PaneInfoParam):
        RESULTS.setdefault(self.name, []).append((x, pane.index, pane.is_last))


def _collect(name):
    return beam.ParDo(_Collect(name))


def _early_panes(p):
    # Repeatedly(AfterProcessingTime(1)): {1, 2} fires once processing time passes 1 s after the
    # first element, {3} likewise; the stream's processing time advances by 1.2 s twice. (Beam's
    # AfterProcessingTime takes whole seconds.)
    stream = (
        test_stream.TestStream()
        .add_elements([window.TimestampedValue(("k", 1), 1), window.TimestampedValue(("k", 2), 2)])
        .advance_processing_time(1.2)
        .add_elements([window.TimestampedValue(("k", 3), 3)])
        .advance_processing_time(1.2)
        .advance_watermark_to_infinity()
    )
    return (
        p
        | stream
        | beam.WindowInto(
            window.GlobalWindows(),
            trigger=trigger.Repeatedly(trigger.AfterProcessingTime(1)),
            accumulation_mode=trigger.AccumulationMode.DISCARDING,
        )
        | beam.CombinePerKey(sum)
    )


# two processing-time panes, then (discarding) the empty final one at the end of the window
_PANES = [(("k", 0), 2, True), (("k", 3), 0, False), (("k", 3), 1, False)]


@pytest.mark.parametrize("clock", ["virtual", "wall"])
def test_after_processing_time_fires_on_either_clock(clock):
    RESULTS.pop(clock, None)
    started = time.monotonic()
    with beam.Pipeline(runner=ReferenceRunner(clock=clock)) as p:
        _ = _early_panes(p) | _collect(clock)
    elapsed = time.monotonic() - started
    assert sorted(RESULTS[clock]) == _PANES
    if clock == "wall":
        assert elapsed >= 2.4  # two processing-time advances of 1.2 s, waited for in real time
        assert RESULTS["wall"] == RESULTS.get("virtual", RESULTS["wall"])


class _Slowly(beam.DoFn):
    """One element per call, then a self-checkpoint asking to resume 0.1 s later."""

    def process(self, n, tracker=beam.DoFn.RestrictionParam(CountProvider())):
        RESUMED.append(("resumed", time.time()))
        position = tracker.current_restriction().start
        if tracker.try_claim(position):
            yield position
            RESUMED.append(("deferred", time.time()))
            tracker.defer_remainder(Duration(micros=100_000))


@pytest.mark.parametrize("clock", ["virtual", "wall"])
def test_a_resume_delay_is_waited_for_on_the_wall_clock(clock):
    RESUMED.clear()
    with beam.Pipeline(runner=ReferenceRunner(clock=clock)) as p:
        _ = p | beam.Create([4]) | beam.ParDo(_Slowly()) | _collect(f"resume-{clock}")
    assert sorted(x for x, _, _ in RESULTS.pop(f"resume-{clock}")) == [0, 1, 2, 3]
    if clock == "wall":
        # every resume came at least the requested 0.1 s after the call that deferred it
        gaps = [b[1] - a[1] for a, b in itertools.pairwise(RESUMED) if (a[0], b[0]) == ("deferred", "resumed")]
        assert len(gaps) >= 3 and all(gap >= 0.1 for gap in gaps), gaps


def test_the_clock_option_and_its_validation():
    options = PipelineOptions(["--reference_clock=wall"])
    RESULTS.pop("option", None)
    with beam.Pipeline(runner=ReferenceRunner(), options=options) as p:
        _ = _early_panes(p) | _collect("option")
    assert sorted(RESULTS["option"]) == _PANES
    with pytest.raises(OptionError, match="clock must be"):
        Knobs.parse({"clock": "sundial"})
