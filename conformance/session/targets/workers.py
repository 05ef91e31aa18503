"""SDK workers the session provides for a runner that cannot reach a LOOPBACK worker.

LOOPBACK starts a worker pool inside the test process on ``localhost``; a job server in a
container, another network namespace or on another host then dials its own loopback and
finds nothing. Instead:

- EXTERNAL without a config: the session starts Beam's own worker pool entry point
  (``apache_beam.runners.worker.worker_pool_main``) listening on every interface, and tells
  the runner to reach it at ``--worker-pool-host``:PORT. The pool starts each worker with the
  kit's boot command, so workers run this interpreter (with the kit and the cases importable).
- PROCESS without a config: the runner starts the kit's boot command itself (it must run on a
  machine that has this interpreter at the same path).

The boot command accepts the standard boot flags (--id, --control_endpoint, ...) and starts
Beam's Python SDK harness (``reference_runner.worker.boot``).
"""

from __future__ import annotations

import os
import shlex
import sys
import tempfile

from conformance.session.targets.processes import free_port, start_group, stop_group, wait_until_serving


def write_boot_command(directory: str) -> str:
    """An executable that starts a Python SDK worker with the standard boot flags."""
    path = os.path.join(directory, "beam-conformance-boot")
    with open(path, "w") as f:
        # stdout goes to stderr: Beam's worker pool pipes a worker's stdout and never reads it
        f.write(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m reference_runner.worker.boot "$@" 1>&2\n')
    os.chmod(path, 0o755)
    return path


class WorkerPoolProcess:
    """Beam's worker pool, run for the session and stopped (with its workers) at the end."""

    def __init__(self, host: str, port: int, timeout: float, boot_command: str):
        self.port = port or free_port()
        self.address = f"{host}:{self.port}"
        self.timeout = timeout
        self.argv = [
            sys.executable,
            "-m",
            "apache_beam.runners.worker.worker_pool_main",
            f"--service_port={self.port}",
            f"--container_executable={boot_command}",
        ]
        self.process = None
        self.log = tempfile.NamedTemporaryFile(prefix="worker-pool-", suffix=".log", delete=False)

    def start(self) -> WorkerPoolProcess:
        self.process = start_group(self.argv, self.log, "SDK worker pool")
        try:
            # it listens on every interface; this process reaches it on loopback
            wait_until_serving(f"127.0.0.1:{self.port}", self.timeout, self.process, self.log.name, "SDK worker pool")
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        stop_group(self.process)  # the pool and the workers it started
