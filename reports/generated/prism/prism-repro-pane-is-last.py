"""A generated pipeline that deviates from the Beam model: pane is_last @ GroupByKey+TestStream+WindowInto.

Found by generated/pipeline[s1-00283], shrunk to 3 transforms. Run it with the options of the runner to test.
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
        .add_elements([window.TimestampedValue(('b', 0), 0)])
        .advance_watermark_to_infinity()
    ).with_output_types(KV)
    pc2 = pc1 | prefix + "02 Window" >> beam.WindowInto(window.Sessions(1), trigger=trigger.DefaultTrigger(), accumulation_mode=trigger.AccumulationMode.DISCARDING, allowed_lateness=20)
    pc3 = pc2 | prefix + "03 GroupByKey" >> beam.GroupByKey()
    return pc3


EXTRA_OPTIONS = ['--allow_unsafe_triggers']
MODEL = "  model:  ('b', [0]) @ 999ms in [0, 1000) ON_TIME first=True last=True index=0 nonspec=0"


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
