"""The job server: Job API, artifact staging and retrieval, provisioning and the Fn API, on loopback."""

from __future__ import annotations

import logging
import os
import tempfile
from concurrent import futures

import grpc
from apache_beam.portability.api import beam_artifact_api_pb2_grpc, beam_job_api_pb2_grpc

from reference_runner.jobserver import served_backends
from reference_runner.jobserver.artifacts import RetrievalService, StagingService, StagingSessions
from reference_runner.jobserver.service import JobService
from reference_runner.knobs import Knobs
from reference_runner.worker.fnapi_server import PERMIT_CLIENT_KEEPALIVE, FnApiServer
from reference_runner.worker.pool import WorkerPool

_LOG = logging.getLogger(__name__)
MiB = 1 << 20


class JobServer:
    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 8099,
        staging_dir: str | None = None,
        max_pipeline_bytes: int = 64 * MiB,
        max_artifact_bytes: int = 1024 * MiB,
        worker_timeout: float = 60,
        bundle_timeout: float = 600,
        spare_workers: int = 4,
        backend: str = served_backends.DEFAULT,
        spark_master: str | None = None,
        keep_jobs: int = 100,
        spare_idle_seconds: float = 300,
        knobs: Knobs | None = None,
    ):
        # before any gRPC server exists (served_backends.py says why)
        served = served_backends.build(backend, served_backends.ServerSettings(knobs, spark_master))
        self._tmp = None
        if not staging_dir:
            self._tmp = tempfile.TemporaryDirectory(prefix="reference-staging-")
            staging_dir = self._tmp.name
        self.staging_dir = staging_dir
        os.makedirs(self.staging_dir, exist_ok=True)
        self.fn = FnApiServer(host)
        # Messages may carry a whole pipeline or an artifact chunk; anything larger is refused by gRPC.
        limit = max(max_pipeline_bytes, 4 * MiB) + MiB
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=64),
            options=[("grpc.max_receive_message_length", limit), ("grpc.max_send_message_length", limit)]
            + PERMIT_CLIENT_KEEPALIVE,
        )
        self.port = self._server.add_insecure_port(f"{host}:{port}")
        if not self.port:
            raise OSError(f"cannot listen on {host}:{port}")
        self.address = f"{host}:{self.port}"
        sessions = StagingSessions(self.staging_dir, max_artifact_bytes)
        self.fn.artifact_endpoint = self.address
        self.pool = WorkerPool(
            self.fn,
            connect_timeout=worker_timeout,
            bundle_timeout=bundle_timeout,
            max_idle=spare_workers,
            spare_idle_seconds=spare_idle_seconds,
        )
        parts = served_backends.ServerParts(self._server, self.address, self.pool, self.fn.address)
        self.jobs = JobService(
            sessions,
            staging_endpoint=self.address,
            max_pipeline_bytes=max_pipeline_bytes,
            backend_for=served.connect(parts),
            keep_finished=keep_jobs,
        )
        beam_job_api_pb2_grpc.add_JobServiceServicer_to_server(self.jobs, self._server)
        beam_artifact_api_pb2_grpc.add_ArtifactStagingServiceServicer_to_server(StagingService(sessions), self._server)
        beam_artifact_api_pb2_grpc.add_ArtifactRetrievalServiceServicer_to_server(
            RetrievalService(self.staging_dir), self._server
        )

    def start(self) -> JobServer:
        self._server.start()
        _LOG.info("job server listening on %s (Fn API on %s)", self.address, self.fn.address)
        return self

    def wait(self) -> None:
        self._server.wait_for_termination()

    def stop(self) -> None:
        self._server.stop(grace=1).wait()
        self.pool.close()
        self.fn.stop()
        if self._tmp is not None:
            self._tmp.cleanup()
