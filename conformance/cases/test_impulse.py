"""Impulse: the root of every Beam pipeline (conformance/SEMANTICS.md, section 2)."""

import apache_beam as beam

from conformance.api import GLOBAL, MIN_TIMESTAMP, NO_FIRING, capability, check, created, el


@capability("impulse")
def test_one_element(runner):
    # SEMANTICS 2: Impulse | Map(lambda _: 0) gives [0]: Impulse emits exactly one element.
    p = runner.pipeline()
    check(p | beam.Impulse() | beam.Map(lambda _: 0), created([0]))
    runner.run(p)


@capability("impulse")
def test_empty_bytes_in_global_window_at_min_timestamp(runner):
    # One empty byte string, in the global window, at MIN timestamp, with the unknown pane (SEMANTICS 2).
    p = runner.pipeline()
    check(p | beam.Impulse(), [el(b"", MIN_TIMESTAMP, GLOBAL, NO_FIRING)])
    runner.run(p)


@capability("impulse")
def test_standard_encoding(runner):
    # The Impulse element, encoded as a nested WindowedValue<bytes> in the global window,
    # is exactly these 14 bytes: timestamp MIN, one window, empty global window, pane 0x0F, b'' (SEMANTICS 1 and 2).
    from apache_beam.coders import coders
    from apache_beam.utils.windowed_value import WindowedValue

    def encode(value, ts=beam.DoFn.TimestampParam, w=beam.DoFn.WindowParam, pane=beam.DoFn.PaneInfoParam):
        coder = coders.WindowedValueCoder(coders.BytesCoder(), coders.GlobalWindowCoder())
        yield coder.encode_nested(WindowedValue(value, ts, [w], pane)).hex()

    p = runner.pipeline()
    check(p | beam.Impulse() | beam.ParDo(encode), created(["7fdf3b645a1cac09000000010f00"]))
    runner.run(p)
