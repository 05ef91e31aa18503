"""SDK workers for jobs, as each pipeline's environment asks, reused across jobs when idle (the
job server's pool, and each Spark executor's).

- EXTERNAL (what Beam's LOOPBACK becomes): ask the client's worker pool to start a harness
  that connects back to our Fn API endpoint.
- PROCESS: start the given command with the standard boot flags.
- embedded Python: Beam's harness inside this server (user code must be importable here).
A worker serves one job and stops when it ends (a Beam harness tears DoFns down only when it
stops). To keep light jobs light, a spare worker is started when a job ends, ready for the next
job of that environment, but only for an environment that can serve again: a PROCESS command,
or an EXTERNAL pool that has already served an earlier job (a LOOPBACK pool, inside the client
and one per job, never has). The spare is asked for before the job reports its end: asked for
after, as the client was shutting its LOOPBACK pool down on seeing the end, it left gRPC's
channel to the pool half-closed, and grpcio 1.85's event engine then spun on that connection,
allocating some 250 MB a second until the server took the machine. (A LOOPBACK pool's port can
come again after a thousand jobs, so "served before" alone did not keep spares away from them.)
Spares are at most ``max_idle`` in all, and one idle for ``spare_idle_seconds`` is stopped.
"""

from __future__ import annotations

import collections
import hashlib
import itertools
import os
import subprocess
import threading
import time

import grpc
from apache_beam.portability import python_urns
from apache_beam.portability.api import beam_fn_api_pb2, beam_fn_api_pb2_grpc, beam_runner_api_pb2, endpoints_pb2

from reference_runner.worker.embedded import EmbeddedWorker
from reference_runner.worker.fnapi_server import Connection, FnApiServer
from reference_runner.worker.remote import RemoteWorker

EXTERNAL = "beam:env:external:v1"
PROCESS = "beam:env:process:v1"
DOCKER = "beam:env:docker:v1"
EMBEDDED = {python_urns.EMBEDDED_PYTHON, "beam:env:default:v1", ""}
_IDS = itertools.count(1)
_REMEMBERED_ENVIRONMENTS = 1024  # how many environments' job counts are kept (oldest forgotten)


class EnvironmentUnsupported(ValueError):
    pass


def environment_of(components: beam_runner_api_pb2.Components) -> beam_runner_api_pb2.Environment:
    """The one environment a pipeline's SDK transforms run in."""
    used = {t.environment_id for t in components.transforms.values() if t.environment_id and not t.subtransforms}
    if len(used) > 1:
        raise EnvironmentUnsupported(
            f"the pipeline uses {len(used)} environments ({', '.join(sorted(used))}); "
            "this runner runs one environment per job"
        )
    if not used:
        return beam_runner_api_pb2.Environment(urn=python_urns.EMBEDDED_PYTHON)
    return components.environments[used.pop()]


class _Started:
    """A started remote worker: its id, its connection once it called in, the process we own."""

    def __init__(self, worker_id: str, process: subprocess.Popen | None = None):
        self.worker_id = worker_id
        self.process = process
        self.connection: Connection | None = None
        self.idle_since = time.monotonic()


