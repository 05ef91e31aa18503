"""One job's lifecycle, the same for the job server's jobs and the in-process runners' (Prism, too,
runs its in-process jobs through its job service): a planned job on its backend, its state
machine (STARTING, RUNNING, DRAINING/CANCELLING, then DONE, DRAINED, CANCELLED or FAILED),
cancel and drain at any point, cancel before it started included, its messages and its metrics.
It runs in the caller's thread (``run``) or in one of its own (``start``)."""

from __future__ import annotations

import itertools
import logging
import threading
import time
import traceback
from collections.abc import Iterator

from apache_beam.portability.api import beam_fn_api_pb2, beam_job_api_pb2
from google.protobuf import timestamp_pb2

from reference_runner.backends import Backend, Control
from reference_runner.graph.plan import Plan

_LOG = logging.getLogger(__name__)
State = beam_job_api_pb2.JobState
TERMINAL = {State.DONE, State.FAILED, State.CANCELLED, State.DRAINED, State.UPDATED, State.STOPPED}
_MESSAGE_IDS = itertools.count(1)
_ERROR_SEVERITY = beam_fn_api_pb2.LogEntry.Severity.ERROR
MAX_MESSAGES = 10_000  # per job; past it only errors are kept (a chatty DoFn must not grow the server)


def _now() -> timestamp_pb2.Timestamp:
    stamp = timestamp_pb2.Timestamp()
    stamp.GetCurrentTime()
    return stamp


