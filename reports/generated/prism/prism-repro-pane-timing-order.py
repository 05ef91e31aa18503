"""A generated pipeline that deviates from the Beam model: pane timing order @ Filter+GroupByKey+TestStream+WindowInto.

Found by generated/pipeline[s1-00211], shrunk to 4 transforms. Run it with the options of the runner to test.
"""

import typing

import apache_beam as beam
from apache_beam.testing.test_stream import TestStream
from apache_beam.transforms import trigger, userstate, window

KV = typing.Tuple[str, int]
KV_CODER = beam.coders.TupleCoder([beam.coders.StrUtf8Coder(), beam.coders.VarIntCoder()])


def build(p, prefix=''):
    pc1 = p | prefix + "01 TestStream" >> (
        TestStream(coder=KV_CODER)
        .add_elements([window.TimestampedValue(('a', 0), 29)])
        .advance_watermark_to(8)
        .add_elements([window.TimestampedValue(('a', 1), 0), window.TimestampedValue(('a', 2), 29)])
        .advance_watermark_to(22)
        .advance_watermark_to(29)
        .advance_watermark_to(33)
        .add_elements([window.TimestampedValue(('c', 3), 0), window.TimestampedValue(('a', 4), 29), window.TimestampedValue(('a', 5), 27)])
        .advance_watermark_to(39)
        .add_elements([window.TimestampedValue(('a', 6), 3), window.TimestampedValue(('c', 7), 0), window.TimestampedValue(('c', 8), 14)])
        .advance_watermark_to(40)
        .advance_watermark_to_infinity()
    ).with_output_types(KV)
    pc2 = pc1 | prefix + "02 Filter" >> beam.Filter(lambda kv: (lambda k, v: v > 0)(*kv))
    pc3 = pc2 | prefix + "03 Window" >> beam.WindowInto(window.SlidingWindows(3, 3), trigger=trigger.AfterWatermark(early=trigger.AfterCount(1), late=trigger.AfterCount(1)), accumulation_mode=trigger.AccumulationMode.ACCUMULATING, allowed_lateness=5, timestamp_combiner=window.TimestampCombiner.OUTPUT_AT_LATEST)
    pc4 = pc3 | prefix + "04 GroupByKey" >> beam.GroupByKey()
    return pc4


EXTRA_OPTIONS = ['--allow_unsafe_triggers']
MODEL = "  model:  ('a', [2]) @ 29000ms in [27000, 30000) EARLY first=True last=False index=0 nonspec=-1\n  model:  ('a', [2]) @ 29999ms in [27000, 30000) ON_TIME first=False last=False index=1 nonspec=0\n  model:  ('a', [2, 4, 5]) @ 29999ms in [27000, 30000) LATE first=False last=False index=2 nonspec=1\n  model:  ('a', [2, 4, 5]) @ 29999ms in [27000, 30000) LATE first=False last=True index=3 nonspec=2\n  (the panes of 'a' in [27000, 30000) depend on how the runner bundled elements that arrived together: any panes meeting the constraints of conformance/model/constraints.py are allowed; the model's above assume one bundle per event)"


class _Show(beam.DoFn):
    def process(self, element, ts=beam.DoFn.TimestampParam, w=beam.DoFn.WindowParam, pane=beam.DoFn.PaneInfoParam):
        if isinstance(element[1], (list, tuple)) or hasattr(element[1], "__iter__"):
            element = (element[0], sorted(element[1]))
        timing = {0: "EARLY", 1: "ON_TIME", 2: "LATE", 3: "UNKNOWN"}[pane.timing]
        print(f"  runner: {element!r} @ {ts.micros // 1000}ms in {w} {timing} "
              f"first={pane.is_first} last={pane.is_last} index={pane.index} nonspec={pane.nonspeculative_index}",
              flush=True)


def main(argv=None):
    import sys

    from apache_beam.options.pipeline_options import PipelineOptions

    args = list(sys.argv[1:] if argv is None else argv)
    args += [a for a in EXTRA_OPTIONS if a not in args]
    print("the runner's output (its order is not part of the model):")
    with beam.Pipeline(options=PipelineOptions(args)) as p:
        build(p) | "Show" >> beam.ParDo(_Show())
    print("the Beam model's:")
    print(MODEL)


if __name__ == "__main__":
    main()
