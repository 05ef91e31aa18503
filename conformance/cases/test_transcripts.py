"""Scripted trigger scenarios: every fixtures/transcripts/*.yaml file (format in
conformance/authoring/transcripts.py) fed through a TestStream into WindowInto + GroupByKey.

Each step's expected panes are written next to the step that fires them; the runner's output
must be exactly the union of them, with every PaneInfo field, so the step at which a pane fired
shows in its index and timing.
"""

import apache_beam as beam
import pytest
from apache_beam.coders import coders
from apache_beam.transforms import trigger, window

from conformance.api import TestStream, capability, check, sorted_groups
from conformance.authoring import transcripts

_ALL = transcripts.load_all()


def _stream(t: transcripts.Transcript) -> TestStream:
    """Each element is (key, its event time). One stream has one coder: the times are varints, or
    all doubles when any is fractional (a value compares equal to its float). The coder is given,
    not inferred, so a transcript without elements has one too."""
    fractional = any(isinstance(at, float) for step in t.steps if step.kind == "elements" for at in step.value)
    time_coder = coders.FloatCoder() if fractional else coders.VarIntCoder()
    stream = TestStream(coder=coders.TupleCoder([coders.StrUtf8Coder(), time_coder]))
    for step in t.steps:
        if step.kind == "elements":
            stream = stream.add_elements(
                [window.TimestampedValue((step.key, float(at) if fractional else at), at) for at in step.value]
            )
        elif step.kind == "processing_time":
            stream = stream.advance_processing_time(step.value)
        elif step.value == "inf":
            stream = stream.advance_watermark_to_infinity()
        else:
            stream = stream.advance_watermark_to(step.value)
    return stream


@pytest.mark.parametrize(
    "t",
    [pytest.param(t, id=t.name, marks=capability(t.capability)) for t in _ALL]
    or [
        pytest.param(
            None,
            id="none",
            marks=[
                capability("triggers.event_time"),
                pytest.mark.skip(reason="no fixtures/transcripts directory here (set BEAM_CONFORMANCE_TRANSCRIPTS)"),
            ],
        )
    ],
)
def test_transcript(runner, t):
    # SEMANTICS 5: the panes each step fires are the ones the transcript writes down for it, by the
    # trigger, pane and lateness rules of that section.
    # --allow_unsafe_triggers: transcripts include triggers that finish (AfterCount alone),
    # which Python refuses at construction by default; the flag is not sent to the runner.
    p = runner.pipeline("--allow_unsafe_triggers")
    mode = trigger.AccumulationMode.ACCUMULATING if t.accumulating else trigger.AccumulationMode.DISCARDING
    out = (
        p
        | "Stream" >> _stream(t)
        | "Window"
        >> beam.WindowInto(
            t.window_fn,
            trigger=t.trigger,
            accumulation_mode=mode,
            allowed_lateness=t.allowed_lateness,
            timestamp_combiner=t.timestamp_combiner,
        )
        | "Group" >> beam.GroupByKey()
        | "Sort" >> sorted_groups()
    )
    check(out, t.expected())
    runner.run(p)
