"""The streaming marker is derived from what a case does (conformance/session/streaming_cases.py)."""

import subprocess
import sys

import apache_beam as beam
import pytest

from conformance.api import TestStream
from conformance.authoring.case_errors import CaseDefinitionError
from conformance.authoring.case_runner import CaseRunner
from conformance.session.streaming_cases import builds_a_stream
from conformance.session.targets.base import TargetSettings
from conformance.session.targets.reference import ReferenceTarget


def _stream_of_ones():
    return TestStream().add_elements([1]).advance_watermark_to_infinity()


def _through_a_helper():
    return _stream_of_ones()


def test_a_case_is_streaming_when_it_builds_a_stream_itself_or_through_helpers():
    def direct(runner):
        runner.pipeline() | TestStream().advance_watermark_to_infinity()

    def indirect(runner):
        runner.pipeline() | _through_a_helper()

    def by_option(runner):
        runner.pipeline("--streaming")

    def batch(runner):
        runner.pipeline() | beam.Create([1])

    assert builds_a_stream(direct) and builds_a_stream(indirect) and builds_a_stream(by_option)
    assert not builds_a_stream(batch)


def test_the_two_cases_marked_by_nobody_are_streaming_now():
    # they build a TestStream, and main's hand-written markers left them out of "streaming"
    listed = subprocess.run(
        [sys.executable, "-m", "pytest", "--pyargs", "conformance", "--list-cases", "-q", "-p", "no:cacheprovider"]
        + ["--target", "reference", "-m", "streaming", "-k", "timers"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for case in (
        "timers/element_and_timer_at_the_end_of_the_global_window",
        "timers/time_sorted_input_waits_out_the_allowed_lateness",
    ):
        assert case in listed, listed


def test_a_test_stream_the_session_did_not_find_is_the_cases_error_not_the_runners():
    runner = CaseRunner(ReferenceTarget("reference", TargetSettings()), streaming=False)
    p = runner.pipeline()
    _ = p | _stream_of_ones()
    with pytest.raises(CaseDefinitionError, match="builds a TestStream"):
        runner.run(p)
