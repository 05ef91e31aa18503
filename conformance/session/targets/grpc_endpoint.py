"""Any runner reachable through the Beam Job API: ``grpc://HOST:PORT``.

Pipelines are submitted with Beam's PortableRunner. With ``--job-server-cmd`` the
target starts the job server itself on a free loopback port (``{port}`` in the
command is replaced), waits until it answers and stops it at the end of the session.
EXTERNAL and PROCESS environments without a config get SDK workers from the session
(``workers.py``), for runners that cannot reach a LOOPBACK worker.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import tempfile
from collections.abc import Callable

from conformance.authoring import shapes
from conformance.session.targets.base import Target, TargetUnavailable
from conformance.session.targets.processes import (
    free_port,
    read_tail,
    refuse_unreachable,
    start_group,
    stop_group,
    wait_until_serving,
)
from conformance.session.targets.workers import WorkerPoolProcess, write_boot_command


class JobServerProcess:
    """A job server the session started, owned by process id and stopped with its children."""

    def __init__(self, argv_for_port: Callable[[int], list[str]], timeout: float):
        self.port = free_port()
        self.endpoint = f"127.0.0.1:{self.port}"
        self.argv = argv_for_port(self.port)
        self.timeout = timeout
        self.process = None
        self.log = tempfile.NamedTemporaryFile(prefix="job-server-", suffix=".log", delete=False)

    def start(self) -> None:
        self.process = start_group(self.argv, self.log, "job server")
        try:
            wait_until_serving(self.endpoint, self.timeout, self.process, self.log.name, "job server")
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        stop_group(self.process)

    def exit_code(self) -> int | None:
        """None while it runs; its exit code once it has exited."""
        return None if self.process is None else self.process.poll()


# HOST:PORT, the host a name, an IPv4 address or a bracketed IPv6 address
_ENDPOINT = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9][A-Za-z0-9.-]*):(\d{1,5})$")


def checked_endpoint(endpoint: str) -> str:
    """``endpoint`` if it is HOST:PORT; refused at once, naming what is wrong, rather than
    waited on for --job-server-timeout seconds as if a server might answer there."""
    found = _ENDPOINT.match(endpoint)
    if found is None or not 0 < int(found.group(2)) < 65536:
        raise TargetUnavailable(
            f"grpc://{endpoint} is not a Job API endpoint: give grpc://HOST:PORT, PORT a number from 1 "
            "to 65535 (e.g. grpc://localhost:8099, grpc://[::1]:8099)"
        )
    return endpoint


class GrpcTarget(Target):
    """any Beam Job API endpoint: grpc://HOST:PORT, or grpc with --job-server-cmd"""

    name = "grpc"  # a session names its endpoint too: grpc-HOST-PORT
    in_process_worker = False

    def __init__(self, spec, settings):
        super().__init__(spec, settings)
        # "grpc" alone: the endpoint comes from the job server this session starts.
        self.endpoint = checked_endpoint(spec[len("grpc://") :]) if spec.startswith("grpc://") else ""
        if settings.job_server_cmd and "{port}" not in settings.job_server_cmd:
            raise TargetUnavailable(f"--job-server-cmd must contain {{port}}: {settings.job_server_cmd!r}")
        if not self.endpoint and not self.starts_job_server():
            raise TargetUnavailable("target grpc needs an endpoint (grpc://HOST:PORT) or --job-server-cmd")
        self.server: JobServerProcess | None = None
        self.pool: WorkerPoolProcess | None = None
        self._boot_dir: str | None = None
        self.environment_type = settings.environment_type.upper()
        self.environment_config = settings.environment_config
        self.name = "grpc-" + self.endpoint.replace(":", "-") if self.endpoint else "grpc"
        # A LOOPBACK worker runs inside this process, so checks confirm in process too.
        self.in_process_worker = self.environment_type == "LOOPBACK"

    def preflight(self) -> None:
        """An endpoint given as grpc://HOST:PORT: refused at once when nothing can listen there;
        waited on for --job-server-timeout only when a server accepts connections but does not
        answer yet. (A job server this session starts is waited on when it starts.)"""
        if self.starts_job_server():
            return
        host, port = self.endpoint.rsplit(":", 1)
        refuse_unreachable(host, int(port))
        wait_until_serving(self.endpoint, self.settings.job_server_timeout)

    def start(self) -> None:
        try:
            self._provide_workers()
            if self.starts_job_server():
                self.server = JobServerProcess(self.job_server_argv, self.settings.job_server_timeout)
                self.server.start()
                self.endpoint = self.server.endpoint
            else:
                wait_until_serving(self.endpoint, self.settings.job_server_timeout)
        except BaseException:
            self.stop()
            raise

    def ensure_running(self) -> None:
        if self.server is None or self.server.exit_code() is None:
            return
        # it died during an earlier case (whose failure says so): a fresh one for the next
        self.server.stop()
        self.server = JobServerProcess(self.job_server_argv, self.settings.job_server_timeout)
        self.server.start()
        self.endpoint = self.server.endpoint

    def explain_failure(self, error_text: str) -> str | None:
        if self.server is None or self.server.exit_code() is None:
            return None
        return (
            f"the job server exited with code {self.server.exit_code()} while this case ran (the session "
            f"restarts it for the next case); the end of its log ({self.server.log.name}):\n"
            + read_tail(self.server.log.name, 20)
        )

    def starts_job_server(self) -> bool:
        """Does the session start (and stop) this target's job server?"""
        return bool(self.settings.job_server_cmd)

    def job_server_argv(self, port: int) -> list[str]:
        """The command that serves the Job API on ``port`` (here: --job-server-cmd)."""
        assert self.settings.job_server_cmd is not None
        return shlex.split(self.settings.job_server_cmd.replace("{port}", str(port)))

    def _provide_workers(self) -> None:
        """EXTERNAL or PROCESS without a config: workers from this session (see workers.py)."""
        if self.environment_config or self.environment_type not in ("EXTERNAL", "PROCESS"):
            return
        self._boot_dir = tempfile.mkdtemp(prefix="beam-conformance-boot-")
        boot = write_boot_command(self._boot_dir)
        if self.environment_type == "PROCESS":
            self.environment_config = json.dumps({"command": boot})
            return
        self.pool = WorkerPoolProcess(
            self.settings.worker_pool_host, self.settings.worker_pool_port, self.settings.job_server_timeout, boot
        ).start()
        self.environment_config = self.pool.address

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
        if self.pool is not None:
            self.pool.stop()
        if self._boot_dir is not None:
            shutil.rmtree(self._boot_dir, ignore_errors=True)

    def beam_runner(self):
        from apache_beam.runners.portability.portable_runner import PortableRunner

        return PortableRunner()

    def run_shaped(self, pipeline, shape):
        # PortableRunner pre-optimizes before submitting, as its users' clients do
        shapes.ask_for(pipeline.options, shape)
        return pipeline.run()

    def option_args(self, streaming: bool) -> list[str]:
        args = [f"--job_endpoint={self.endpoint}", f"--environment_type={self.environment_type}"]
        if self.environment_config:
            args.append(f"--environment_config={self.environment_config}")
        return args + super().option_args(streaming)

    def sdk_job_endpoint(self) -> str:
        return self.endpoint

    def describe(self) -> dict:
        info = super().describe()
        info.update(endpoint=self.endpoint, environment_type=self.environment_type)
        if self.settings.job_server_cmd:
            info["job_server_cmd"] = self.settings.job_server_cmd
        if self.pool is not None:
            info["worker_pool"] = self.pool.address
        elif self.environment_config:
            info["environment_config"] = self.environment_config
        return info
