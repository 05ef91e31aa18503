"""Side inputs windowed by the user's own WindowFns, read in a stream on our job server, which was
started from another directory and so cannot import the user's module.

In streaming the runner holds a main element until the side window it reads is ready, so it must
know that window: for a WindowFn that is not one of the model's, it asks the SDK worker
(beam:transform:map_windows:v1 with the side input's window mapping fn) and never unpickles the
WindowFn itself (runtime/sidewindows.py). The SDK's answer is the one its DoFn reads, so it is the
one to wait for, even where it is not the earliest window (Overlapping below)."""

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.pvalue import AsList
from apache_beam.testing import test_stream
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms import window

from user_modules import job_server_elsewhere, user_module

_MODULE = '''
from apache_beam.coders import coders
from apache_beam.transforms import window


def _start(timestamp):
    return timestamp - timestamp % 10


class Decades(window.NonMergingWindowFn):
    """[10k, 10k + 10): what FixedWindows(10) makes, from the user's own class."""

    def assign(self, context):
        start = _start(context.timestamp)
        return [window.IntervalWindow(start, start + 10)]

    def get_window_coder(self):
        return coders.IntervalWindowCoder()


class Overlapping(window.NonMergingWindowFn):
    """Two windows of 20 per element, the earliest listed first: Python's default window mapping
    (the last window assigned to the main window's end) picks the latest of them."""

    def assign(self, context):
        start = _start(context.timestamp)
        return [window.IntervalWindow(start - 10, start + 10), window.IntervalWindow(start, start + 20)]

    def get_window_coder(self):
        return coders.IntervalWindowCoder()
'''

TAGS = ("main", "side")


def _stream():
    # a@5 (main window [0,10)) reads Decades [0,10) and Overlapping [0,20): both complete once
    # the watermark passes 22. b@15 ([10,20)) reads Decades [10,20), ready then too, and
    # Overlapping [10,30), which z@25 joins after that watermark: b must wait for the end.
    stream = test_stream.TestStream(output_tags=set(TAGS))
    stream = stream.add_elements([window.TimestampedValue("x", 3), window.TimestampedValue("y", 12)], tag="side")
    stream = stream.add_elements([window.TimestampedValue("a", 5), window.TimestampedValue("b", 15)], tag="main")
    for tag in TAGS:
        stream = stream.advance_watermark_to(22, tag=tag)
    stream = stream.add_elements([window.TimestampedValue("z", 25)], tag="side")
    for tag in TAGS:
        stream = stream.advance_watermark_to_infinity(tag=tag)
    return stream


@pytest.mark.parametrize("backend", ["reference", "spark"])
def test_side_inputs_in_user_window_fns_are_read_in_a_stream_on_a_job_server_that_cannot_import_them(tmp_path, backend):
    (tmp_path / "user").mkdir()
    fns = user_module(tmp_path / "user", "user_windows", _MODULE)
    with job_server_elsewhere(tmp_path, "--backend", backend) as endpoint:
        options = PipelineOptions(
            [f"--job_endpoint={endpoint}", "--environment_type=LOOPBACK", "--runner=PortableRunner", "--streaming"]
        )
        with beam.Pipeline(options=options) as p:
            streams = p | "Stream" >> _stream()
            decades = streams["side"] | "Decades" >> beam.WindowInto(fns.Decades())
            overlapping = streams["side"] | "Overlapping" >> beam.WindowInto(fns.Overlapping())
            main = streams["main"] | "MainWindows" >> beam.WindowInto(window.FixedWindows(10))
            out = main | "Read" >> beam.Map(
                lambda x, d, o: (x, sorted(d), sorted(o)), AsList(decades), AsList(overlapping)
            )
            assert_that(out, equal_to([("a", ["x"], ["x", "y"]), ("b", ["y"], ["y", "z"])]))