class JobRecord:
    """``plan`` (made by ``backend.plan``, once) run on ``backend``. ``pipeline`` and ``options``
    are the job as its Job API client sent them (GetPipeline, JobInfo)."""

    def __init__(
        self,
        job_id: str,
        name: str,
        backend: Backend,
        plan: Plan,
        pipeline=None,
        options=None,
        preparation_id: str = "",
    ):
        self.job_id = job_id
        self.preparation_id = preparation_id  # its staged files' token
        self.name = name
        self.pipeline = pipeline
        self.options = options  # google.protobuf.Struct, as the client sent it
        self.backend: Backend | None = backend
        self.plan: Plan | None = plan
        self.error: BaseException | None = None  # what failed the job, for an in-process caller
        self.events: list = []  # JobMessagesResponse, in order (messages and states)
        self.state = State.UNSPECIFIED
        self.results = beam_job_api_pb2.MetricResults()  # user metrics, once the job has ended
        self.control = Control(job_id, message=self.message, worker_log=self.worker_log)
        self._messages = self._dropped = 0
        self._changed = threading.Condition()
        self._set_state(State.STARTING)  # clients read STOPPED as an end, so a new job is STARTING

    # -- what clients read --------------------------------------------------------------------
    def info(self) -> beam_job_api_pb2.JobInfo:
        return beam_job_api_pb2.JobInfo(
            job_id=self.job_id, job_name=self.name, pipeline_options=self.options, state=self.state
        )

    def follow(self, kinds: set[str], stop) -> Iterator:
        """Every event of ``kinds`` ('message', 'state') so far and to come, until the job ends
        (or ``stop()`` says the client went away)."""
        position = 0
        while True:
            with self._changed:

                def moved(seen: int = position) -> bool:  # binds position now; mypy cannot type a lambda with a default
                    return seen < len(self.events) or stop()

                self._changed.wait_for(moved, timeout=1)
                batch = self.events[position:]
                position = len(self.events)
                ended = self.state in TERMINAL
            for event in batch:
                kind = event.WhichOneof("response")
                if kind == "message_response" and "message" in kinds:
                    yield event
                elif kind == "state_response" and "state" in kinds:
                    yield event
            if (ended and position == len(self.events)) or stop():
                return

    def metrics(self) -> beam_job_api_pb2.MetricResults:
        if self.state not in TERMINAL:  # running: as far as bundles committed
            return self.control.metric_results()
        return self.results

    def ended(self) -> bool:
        return self.state in TERMINAL

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the job ended (at most ``timeout`` seconds); True if it has."""
        with self._changed:
            return self._changed.wait_for(self.ended, timeout)

    # -- lifecycle ----------------------------------------------------------------------------
    def run(self) -> None:
        """Run the job to its end in this thread."""
        self._run()

    def start(self) -> None:
        """Run the job in a thread of its own."""
        threading.Thread(target=self._run, name=f"job-{self.job_id or 'in-process'}", daemon=True).start()

    def cancel(self) -> None:
        if self.state in TERMINAL:
            return
        self._set_state(State.CANCELLING)
        self.control.token.cancel()

    def drain(self) -> None:
        """Stop reading new input and finish: DRAINING, then DRAINED (a job that had nothing left
        to drain ends DONE). A job that has ended, or is being cancelled, keeps its state."""
        with self._changed:
            if self.state in TERMINAL or self.state == State.CANCELLING:
                return
            self._set_state(State.DRAINING)
        self.control.token.drain()

    def message(self, text: str, importance=beam_job_api_pb2.JobMessage.JOB_MESSAGE_BASIC) -> None:
        with self._changed:
            if self._messages >= MAX_MESSAGES and importance != beam_job_api_pb2.JobMessage.JOB_MESSAGE_ERROR:
                self._dropped += 1
                return
            self._messages += 1
            self._append_message(text, importance)

    def _append_message(self, text: str, importance) -> None:
        self.events.append(
            beam_job_api_pb2.JobMessagesResponse(
                message_response=beam_job_api_pb2.JobMessage(
                    message_id=str(next(_MESSAGE_IDS)), time=str(time.time()), importance=importance, message_text=text
                )
            )
        )
        self._changed.notify_all()

    def _set_state(self, state) -> None:
        with self._changed:
            if self.state in TERMINAL and state != self.state:
                return
            if state in TERMINAL and self._dropped:
                self._append_message(
                    f"{self._dropped} more messages were not kept (at most {MAX_MESSAGES} per job)",
                    beam_job_api_pb2.JobMessage.JOB_MESSAGE_BASIC,
                )
            self.state = state
            self.events.append(
                beam_job_api_pb2.JobMessagesResponse(
                    state_response=beam_job_api_pb2.JobStateEvent(state=state, timestamp=_now())
                )
            )
            self._changed.notify_all()

    def _run(self) -> None:
        try:
            self._run_to_the_end()
        finally:  # an ended job keeps its events, metrics and pipeline, not its engine or worker
            self.control.ended()
            self.backend = self.plan = None

    def _run_to_the_end(self) -> None:
        backend, plan = self.backend, self.plan
        assert backend is not None and plan is not None, "a job runs once"
        try:
            self.control.token.raise_if_cancelled()  # cancelled before it started: backends start what they are given
            with self._changed:  # (a drain asked for already keeps the job DRAINING)
                if not self.control.token.draining:
                    self._set_state(State.RUNNING)
            try:
                outcome = backend.run(plan, self.control)
            finally:
                self.results = self.control.metric_results()
            self._set_state(State.DRAINED if outcome.drained else State.DONE)
        except BaseException as e:  # noqa: BLE001 - every failure becomes the job's error message
            self._failed(e)

    def _failed(self, error: BaseException) -> None:
        if self.control.token.cancelled:  # a cancelled job stops with whatever error that caused
            self._set_state(State.CANCELLED)
            return
        _LOG.info("job %s failed: %s", self.job_id, error)
        self.error = error
        self.message(
            f"{type(error).__name__}: {error}" if str(error) else traceback.format_exc(),
            beam_job_api_pb2.JobMessage.JOB_MESSAGE_ERROR,
        )
        self._set_state(State.FAILED)

    def worker_log(self, entry) -> None:
        """A LogEntry from the job's SDK worker: into the job's message stream."""
        importance = (
            beam_job_api_pb2.JobMessage.JOB_MESSAGE_ERROR
            if entry.severity >= _ERROR_SEVERITY
            else beam_job_api_pb2.JobMessage.JOB_MESSAGE_BASIC
        )
        self.message(f"[worker] {entry.message}", importance)
