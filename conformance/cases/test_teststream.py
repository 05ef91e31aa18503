"""TestStream itself: scripted unbounded input, the way Beam's streaming ValidatesRunner tests drive
a runner (category UsesTestStream).

A TestStream's events apply in order: elements arrive with their timestamps, a watermark advance
lets every window whose end it passes fire, processing-time advances move the runner's clock,
and the output is unbounded. A runner that refuses TestStream (its job fails naming
beam:transform:teststream:v1) cannot judge any case built on one: those cases count here, and in
their own rows as not judged (capabilities.CROSS_CUTTING).

Every TestStream of the suite has a standard coder (conformance.api.TestStream), and every one
but the multi-output case here has a single output: cases that need several inputs fed from one
ordered sequence of events split a single-output stream downstream (TaggedTestStream). So a
runner that runs no TestStream with several outputs fails that one case, on this row.
"""

import apache_beam as beam
from apache_beam.transforms import window

from conformance.api import ON_TIME_ONLY, TestStream, W, capability, check, el, sorted_groups


def _tv(value, seconds):
    return window.TimestampedValue(value, seconds)


@capability("teststream")
def test_elements_arrive_with_their_timestamps(runner):
    # SEMANTICS 9: each element comes out at its event's timestamp, in the global window, with no pane.
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
    advance, goes to [10,20), which fires when the stream's watermark reaches infinity (SEMANTICS 5 and 9)."""
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
    # SEMANTICS 3 and 9: a Flatten of two TestStreams holds every element of both, each at its own timestamp.
    left = TestStream().add_elements([_tv("l1", 1)]).advance_watermark_to_infinity()
    right = TestStream().add_elements([_tv("r1", 2), _tv("r2", 3)]).advance_watermark_to_infinity()
    p = runner.pipeline()
    out = (p | "Left" >> left, p | "Right" >> right) | beam.Flatten()
    check(out, [el("l1", 1), el("r1", 2), el("r2", 3)])
    runner.run(p)


@capability("teststream")
def test_a_test_stream_with_two_outputs_feeds_each_its_own_elements_and_watermark(runner):
    """A TestStream with two output tags: the Runner API's TestStreamPayload tags every element
    and watermark event with the output it belongs to, and each tag is an output PCollection of its
    own. "left" gets l1@1 and l2@12 and its watermark goes to 10 in between: its [0,10) fires
    with l1 alone. "right"'s watermark stays behind, so r2@5, added after left's advance, is on
    time on "right" and joins r1 in [0,10). A runner that moved both outputs with left's
    watermark would drop r2 (or fire it late); one that gave an element to the wrong output would
    show it there (SEMANTICS 9)."""
    stream = (
        TestStream(output_tags={"left", "right"})
        .add_elements([_tv("l1", 1)], tag="left")
        .add_elements([_tv("r1", 2)], tag="right")
        .advance_watermark_to(10, tag="left")
        .add_elements([_tv("l2", 12)], tag="left")
        .add_elements([_tv("r2", 5)], tag="right")
        .advance_watermark_to_infinity(tag="left")
        .advance_watermark_to_infinity(tag="right")
    )
    p = runner.pipeline()
    outputs = p | "Stream" >> stream

    def grouped(tag):
        return (
            outputs[tag]
            | f"Key {tag}" >> beam.Map(lambda v: ("k", v))
            | f"Window {tag}" >> beam.WindowInto(window.FixedWindows(10))
            | f"Group {tag}" >> beam.GroupByKey()
            | f"Sort {tag}" >> sorted_groups()
        )

    check(
        grouped("left"),
        [el(("k", ["l1"]), 9.999, W(0, 10), ON_TIME_ONLY), el(("k", ["l2"]), 19.999, W(10, 20), ON_TIME_ONLY)],
        label="left",
    )
    check(grouped("right"), [el(("k", ["r1", "r2"]), 9.999, W(0, 10), ON_TIME_ONLY)], label="right")
    runner.run(p)
