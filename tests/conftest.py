"""Fixtures shared by the kit's tests."""
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

pytest_plugins = ["pytester"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def worker_pool():
    """Beam's external worker pool in a process of its own (what EXTERNAL environments name)."""
    port = free_port()
    # The pool starts each worker as `python -c ...`: that must be this interpreter.
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
    process = subprocess.Popen([sys.executable, "-m", "apache_beam.runners.worker.worker_pool_main",
                                f"--service_port={port}"], stderr=subprocess.DEVNULL, env=env,
                               start_new_session=True)
    deadline = time.time() + 60
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.2)
    yield process, f"localhost:{port}"
    os.killpg(process.pid, signal.SIGKILL)  # the pool and the workers it started
    process.wait()
