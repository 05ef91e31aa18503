"""TestStream itself: scripted unbounded input, the way Beam's streaming ValidatesRunner tests drive
a runner (category UsesTestStream).

A TestStream's events apply in order: elements arrive with their timestamps, a watermark advance
lets every window whose end it passes fire, processing-time advances move the runner's clock,
and the output is unbounded. A runner that refuses TestStream (its job fails naming
beam:transform:teststream:v1) cannot judge any case built on one: those cases count here, and in
their own rows as not judged (capabilities.CROSS_CUTTING).
"""

import apache_beam as beam
from apache_beam.transforms import window

from conformance.api import ON_TIME_ONLY, TestStream, W, capability, check, el, sorted_groups


def _tv(value, seconds):
    return window.TimestampedValue(value, seconds)


@capability("teststream")
def test_elements_arrive_with_their_timestamps(runner):
    stream = (
        TestStream()
        .add_elements([_tv("a", 1), _tv("b", 2)])
        .add_elements([_tv("c", 30)])
        .advance_watermark_to_infinity()
    )
    p = runner.pipeline()
    out = p | stream | beam.Map(lambda x: x.upper())
    check(out, [el("A", 1), el("B", 2), el("C", 30)])
    runner.run(p)


@capability("teststream")
def test_watermark_advance_fires_the_windows_it_passes_before_later_elements(runner):
    """Elements of [0,10), then a watermark advance to 10 (past the window's max timestamp 9.999):
    that window fires its one on-time pane with just them; the element at 15, added after the
    advance, goes to [10,20), which fires when the stream's watermark reaches infinity."""
    stream = (
        TestStream()
        .advance_watermark_to(0)
        .add_elements([_tv(("k", 1), 1), _tv(("k", 2), 2)])
        .advance_watermark_to(10)
        .add_elements([_tv(("k", 15), 15)])
        .advance_watermark_to_infinity()
    )
    p = runner.pipeline()
    out = p | stream | beam.WindowInto(window.FixedWindows(10)) | beam.GroupByKey() | sorted_groups()
    check(out, [el(("k", [1, 2]), 9.999, W(0, 10), ON_TIME_ONLY), el(("k", [15]), 19.999, W(10, 20), ON_TIME_ONLY)])
    runner.run(p)


@capability("teststream")
def test_several_test_streams_in_one_pipeline_are_flattened(runner):
    left = TestStream().add_elements([_tv("l1", 1)]).advance_watermark_to_infinity()
    right = TestStream().add_elements([_tv("r1", 2), _tv("r2", 3)]).advance_watermark_to_infinity()
    p = runner.pipeline()
    out = (p | "Left" >> left, p | "Right" >> right) | beam.Flatten()
    check(out, [el("l1", 1), el("r1", 2), el("r2", 3)])
    runner.run(p)
