"""The Beam JobService of our job server (workers are provisioned by the Fn API server).

Every request is checked before it is used: unknown ids, malformed pipelines and oversized
requests get a gRPC error status; nothing a client sends can take the server down.
"""

from __future__ import annotations

import itertools
import logging
import threading
import uuid
from dataclasses import dataclass

import grpc
from apache_beam.portability.api import (
    beam_job_api_pb2,
    beam_job_api_pb2_grpc,
    beam_runner_api_pb2,
    endpoints_pb2,
)
from google.protobuf import struct_pb2

from reference_runner.backends import Backend
from reference_runner.graph.check import UnsupportedPipeline
from reference_runner.graph.plan import Plan
from reference_runner.jobserver.artifacts import StagingSessions
from reference_runner.jobserver.served_backends import BackendFor
from reference_runner.knobs import OptionError
from reference_runner.lifecycle import TERMINAL, JobRecord
from reference_runner.runner import ReferenceOptions

_LOG = logging.getLogger(__name__)
_JOB_IDS = itertools.count(1)
MAX_PREPARED = 1000  # preparations waiting for Run; a client cannot pile up more


@dataclass(frozen=True)
class PreparedJob:
    """What Prepare checked and planned, waiting for Run under its preparation id (the client
    stages its files in between)."""

    name: str  # the job name the client gave
    options: struct_pb2.Struct  # its pipeline options, as the client sent them
    backend: Backend  # chosen by the options
    plan: Plan  # made once, by backend.plan: Run runs this plan


