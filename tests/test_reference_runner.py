"""The reference runner used directly from Beam, beyond what the conformance cases check."""

import apache_beam as beam
import pytest
from apache_beam.testing import test_stream
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms import window

from reference_runner import ReferenceRunner
from reference_runner.graph.check import UnsupportedPipeline
from unsupported import UNKNOWN_URN, UnknownPrimitive


def _word_count(p):
    return (
        p
        | beam.Create(["a b", "b c c"])
        | beam.FlatMap(str.split)
        | beam.Map(lambda w: (w, 1))
        | beam.CombinePerKey(sum)
    )


@pytest.mark.parametrize("fuse", [True, False])
def test_word_count_fused_and_unfused(fuse):
    with beam.Pipeline(runner=ReferenceRunner(fuse=fuse)) as p:
        assert_that(_word_count(p), equal_to([("a", 1), ("b", 2), ("c", 2)]))


def test_fuse_option_from_the_command_line():
    options = beam.options.pipeline_options.PipelineOptions(["--reference_fuse=false"])
    with beam.Pipeline(runner=ReferenceRunner(), options=options) as p:
        assert_that(_word_count(p), equal_to([("a", 1), ("b", 2), ("c", 2)]))


def test_without_fusion_a_lifted_combine_still_extracts_in_its_merge_stage():
    # Top.Smallest's merged accumulator holds values that only compact() makes encodable, and
    # the SDK's merge phase does not compact: an extract in a stage of its own failed its assert.
    options = beam.options.pipeline_options.PipelineOptions(["--reference_fuse=false"])
    with beam.Pipeline(runner=ReferenceRunner(), options=options) as p:
        smallest = p | beam.Create([("a", 5), ("a", 8), ("a", 2), ("b", 6)]) | beam.combiners.Top.SmallestPerKey(2)
        assert_that(smallest, equal_to([("a", [2, 5]), ("b", [6])]))


def test_unsupported_features_are_all_named_in_one_error():
    p = beam.Pipeline(runner=ReferenceRunner())
    keyed = p | beam.Create([("k", 1)])
    _ = keyed | UnknownPrimitive()
    _ = keyed | "Again" >> UnknownPrimitive()
    with pytest.raises(UnsupportedPipeline) as info:
        p.run()
    text = str(info.value)
    assert text.count(f"unknown transform {UNKNOWN_URN}") == 2
    assert "transform 'UnknownPrimitive'" in text and "transform 'Again'" in text


def test_user_exception_fails_the_job_with_its_message():
    def explode(x):
        raise ValueError(f"bad element {x}")

    p = beam.Pipeline(runner=ReferenceRunner())
    _ = p | beam.Create([7]) | beam.Map(explode)
    with pytest.raises(Exception, match="bad element 7"):
        p.run()


def test_the_engine_never_imports_protos_or_grpc():
    import pathlib

    import reference_runner.engine as engine

    for source in pathlib.Path(engine.__file__).parent.glob("*.py"):
        text = source.read_text()
        assert "portability" not in text and "grpc" not in text and "apache_beam" not in text, source


def test_teststream_pipeline_runs_with_triggers_lateness_and_processing_time():
    stream = (
        test_stream.TestStream()
        .add_elements([window.TimestampedValue(("k", 1), 1), window.TimestampedValue(("k", 2), 2)])
        .advance_processing_time(10)
        .advance_watermark_to(50)
        .add_elements([window.TimestampedValue(("k", 3), 3)])
        .advance_watermark_to_infinity()
    )
    trig = beam.trigger.AfterWatermark(early=beam.trigger.AfterProcessingTime(5), late=beam.trigger.AfterCount(1))
    with beam.Pipeline(runner=ReferenceRunner()) as p:
        keyed = p | stream
        panes = (
            keyed
            | beam.WindowInto(
                window.FixedWindows(10),
                trigger=trig,
                allowed_lateness=100,
                accumulation_mode=beam.trigger.AccumulationMode.DISCARDING,
            )
            | beam.GroupByKey()
            | beam.Map(lambda kv, pane=beam.DoFn.PaneInfoParam: (sorted(kv[1]), pane.timing, pane.is_last))
        )
        early, on_time, late = (
            beam.utils.windowed_value.PaneInfoTiming.EARLY,
            beam.utils.windowed_value.PaneInfoTiming.ON_TIME,
            beam.utils.windowed_value.PaneInfoTiming.LATE,
        )
        assert_that(
            panes, equal_to([([1, 2], early, False), ([], on_time, False), ([3], late, False), ([], late, True)])
        )


