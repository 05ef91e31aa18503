"""One submitted job: its pipeline, state history, messages and metrics, run in its own thread."""
from __future__ import annotations

import itertools
import logging
import threading
import time
import traceback

from apache_beam.portability.api import beam_fn_api_pb2, beam_job_api_pb2
from google.protobuf import timestamp_pb2

from reference_runner.bundling import Schedule
from reference_runner.execute import Job, JobCancelled
from reference_runner.runner import metric_results

_LOG = logging.getLogger(__name__)
State = beam_job_api_pb2.JobState
TERMINAL = {State.DONE, State.FAILED, State.CANCELLED, State.DRAINED, State.UPDATED, State.STOPPED}
_MESSAGE_IDS = itertools.count(1)
_KNOBS = ("seed", "bundle_size", "splits", "faults", "fuse", "clock")
_ERROR_SEVERITY = beam_fn_api_pb2.LogEntry.Severity.ERROR


def _now() -> timestamp_pb2.Timestamp:
    stamp = timestamp_pb2.Timestamp()
    stamp.GetCurrentTime()
    return stamp


class JobRecord:
    def __init__(self, job_id: str, name: str, pipeline, options):
        self.job_id = job_id
        self.name = name
        self.pipeline = pipeline
        self.options = options            # google.protobuf.Struct, as the client sent it
        self.events: list = []            # JobMessagesResponse, in order (messages and states)
        self.state = State.UNSPECIFIED
        self.results = beam_job_api_pb2.MetricResults()  # user metrics, once the job has ended
        self._changed = threading.Condition()
        self._job: Job | None = None
        self._worker = None
        self._spark = False
        self._cancel = threading.Event()
        self._drain = threading.Event()
        self._set_state(State.STARTING)  # clients read STOPPED as an end, so a new job is STARTING

    # -- what clients read --------------------------------------------------------------------
    def info(self) -> beam_job_api_pb2.JobInfo:
        return beam_job_api_pb2.JobInfo(job_id=self.job_id, job_name=self.name,
                                        pipeline_options=self.options, state=self.state)

    def follow(self, kinds: set[str], stop) -> "iter":
        """Every event of ``kinds`` ('message', 'state') so far and to come, until the job ends
        (or ``stop()`` says the client went away)."""
        position = 0
        while True:
            with self._changed:
                self._changed.wait_for(lambda: position < len(self.events) or stop(), timeout=1)
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
        job = self._job
        if job is not None and self.state not in TERMINAL:  # running: as far as bundles committed
            return metric_results(job.monitoring_infos, job.failed_attempt_infos)
        return self.results

    # -- lifecycle ----------------------------------------------------------------------------
    def start(self, pool, endpoint: str, spark=None) -> None:
        """Run on the reference engine with workers from ``pool``, or on Spark (``spark``: the
        backend's SparkSettings)."""
        target = self._run if spark is None else self._run_on_spark
        args = (pool, endpoint) if spark is None else (spark,)
        threading.Thread(target=target, args=args, name=f"job-{self.job_id}", daemon=True).start()

    def _run_on_spark(self, settings) -> None:
        from reference_runner.spark.runner import run_proto
        try:
            if self._cancel.is_set():
                raise JobCancelled("cancelled before it started")
            self._spark = True
            self.message(f"running on Spark ({settings.master})")
            self._set_state(State.RUNNING)
            infos = run_proto(self.pipeline, settings, job_group=self.job_id)
            self.results = metric_results(infos)  # Spark may re-run tasks: attempted, reported as both
            self._set_state(State.DONE)
        except Exception as e:  # noqa: BLE001 - every failure becomes the job's error message
            self._failed(e)

    def cancel(self) -> None:
        if self.state in TERMINAL:
            return
        self._cancel.set()
        self._set_state(State.CANCELLING)
        if self._job is not None:
            self._job.cancel()
        if self._worker is not None and hasattr(self._worker, "cancelled"):
            self._worker.cancelled.set()  # a remote worker's bundle is abandoned, the worker stopped
        if self._spark:
            from reference_runner.spark.runner import cancel_job_group
            cancel_job_group(self.job_id)

    def drain(self) -> None:
        """Stop reading new input and finish (execute.Job.drain): DRAINING, then DRAINED. A
        job that has ended keeps its state; a Spark job (always bounded) just finishes."""
        with self._changed:
            if self.state in TERMINAL or self.state == State.CANCELLING or self._spark:
                return
            self._drain.set()
            self._set_state(State.DRAINING)
        if self._job is not None:
            self._job.drain()

    def message(self, text: str, importance=beam_job_api_pb2.JobMessage.JOB_MESSAGE_BASIC) -> None:
        event = beam_job_api_pb2.JobMessagesResponse(message_response=beam_job_api_pb2.JobMessage(
            message_id=str(next(_MESSAGE_IDS)), time=str(time.time()), importance=importance,
            message_text=text))
        with self._changed:
            self.events.append(event)
            self._changed.notify_all()

    def _set_state(self, state) -> None:
        with self._changed:
            if self.state in TERMINAL and state != self.state:
                return
            self.state = state
            self.events.append(beam_job_api_pb2.JobMessagesResponse(
                state_response=beam_job_api_pb2.JobStateEvent(state=state, timestamp=_now())))
            self._changed.notify_all()

    def _run(self, pool, endpoint: str) -> None:
        worker = token = env = None
        healthy = False
        try:
            knobs = _knobs(self.options)
            self._job = Job(self.pipeline, fuse=knobs.pop("fuse", "true") != "false",
                            schedule=Schedule(**knobs), job_id=f"{self.job_id}/", endpoint=endpoint)
            if self._cancel.is_set():
                raise JobCancelled("cancelled before it started")
            env = pool.environment_of(self.pipeline)
            worker, token = pool.acquire(env, self._job.state, self._worker_log)
            self._worker = worker
            if self._cancel.is_set():
                raise JobCancelled("cancelled before it started")
            self.message(f"running on {_describe(env)}; {len(self._job.stages)} stages")
            with self._changed:  # (a drain asked for already keeps the job DRAINING)
                if not self._drain.is_set():
                    self._set_state(State.RUNNING)
            if self._drain.is_set():
                self._job.drain()
            try:
                self._job.run(worker)
                healthy = True
            finally:
                self.results = metric_results(self._job.monitoring_infos, self._job.failed_attempt_infos)
            # Stop the worker (its DoFns' teardown) before the client hears DONE.
            pool.release(token, env, healthy)
            token = None
            self._set_state(State.DRAINED if self._job.drained else State.DONE)
        except Exception as e:  # noqa: BLE001 - every failure becomes the job's error message
            healthy = self._cancel.is_set() and isinstance(e, JobCancelled)
            self._failed(e)
        finally:
            pool.release(token, env, healthy)


    def _failed(self, error: Exception) -> None:
        if self._cancel.is_set():  # a cancelled job stops with whatever error that caused
            self._set_state(State.CANCELLED)
            return
        _LOG.info("job %s failed: %s", self.job_id, error)
        self.message(f"{type(error).__name__}: {error}" if str(error) else traceback.format_exc(),
                     beam_job_api_pb2.JobMessage.JOB_MESSAGE_ERROR)
        self._set_state(State.FAILED)

    def _worker_log(self, entry) -> None:
        """A LogEntry from the job's SDK worker: into the job's message stream."""
        importance = (beam_job_api_pb2.JobMessage.JOB_MESSAGE_ERROR if entry.severity >= _ERROR_SEVERITY
                      else beam_job_api_pb2.JobMessage.JOB_MESSAGE_BASIC)
        self.message(f"[worker] {entry.message}", importance)


def _describe(env) -> str:
    return env.urn.replace("beam:env:", "").replace(":v1", "") + " worker"


def _knobs(options) -> dict:
    """Our --reference_* options, as the client's PipelineOptions carry them (beam:option:NAME:v1)."""
    knobs = {}
    for name in _KNOBS:
        value = options.fields.get(f"beam:option:reference_{name}:v1")
        if value is not None and value.WhichOneof("kind") not in (None, "null_value"):
            knobs[name] = value.string_value if value.WhichOneof("kind") == "string_value" else \
                value.number_value if value.WhichOneof("kind") == "number_value" else str(value.bool_value).lower()
    if "seed" in knobs:
        knobs["seed"] = int(knobs["seed"])
    return knobs

