"""One submitted job: its pipeline, state history, messages and metrics, run in its own thread."""

from __future__ import annotations

import itertools
import logging
import threading
import time
import traceback
from collections.abc import Iterator

from apache_beam.portability.api import beam_fn_api_pb2, beam_job_api_pb2
from google.protobuf import timestamp_pb2

from reference_runner.backends import Control
from reference_runner.execute import JobCancelled
from reference_runner.worker.pool import environment_of

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
    """``backend`` runs the job (backends.py); ``workers``, for a backend that runs user code on
    SDK workers of the job's environment, hands it one from the server's pool (pooled_workers)."""

    def __init__(self, job_id: str, name: str, pipeline, options, backend, preparation_id: str = ""):
        self.job_id = job_id
        self.preparation_id = preparation_id  # its staged files' token
        self.name = name
        self.pipeline = pipeline
        self.options = options  # google.protobuf.Struct, as the client sent it
        self.backend = backend
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
                self._changed.wait_for(lambda seen=position: seen < len(self.events) or stop(), timeout=1)
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

    # -- lifecycle ----------------------------------------------------------------------------
    def start(self) -> None:
        threading.Thread(target=self._run, name=f"job-{self.job_id}", daemon=True).start()

    def cancel(self) -> None:
        if self.state in TERMINAL:
            return
        self._set_state(State.CANCELLING)
        self.control.cancel()

    def drain(self) -> None:
        """Stop reading new input and finish (execute.Job.drain): DRAINING, then DRAINED. A
        job that has ended keeps its state; on a backend without streaming (always bounded) the
        job just finishes."""
        with self._changed:
            if self.state in TERMINAL or self.state == State.CANCELLING or not self.backend.profile.streaming:
                return
            self._set_state(State.DRAINING)
        self.control.drain()

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
            self.backend = None

    def _run_to_the_end(self) -> None:
        try:
            plan = self.backend.prepare(self.pipeline)
            if self.control.cancelled.is_set():
                raise JobCancelled("cancelled before it started")
            with self._changed:  # (a drain asked for already keeps the job DRAINING)
                if not self.control.draining.is_set():
                    self._set_state(State.RUNNING)
            try:
                outcome = self.backend.run(plan, self.control)
            finally:
                self.results = self.control.metric_results()
            self._set_state(State.DRAINED if outcome.drained else State.DONE)
        except Exception as e:  # noqa: BLE001 - every failure becomes the job's error message
            self._failed(e)

    def _failed(self, error: Exception) -> None:
        if self.control.cancelled.is_set():  # a cancelled job stops with whatever error that caused
            self._set_state(State.CANCELLED)
            return
        _LOG.info("job %s failed: %s", self.job_id, error)
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


def pooled_workers(pool, pipeline):
    """SDK workers of ``pipeline``'s environment from the server's pool, for ReferenceBackend:
    released (stopped, or kept as a spare if healthy) when the job ends, before it reports DONE,
    so that DoFn teardown has run by then."""

    def acquire(plan, state, control):
        env = environment_of(pipeline.components)
        worker, token = pool.acquire(env, state, control.worker_log)
        control.message(f"running on {_describe(env)}; {len(plan.stages)} stages")
        return worker, lambda healthy: pool.release(token, env, healthy)

    return acquire


def _describe(env) -> str:
    return env.urn.replace("beam:env:", "").replace(":v1", "") + " worker"
