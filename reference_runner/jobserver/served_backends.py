"""The backends the job server runs jobs on, by name (``--backend``): one table, from which the
command line's choices and help, the server's setup and the refusal of an unknown name all come.

A served backend is set up in two steps: built before the server's gRPC server exists (Spark's
JVM starts then: launching it while gRPC's threads run sometimes kills it at birth, "Java
gateway process exited before sending its port number"), then ``connect``-ed to the running
server's parts, which gives the function from a job's pipeline options to its Backend."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import grpc
from google.protobuf import struct_pb2

from reference_runner.backends import Backend
from reference_runner.knobs import Knobs
from reference_runner.worker.pool import WorkerPool

BackendFor = Callable[[struct_pb2.Struct], Backend]  # a job's pipeline options -> the backend it runs on


@dataclass(frozen=True)
class ServerSettings:
    """The job server's settings a backend reads (each its own; the others ignore them)."""

    knobs: Knobs | None = None  # the reference backend's defaults; a job's options override them
    spark_master: str | None = None  # the Spark master every job shares


@dataclass(frozen=True)
class ServerParts:
    """What a backend takes from the running job server."""

    grpc_server: grpc.Server  # to add services of its own to (Spark's held workers)
    address: str  # the job server's Job API address
    pool: WorkerPool  # SDK workers of the jobs' environments
    fn_endpoint: str  # the Fn API server's address, which those workers connect to


class ServedBackend(Protocol):
    def connect(self, parts: ServerParts) -> BackendFor: ...


class _Reference:
    help = "the reference runner, each job's SDK workers from the server's worker pool"

    def __init__(self, settings: ServerSettings):
        self._knobs = settings.knobs

    def connect(self, parts: ServerParts) -> BackendFor:
        from reference_runner.executor.reference_backend import ReferenceBackend

        def backend_for(options: struct_pb2.Struct) -> Backend:  # each job's knobs
            knobs = Knobs.from_job_options(options, base=self._knobs)
            return ReferenceBackend(knobs, pool=parts.pool, fn_endpoint=parts.fn_endpoint)

        return backend_for


class _Spark:
    help = (
        "Spark: each executor starts workers of the job's environment, or runs Python user code "
        "in Spark's own Python workers where that is equivalent"
    )

    def __init__(self, settings: ServerSettings):
        from reference_runner.spark.session import get as get_session
        from reference_runner.spark.settings import SparkSettings

        self._settings = SparkSettings.parse({"master": settings.spark_master})
        get_session(self._settings.master)  # the JVM starts with the server, not with its first job

    def connect(self, parts: ServerParts) -> BackendFor:
        from reference_runner.spark.held_workers import Registry
        from reference_runner.spark.spark_backend import SparkBackend

        held = Registry()
        parts.grpc_server.add_generic_rpc_handlers((held.handler(),))

        def backend_for(options: struct_pb2.Struct) -> Backend:  # each job's --spark_* options
            return SparkBackend(self._settings.for_job(options), parts.address, held)

        return backend_for


# name -> how the job server serves it; the first is the default
BACKENDS: dict[str, type[_Reference] | type[_Spark]] = {"reference": _Reference, "spark": _Spark}
DEFAULT = next(iter(BACKENDS))


def build(name: str, settings: ServerSettings) -> ServedBackend:
    """The backend named ``name``, before the job server's gRPC server exists; an unknown name is
    refused, naming the known ones."""
    kind = BACKENDS.get(name)
    if kind is None:
        raise ValueError(f"unknown backend {name!r}: the job server serves {' and '.join(BACKENDS)}")
    return kind(settings)