def test_two_teststreams_in_one_pipeline():
    # Each stream's events apply in order, one at a time; the Flatten's watermark is the lesser
    # of the two, so a window fires once both streams have passed its end.
    first = (
        test_stream.TestStream()
        .add_elements([window.TimestampedValue(("k", "a1"), 1)])
        .advance_watermark_to(10)
        .add_elements([window.TimestampedValue(("k", "a2"), 12)])
        .advance_watermark_to_infinity()
    )
    second = (
        test_stream.TestStream()
        .add_elements([window.TimestampedValue(("k", "b1"), 2), window.TimestampedValue(("k", "b2"), 15)])
        .advance_watermark_to_infinity()
    )
    with beam.Pipeline(runner=ReferenceRunner(bundle_size=1)) as p:
        merged = (p | "First" >> first, p | "Second" >> second) | beam.Flatten()
        out = (
            merged
            | beam.WindowInto(window.FixedWindows(10))
            | beam.GroupByKey()
            | beam.Map(lambda kv, w=beam.DoFn.WindowParam: (int(w.start), sorted(kv[1])))
        )
        assert_that(out, equal_to([(0, ["a1", "b1"]), (10, ["a2", "b2"])]))


class _MergeWithinTen(window.WindowFn):
    """[t, t+1) per element; windows starting in the same 10 s bucket merge into their span."""

    def assign(self, context):
        return [window.IntervalWindow(context.timestamp, context.timestamp + 1)]

    def merge(self, merge_context):
        buckets = {}
        for w in merge_context.windows:
            buckets.setdefault(int(w.start) // 10, []).append(w)
        for ws in buckets.values():
            if len(ws) > 1:
                merge_context.merge(ws, window.IntervalWindow(min(w.start for w in ws), max(w.end for w in ws)))

    def get_window_coder(self):
        return beam.coders.coders.IntervalWindowCoder()


class _KeyValueWindow(beam.DoFn):
    def process(self, kv, w=beam.DoFn.WindowParam):
        yield kv[0], sorted(kv[1]) if isinstance(kv[1], list) else kv[1], float(w.start), float(w.end)


@pytest.mark.parametrize("fuse", [True, False])
def test_custom_merging_windowfn_merges_in_the_sdk_for_gbk_and_combine(fuse):
    data = [("k", 1), ("k", 3), ("k", 12), ("j", 4), ("k", 25), ("k", 28), ("j", 5.5)]
    with beam.Pipeline(runner=ReferenceRunner(fuse=fuse)) as p:
        windowed = (
            p
            | beam.Create(data)
            | beam.Map(lambda kv: window.TimestampedValue(kv, kv[1]))
            | beam.WindowInto(_MergeWithinTen())
        )
        grouped = (
            windowed
            | beam.GroupByKey()
            | beam.MapTuple(lambda k, vs: (k, sorted(vs)))
            | "GroupWindow" >> beam.ParDo(_KeyValueWindow())
        )
        summed = windowed | beam.CombinePerKey(sum) | "SumWindow" >> beam.ParDo(_KeyValueWindow())
        assert_that(
            grouped,
            equal_to([("k", [1, 3], 1, 4), ("k", [12], 12, 13), ("k", [25, 28], 25, 29), ("j", [4, 5.5], 4, 6.5)]),
            label="grouped",
        )
        assert_that(
            summed, equal_to([("k", 4, 1, 4), ("k", 12, 12, 13), ("k", 53, 25, 29), ("j", 9.5, 4, 6.5)]), label="summed"
        )


def test_a_warm_worker_does_not_reuse_the_previous_jobs_global_side_input():
    # The SDK's DoFn invoker keeps globally windowed side-input values for the life of its bundle
    # processor; two jobs with identical stages but different side contents run on one warm
    # worker, so the second must get a processor of its own.
    def run(value):
        with beam.Pipeline(runner=ReferenceRunner()) as p:
            side = p | "Side" >> beam.Create([value])
            out = p | "Main" >> beam.Create([1]) | beam.Map(lambda x, s: (x, s), beam.pvalue.AsSingleton(side))
            assert_that(out, equal_to([(1, value)]))

    run(10)
    run(20)


@pytest.mark.parametrize("knobs", [{}, {"bundle_size": "random", "splits": "random", "seed": 7}, {"fuse": False}])
def test_a_group_keeps_the_arrival_order_of_values_from_one_bundle(knobs):
    # The model leaves the order of a group's values open; users rely on the order of one bundle
    # (a FlatMap of one element emits all of them in one bundle) and Beam's runners keep it.
    with beam.Pipeline(runner=ReferenceRunner(**knobs)) as p:
        out = (
            p
            | beam.Create([None])
            | beam.FlatMap(lambda _: [("k", i) for i in range(50)])
            | beam.GroupByKey()
            | beam.MapTuple(lambda k, vs: list(vs))
        )
        assert_that(out, equal_to([list(range(50))]))


def _innermost_helper(x):
    raise ValueError(f"raised deep down for {x}")


def _outer_helper(x):
    return _innermost_helper(x)


def test_the_users_whole_traceback_reaches_the_caller_nested_frames_included():
    p = beam.Pipeline(runner=ReferenceRunner())
    _ = p | beam.Create([7]) | beam.Map(_outer_helper)
    with pytest.raises(Exception, match="raised deep down for 7") as info:
        p.run()
    message = str(info.value)
    # the error on the first line, then every frame down to the function that raised
    assert "ValueError: raised deep down for 7" in message.splitlines()[0]
    assert "in _outer_helper" in message and "in _innermost_helper" in message
