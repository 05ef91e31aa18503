"""Servers a benchmark starts in processes of its own, each listening on a free loopback port."""

from __future__ import annotations

import socket
import subprocess
import sys
import time


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_listening(
    command: str, env=None, log=subprocess.DEVNULL, timeout: float = 60, cwd=None
) -> tuple[subprocess.Popen, str]:
    """Starts `command` ({python} and {port} filled in) as the leader of a new process group and
    waits until it accepts connections. Returns the process and its address (localhost:PORT)."""
    port = free_port()
    process = subprocess.Popen(
        command.format(python=sys.executable, port=port).split(),
        env=env,
        stdout=log,
        stderr=log,
        start_new_session=True,
        cwd=cwd,
    )
    deadline = time.time() + timeout
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return process, f"localhost:{port}"
        if process.poll() is not None:
            raise RuntimeError(f"{command} exited with {process.returncode}")
        time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"{command} did not listen within {timeout:.0f} s")
