"""An unbounded splittable DoFn that checkpoints itself and reports its watermark: the runner
resumes it only when the rest of the pipeline has caught up, and holds the stage's output
watermark at what the watermark estimator promised, so windows downstream fire (and their
state goes) while the source is still producing."""

import apache_beam as beam
from apache_beam.io.restriction_trackers import OffsetRange, OffsetRestrictionTracker
from apache_beam.io.watermark_estimators import ManualWatermarkEstimator
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms import window
from apache_beam.utils.timestamp import Timestamp

from reference_runner import ReferenceRunner

EVENTS: list = []


class _Record(beam.DoFn):
    def process(self, kv, w=beam.DoFn.WindowParam):
        EVENTS.append(("fired", w.start.micros // 1_000_000))
        yield kv[1]


class _Offsets(beam.transforms.core.RestrictionProvider):
    def initial_restriction(self, element):
        return OffsetRange(0, element["count"] if isinstance(element, dict) else element)

    def create_tracker(self, restriction):
        return OffsetRestrictionTracker(restriction)

    def restriction_size(self, element, restriction):
        return restriction.size()


@beam.DoFn.unbounded_per_element()
class _Source(beam.DoFn):
    """Element i at i ms, ``chunk`` elements per self-checkpoint, the watermark following."""

    def process(
        self,
        element,
        tracker=beam.DoFn.RestrictionParam(_Offsets()),
        estimator=beam.DoFn.WatermarkEstimatorParam(ManualWatermarkEstimator.default_provider()),
    ):
        EVENTS.append(("chunk", None))
        position = tracker.current_restriction().start
        stop = min(tracker.current_restriction().stop, position + element["chunk"])
        while position < stop and tracker.try_claim(position):
            yield window.TimestampedValue(("k", 1), Timestamp(micros=position * 1000))
            position += 1
        estimator.set_watermark(Timestamp(micros=position * 1000))
        if position < tracker.current_restriction().stop:
            tracker.defer_remainder()


def test_windows_fire_while_the_source_is_still_producing():
    EVENTS.clear()
    with beam.Pipeline(runner=ReferenceRunner()) as p:
        counts = (
            p
            | beam.Create([{"count": 5000, "chunk": 1000}])
            | beam.ParDo(_Source())
            | beam.WindowInto(window.FixedWindows(1))
            | beam.CombinePerKey(sum)
            | beam.ParDo(_Record())
        )
        assert_that(counts, equal_to([1000] * 5))
    chunks = [i for i, (kind, _) in enumerate(EVENTS) if kind == "chunk"]
    fired = [i for i, (kind, _) in enumerate(EVENTS) if kind == "fired"]
    assert len(chunks) >= 5 and len(fired) == 5
    # Window [0, 1) is complete once the estimator reports 1 s: it fires before the last chunk.
    assert fired[0] < chunks[-1], f"every window waited for the whole stream: {EVENTS}"


def test_a_residual_without_a_watermark_holds_the_stage_until_done():
    # No watermark estimator: the SDK reports no output watermark for the residual, so
    # downstream windows wait for the whole input (the batch behaviour) and results are the same.
    class Countdown(beam.DoFn):
        def process(self, n, tracker=beam.DoFn.RestrictionParam(_Offsets())):
            position = tracker.current_restriction().start
            if tracker.try_claim(position):
                yield window.TimestampedValue(("k", 1), position)
                tracker.defer_remainder()

    with beam.Pipeline(runner=ReferenceRunner()) as p:
        out = (
            p
            | beam.Create([6])
            | beam.ParDo(Countdown())
            | beam.WindowInto(window.FixedWindows(3))
            | beam.CombinePerKey(sum)
        )
        assert_that(out, equal_to([("k", 3), ("k", 3)]))
