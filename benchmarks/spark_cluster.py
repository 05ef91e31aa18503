"""A Spark standalone cluster on loopback: one master and N workers, started from the pyspark
distribution's bin/spark-class (SPARK_HOME, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP=127.0.0.1),
and stopped on the way out. The scale benchmark and tests/test_spark_cluster.py run on it.

    with standalone_cluster(workers=2, cores=1) as master:   # spark://127.0.0.1:PORT
        ...
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator

from benchmarks.processes import free_port


def _spark_class() -> tuple[str, str]:
    import pyspark

    home = os.path.dirname(pyspark.__file__)
    return home, os.path.join(home, "bin", "spark-class")


def _tail(path: str, lines: int = 20) -> str:
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return ""


def _wait_for_port(port: int, process: subprocess.Popen, what: str, log: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode}; its log ends:\n{_tail(log)}")
        time.sleep(0.3)
    raise RuntimeError(f"{what} did not listen on {port} within {timeout:.0f} s; its log ends:\n{_tail(log)}")


def _alive_workers(ui_port: int) -> int:
    """Workers the master lists as ALIVE, from its web UI's JSON."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as answer:
            state = json.load(answer)
    except (OSError, ValueError):
        return 0
    return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")


@contextlib.contextmanager
def standalone_cluster(workers: int = 2, cores: int = 1, memory: str = "2g", timeout: float = 90) -> Iterator[str]:
    """Start a master and ``workers`` workers of ``cores`` cores each on 127.0.0.1; yields the
    master's URL once every worker has registered. Each daemon leads a process group of its own
    (an executor and its Python workers are started by a worker, in its group), and each group
    is stopped on exit: SIGTERM, then SIGKILL after a few seconds."""
    home, spark_class = _spark_class()
    scratch = tempfile.mkdtemp(prefix="spark-standalone-")
    env = {
        **os.environ,
        "SPARK_HOME": home,
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_WORKER_DIR": os.path.join(scratch, "work"),
    }
    started: list[tuple[str, subprocess.Popen]] = []

    def start(name: str, arguments: list[str]) -> tuple[subprocess.Popen, str]:
        log = os.path.join(scratch, f"{name}.log")
        with open(log, "wb") as out:
            process = subprocess.Popen(
                [spark_class, *arguments],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        started.append((name, process))
        return process, log

    port, ui_port = free_port(), free_port()
    ready = False  # the logs are kept (and named in the error) when the cluster did not start
    try:
        master, master_log = start(
            "master",
            ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port)]
            + ["--webui-port", str(ui_port)],
        )
        _wait_for_port(port, master, "the Spark master", master_log, timeout)
        url = f"spark://127.0.0.1:{port}"
        for n in range(workers):
            start(
                f"worker-{n}",
                ["org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1", "--cores", str(cores)]
                + ["--memory", memory, "--webui-port", str(free_port())],
            )
        deadline = time.monotonic() + timeout
        while _alive_workers(ui_port) < workers:
            for name, process in started:
                if process.poll() is not None:
                    raise RuntimeError(f"{name} exited with {process.returncode} (logs in {scratch})")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{workers} workers did not register within {timeout:.0f} s (logs in {scratch})")
            time.sleep(0.3)
        ready = True
        yield url
    finally:
        for _, process in reversed(started):
            _stop_group(process)
        if ready:
            shutil.rmtree(scratch, ignore_errors=True)


def _stop_group(process: subprocess.Popen, grace: float = 5) -> None:
    """SIGTERM to the daemon's process group, then SIGKILL to whatever of it is left (a worker's
    executor and Python workers are in its group and may outlive it)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break  # nothing of the group is left
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            pass
    process.wait()