class JobService(beam_job_api_pb2_grpc.JobServiceServicer):
    def __init__(
        self,
        sessions: StagingSessions,
        staging_endpoint: str,
        max_pipeline_bytes: int,
        backend_for: BackendFor,
        keep_finished: int = 100,
    ):
        """``backend_for(pipeline options)``: the backend (backends.py) a job runs on;
        ``keep_finished``: how many ended jobs still answer GetState, GetJobMetrics and the
        message stream (the oldest are forgotten, and their staged files deleted)."""
        self.backend_for = backend_for
        self.sessions = sessions
        self.staging_endpoint = staging_endpoint
        self.max_pipeline_bytes = max_pipeline_bytes
        self.keep_finished = keep_finished
        self.jobs: dict[str, JobRecord] = {}
        self._prepared: dict[str, PreparedJob] = {}  # by preparation id
        self._lock = threading.Lock()

    def Prepare(self, request, context):
        size = request.pipeline.ByteSize()
        if size > self.max_pipeline_bytes:
            context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"pipeline of {size} bytes is over the limit of {self.max_pipeline_bytes}",
            )
        try:
            # The front end runs here, once: Run runs this Plan on this backend.
            backend = self.backend_for(request.pipeline_options)
            plan = backend.plan(request.pipeline)
        except UnsupportedPipeline as e:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, _fit(str(e)))
        except OptionError as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"bad runner option: {e}")
        except Exception as e:  # noqa: BLE001 - a malformed pipeline, whatever is wrong with it
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, _fit(f"malformed pipeline: {type(e).__name__}: {e}"))
        preparation_id = f"{_slug(request.job_name)}-{uuid.uuid4().hex[:12]}"
        pipeline = beam_runner_api_pb2.Pipeline()
        pipeline.CopyFrom(request.pipeline)
        self.sessions.open(preparation_id, pipeline)
        with self._lock:
            self._prepared[preparation_id] = PreparedJob(request.job_name, request.pipeline_options, backend, plan)
            if len(self._prepared) > MAX_PREPARED:  # prepared and never run: forget the oldest
                oldest = next(iter(self._prepared))
                del self._prepared[oldest]
                self.sessions.remove(oldest)
        return beam_job_api_pb2.PrepareJobResponse(
            preparation_id=preparation_id,
            staging_session_token=preparation_id,
            artifact_staging_endpoint=endpoints_pb2.ApiServiceDescriptor(url=self.staging_endpoint),
        )

    def Run(self, request, context):
        with self._lock:
            prepared = self._prepared.pop(request.preparation_id, None)
        if prepared is None:
            context.abort(grpc.StatusCode.NOT_FOUND, f"no prepared job {request.preparation_id[:100]!r}")
        assert prepared is not None  # context.abort raised
        pipeline = self.sessions.pipeline(request.preparation_id, wait=60)
        assert pipeline is not None  # its session is closed or removed only with its preparation
        self.sessions.close(request.preparation_id)
        job_id = f"job-{next(_JOB_IDS)}-{_slug(prepared.name)}"  # the job's one id, which the client then uses
        job = JobRecord(
            job_id,
            prepared.name,
            prepared.backend,
            # staging rewrote the environments' dependencies to the files it staged
            prepared.plan.with_environments(pipeline.components.environments),
            pipeline=pipeline,
            options=prepared.options,
            preparation_id=request.preparation_id,
        )
        with self._lock:
            self.jobs[job.job_id] = job
            forgotten = self._forget_old_jobs()
        for old in forgotten:
            self.sessions.remove(old.preparation_id)
        job.start()
        return beam_job_api_pb2.RunJobResponse(job_id=job.job_id)

    def _forget_old_jobs(self) -> list[JobRecord]:
        """Ended jobs past the newest ``keep_finished``, taken out of ``jobs`` (under the lock)."""
        ended = [j for j in self.jobs.values() if j.state in TERMINAL]
        forgotten = ended[: max(0, len(ended) - self.keep_finished)]  # oldest first
        for job in forgotten:
            del self.jobs[job.job_id]
        return forgotten

    def GetJobs(self, request, context):
        with self._lock:
            jobs = list(self.jobs.values())
        return beam_job_api_pb2.GetJobsResponse(job_info=[j.info() for j in jobs])

    def GetState(self, request, context):
        job = self._job(request.job_id, context)
        return beam_job_api_pb2.JobStateEvent(
            state=job.state,
            timestamp=job.events[-1].state_response.timestamp if job.events[-1].HasField("state_response") else None,
        )

    def GetPipeline(self, request, context):
        return beam_job_api_pb2.GetJobPipelineResponse(pipeline=self._job(request.job_id, context).pipeline)

    def Cancel(self, request, context):
        job = self._job(request.job_id, context)
        job.cancel()
        return beam_job_api_pb2.CancelJobResponse(state=job.state)

    def Drain(self, request, context):
        job = self._job(request.job_id, context)
        job.drain()
        return beam_job_api_pb2.DrainJobResponse(state=job.state)

    def GetStateStream(self, request, context):
        job = self._job(request.job_id, context)
        for event in job.follow({"state"}, lambda: not context.is_active()):
            yield event.state_response

    def GetMessageStream(self, request, context):
        job = self._job(request.job_id, context)
        yield from job.follow({"state", "message"}, lambda: not context.is_active())

    def GetJobMetrics(self, request, context):
        return beam_job_api_pb2.GetJobMetricsResponse(metrics=self._job(request.job_id, context).metrics())

    def DescribePipelineOptions(self, request, context):
        return beam_job_api_pb2.DescribePipelineOptionsResponse(options=_describe_options())

    def _job(self, job_id: str, context) -> JobRecord:
        with self._lock:
            job = self.jobs.get(job_id)
        if job is None:
            context.abort(
                grpc.StatusCode.NOT_FOUND,
                f"no job {job_id[:100]!r} (this server keeps the last {self.keep_finished} ended jobs)",
            )
        assert job is not None  # context.abort raised
        return job


def _describe_options() -> list:
    import argparse

    parser = argparse.ArgumentParser(add_help=False)
    ReferenceOptions._add_argparse_args(parser)
    kinds: dict[object, beam_job_api_pb2.PipelineOptionType.Enum.ValueType] = {
        int: beam_job_api_pb2.PipelineOptionType.INTEGER,
        float: beam_job_api_pb2.PipelineOptionType.NUMBER,
    }
    return [
        beam_job_api_pb2.PipelineOptionDescriptor(
            name=action.dest,
            type=kinds.get(action.type, beam_job_api_pb2.PipelineOptionType.STRING),
            description=action.help or "",
            default_value="" if action.default is None else str(action.default),
            group="ReferenceOptions",
        )
        for action in parser._actions
    ]


MAX_ERROR_CHARS = 4000  # an error's details travel in a response header: Java's client takes 10 KiB at most


def _fit(text: str) -> str:
    """An error for a client, short enough for its headers (the whole text goes to the log)."""
    if len(text) <= MAX_ERROR_CHARS:
        return text
    _LOG.info("error sent to the client cut to %d characters; whole: %s", MAX_ERROR_CHARS, text)
    kept = text[:MAX_ERROR_CHARS].rsplit("\n", 1)[0]
    return f"{kept}\n  ... and {len(text) - len(kept)} more characters (the job server's log has them all)"


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in (name or "job"))[:40] or "job"


__all__ = ["JobService"]