class WorkerPool:
    def __init__(
        self,
        server: FnApiServer,
        connect_timeout: float = 60,
        bundle_timeout: float = 600,
        max_idle: int = 4,
        spare_idle_seconds: float = 300,
        id_prefix: str = "worker-",
    ):
        self.server = server  # the workers' Fn API, provision included (their artifacts: its artifact_endpoint)
        self.connect_timeout = connect_timeout
        self.bundle_timeout = bundle_timeout
        self.max_idle = max_idle
        self.spare_idle_seconds = spare_idle_seconds
        self.id_prefix = id_prefix  # worker ids must differ between processes sharing a worker pool
        self._idle: dict[bytes, list[_Started]] = {}
        self._all: list[_Started] = []
        self._jobs_served: collections.OrderedDict[bytes, int] = collections.OrderedDict()
        self._lock = threading.Lock()

    def acquire(self, env: beam_runner_api_pb2.Environment, state, on_log=None):
        """A worker for one job, serving ``state``, its log entries going to ``on_log``; give it
        back with ``release``."""
        if env.urn in EMBEDDED:
            return EmbeddedWorker(state), None
        if env.urn == DOCKER:
            raise EnvironmentUnsupported(
                "DOCKER environments are not supported by this job server "
                "(no container runtime); use LOOPBACK, EXTERNAL or PROCESS"
            )
        if env.urn not in (EXTERNAL, PROCESS):
            raise EnvironmentUnsupported(
                f"environment {env.urn} is not supported "
                f"(supported: {EXTERNAL}, {PROCESS}, {python_urns.EMBEDDED_PYTHON})"
            )
        key = hashlib.sha1(env.SerializeToString(deterministic=True)).digest()
        self._stop_stale_spares()
        with self._lock:
            self._jobs_served[key] = self._jobs_served.pop(key, 0) + 1
            while len(self._jobs_served) > _REMEMBERED_ENVIRONMENTS:
                self._jobs_served.popitem(last=False)
        while True:
            with self._lock:
                started = self._idle.get(key, []).pop() if self._idle.get(key) else None
            if started is None:
                started = self._start(env)
            try:
                started.connection = self.server.connection(started.worker_id, self.connect_timeout)
            except TimeoutError:
                self._discard(started)
                raise
            if started.connection.gone:  # died while idle: start another
                self._discard(started)
                continue
            if on_log is not None:
                self.server.log_sinks[started.worker_id] = on_log
            return RemoteWorker(self.server, started.connection, state, self.bundle_timeout), (key, started)

    def release(self, token, env, healthy: bool) -> None:
        """A job is done with its worker. The worker stops (its harness tears the job's DoFns
        down), and, for an environment that can serve again, a fresh spare is started in the
        background, so that its next job does not wait for a worker to start."""
        if token is None:
            return
        key, started = token
        self._discard(started)
        if healthy and self.max_idle > 0 and self._serves_again(key, env):
            # Asked for now, before the job reports its end: a client that stops its pool once
            # it sees the end must not do so in the middle of this call (see the module's doc).
            try:
                spare = self._start(env)
            except Exception:  # noqa: BLE001 - e.g. a pool that has gone away: no spare
                return
            threading.Thread(target=self._keep_spare, args=(key, spare), daemon=True).start()

    def _serves_again(self, key: bytes, env) -> bool:
        """A PROCESS command can always start another worker; an EXTERNAL pool is known to
        outlive its jobs once a second job has used it (a LOOPBACK pool never sees one)."""
        if env.urn == PROCESS:
            return True
        with self._lock:
            return self._jobs_served.get(key, 0) >= 2

    def _stop_stale_spares(self) -> None:
        cutoff = time.monotonic() - self.spare_idle_seconds
        self._stop_spares(lambda idle: [(k, s) for k, s in idle if s.idle_since < cutoff])

    def _keep_spare(self, key: bytes, started: _Started) -> None:
        try:
            started.connection = self.server.connection(started.worker_id, self.connect_timeout)
        except Exception:  # noqa: BLE001 - it never called in: no spare
            self._discard(started)  # (one that connects late is turned away)
            return
        started.idle_since = time.monotonic()
        with self._lock:
            self._idle.setdefault(key, []).append(started)
        self._stop_spares(lambda idle: idle[: max(0, len(idle) - self.max_idle)])  # oldest first

    def _stop_spares(self, choose) -> None:
        """Stop the idle spares that ``choose`` picks from the list of all of them ((environment
        key, spare) pairs, by environment, the oldest first within each)."""
        with self._lock:
            chosen = choose([(k, s) for k, workers in self._idle.items() for s in workers])
            for k, s in chosen:
                self._idle[k].remove(s)
                if not self._idle[k]:
                    del self._idle[k]
        for _, s in chosen:
            self._discard(s)

    def _start(self, env: beam_runner_api_pb2.Environment) -> _Started:
        worker_id = f"{self.id_prefix}{next(_IDS)}"
        if env.urn == EXTERNAL:
            payload = beam_runner_api_pb2.ExternalPayload.FromString(env.payload)
            with grpc.insecure_channel(payload.endpoint.url) as channel:
                response = beam_fn_api_pb2_grpc.BeamFnExternalWorkerPoolStub(channel).StartWorker(
                    beam_fn_api_pb2.StartWorkerRequest(
                        worker_id=worker_id,
                        params=payload.params,
                        control_endpoint=endpoints_pb2.ApiServiceDescriptor(url=self.server.address),
                        logging_endpoint=endpoints_pb2.ApiServiceDescriptor(url=self.server.address),
                        artifact_endpoint=endpoints_pb2.ApiServiceDescriptor(url=self.server.artifact_endpoint),
                        provision_endpoint=endpoints_pb2.ApiServiceDescriptor(url=self.server.address),
                    ),
                    timeout=self.connect_timeout,
                )
            if response.error:
                raise EnvironmentUnsupported(
                    f"the worker pool at {payload.endpoint.url} could not start a worker: {response.error}"
                )
            started = _Started(worker_id)
        else:
            payload = beam_runner_api_pb2.ProcessPayload.FromString(env.payload)
            command = [
                payload.command,
                f"--id={worker_id}",
                f"--control_endpoint={self.server.address}",
                f"--logging_endpoint={self.server.address}",
                f"--artifact_endpoint={self.server.artifact_endpoint}",
                f"--provision_endpoint={self.server.address}",
            ]
            try:
                process = subprocess.Popen(
                    command,
                    env={**os.environ, **payload.env, "WORKER_ID": worker_id},
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
            except OSError as e:
                raise EnvironmentUnsupported(f"cannot start PROCESS worker {payload.command!r}: {e}") from None
            started = _Started(worker_id, process)
        with self._lock:
            self._all.append(started)
        return started

    def _discard(self, started: _Started) -> None:
        """Stop a worker: ending its control stream makes a Beam harness exit."""
        if started.connection is not None:
            started.connection.lost("the job server released this worker")
        self.server.forget(started.worker_id)  # and turn it away if it connects only now
        self.server.log_sinks.pop(started.worker_id, None)
        if started.process is not None and started.process.poll() is None:
            started.process.kill()
        with self._lock:
            if started in self._all:
                self._all.remove(started)

    def close(self) -> None:
        with self._lock:
            everything, self._all, self._idle = list(self._all), [], {}
        for started in everything:
            self._discard(started)


__all__ = ["WorkerPool", "EnvironmentUnsupported", "environment_of"]
