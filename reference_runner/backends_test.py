"""The cancel token (backends.CancelToken): the one holder of a job's cancel and drain, and the
wake-ups of what waits where no loop reads it."""

import pytest

from reference_runner.backends import CancelToken, Control, JobCancelled


def test_a_new_token_asks_nothing():
    token = CancelToken()
    assert not token.cancelled and not token.draining
    token.raise_if_cancelled()  # does not raise


def test_cancel_is_read_by_the_loop_and_wakes_what_waits_once():
    token, woken = CancelToken(), []
    token.on_cancel(lambda: woken.append("cancel"))
    token.on_drain(lambda: woken.append("drain"))
    token.cancel()
    assert token.cancelled and not token.draining
    assert woken == ["cancel"]
    with pytest.raises(JobCancelled, match="the job was cancelled"):
        token.raise_if_cancelled()


def test_drain_wakes_its_own_and_leaves_the_run_uncancelled():
    token, woken = CancelToken(), []
    token.on_cancel(lambda: woken.append("cancel"))
    token.on_drain(lambda: woken.append("drain"))
    token.drain()
    assert token.draining and not token.cancelled
    assert woken == ["drain"]
    token.raise_if_cancelled()  # a draining run goes on to its end


def test_a_wake_up_registered_after_the_request_runs_at_once():
    token, woken = CancelToken(), []
    token.cancel()
    token.drain()
    token.on_cancel(lambda: woken.append("cancel"))
    token.on_drain(lambda: woken.append("drain"))
    assert woken == ["cancel", "drain"]


def test_an_ended_run_lets_go_of_its_wake_ups():
    control, woken = Control(), []
    control.token.on_cancel(lambda: woken.append("cancel"))
    control.ended()
    control.token.cancel()
    assert control.token.cancelled and woken == []
