"""A property case whose time limit runs out in one of its examples says so, instead of the flaky
verdict hypothesis gives it when the replayed example passes."""

import types

import pytest
from hypothesis.errors import FlakyFailure

from conformance.session.plugin import _message_of


def _call(error):
    try:
        raise error
    except BaseException:
        return types.SimpleNamespace(excinfo=pytest.ExceptionInfo.from_current())


def test_a_timeout_inside_a_flaky_failure_is_reported_as_the_timeout():
    timeout = pytest.fail.Exception("Timeout (>180.0s) from pytest-timeout.")
    message = _message_of(_call(FlakyFailure("Hypothesis test_x produces unreliable results", [timeout])))
    assert message.startswith("Timeout (>180.0s) from pytest-timeout. in one of the property case's examples")
    assert "--case-timeout" in message and "--property-examples" in message and "FlakyFailure" in message


def test_other_failures_keep_their_own_message():
    assert _message_of(_call(AssertionError("output differs"))) == "output differs"
    other = FlakyFailure("Hypothesis test_x produces unreliable results", [ValueError("boom")])
    assert _message_of(_call(other)).startswith("FlakyFailure: Hypothesis test_x produces unreliable results")
