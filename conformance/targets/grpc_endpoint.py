"""Any runner reachable through the Beam Job API: ``grpc://HOST:PORT``.

Pipelines are submitted with Beam's PortableRunner. With ``--job-server-cmd`` the
target starts the job server itself on a free loopback port (``{port}`` in the
command is replaced), waits until it answers and stops it at the end of the session.
"""
from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import tempfile
import time

from conformance import shapes
from conformance.targets.base import Target, TargetUnavailable


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_serving(endpoint: str, timeout: float, process: subprocess.Popen | None = None,
                       log_path: str | None = None) -> None:
    """Block until a gRPC server answers at ``endpoint``; explain clearly if it never does."""
    import grpc

    deadline = time.monotonic() + timeout
    with grpc.insecure_channel(endpoint) as channel:
        ready = grpc.channel_ready_future(channel)
        while True:
            try:
                ready.result(timeout=0.25)
                return
            except grpc.FutureTimeoutError:
                pass
            if process is not None and process.poll() is not None:
                raise TargetUnavailable(
                    f"the job server exited with code {process.returncode} before answering at "
                    f"{endpoint}; its output:\n{_read_tail(log_path)}")
            if time.monotonic() > deadline:
                raise TargetUnavailable(
                    f"no Beam Job API server answered at {endpoint} within {timeout:g}s"
                    + (f"; job server output:\n{_read_tail(log_path)}" if log_path else ""))


def _read_tail(path: str | None, lines: int = 30) -> str:
    if not path:
        return "(none captured)"
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:]) or "(empty)"
    except OSError:
        return "(unreadable)"


class JobServerProcess:
    """A job server the session started, owned by process id and stopped with its children."""

    def __init__(self, command: str, timeout: float):
        if "{port}" not in command:
            raise TargetUnavailable(f"--job-server-cmd must contain {{port}}: {command!r}")
        self.port = free_port()
        self.endpoint = f"127.0.0.1:{self.port}"
        self.argv = shlex.split(command.replace("{port}", str(self.port)))
        self.timeout = timeout
        self.process: subprocess.Popen | None = None
        self.log = tempfile.NamedTemporaryFile(prefix="job-server-", suffix=".log", delete=False)

    def start(self) -> None:
        try:
            self.process = subprocess.Popen(self.argv, stdout=self.log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as e:
            raise TargetUnavailable(f"cannot start job server {self.argv!r}: {e}") from None
        try:
            wait_until_serving(self.endpoint, self.timeout, self.process, self.log.name)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        pgid = self.process.pid  # start_new_session made it the leader of its own group
        for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
            try:
                os.killpg(pgid, sig)
            except ProcessLookupError:
                return
            try:
                self.process.wait(wait)
                return
            except subprocess.TimeoutExpired:
                continue


class GrpcTarget(Target):
    in_process_worker = False

    def __init__(self, spec, settings):
        super().__init__(spec, settings)
        # "grpc" alone: the endpoint comes from the job server this session starts.
        self.endpoint = spec[len("grpc://"):] if spec.startswith("grpc://") else ""
        if not self.endpoint and not settings.job_server_cmd:
            raise TargetUnavailable("target grpc needs an endpoint (grpc://HOST:PORT) or --job-server-cmd")
        self.server: JobServerProcess | None = None
        self.name = "grpc-" + self.endpoint.replace(":", "-") if self.endpoint else "grpc"
        # A LOOPBACK worker runs inside this process, so checks confirm in process too.
        self.in_process_worker = settings.environment_type.upper() == "LOOPBACK"

    def start(self) -> None:
        if self.settings.job_server_cmd:
            self.server = JobServerProcess(self.settings.job_server_cmd, self.settings.job_server_timeout)
            self.server.start()
            self.endpoint = self.server.endpoint
        else:
            wait_until_serving(self.endpoint, self.settings.job_server_timeout)

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()

    def runner(self):
        from apache_beam.runners.portability.portable_runner import PortableRunner
        return PortableRunner()

    def run_shaped(self, pipeline, shape):
        # PortableRunner pre-optimizes before submitting, as its users' clients do
        shapes.ask_for(pipeline.options, shape)
        return pipeline.run()

    def option_args(self, streaming: bool) -> list[str]:
        args = [f"--job_endpoint={self.endpoint}", f"--environment_type={self.settings.environment_type}"]
        if self.settings.environment_config:
            args.append(f"--environment_config={self.settings.environment_config}")
        return args + super().option_args(streaming)

    def describe(self) -> dict:
        info = super().describe()
        info.update(endpoint=self.endpoint, environment_type=self.settings.environment_type,
                    job_server_cmd=self.settings.job_server_cmd)
        return info
