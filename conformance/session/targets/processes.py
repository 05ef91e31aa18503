"""Processes a session starts and owns (a job server, a worker pool): free ports, waiting until
a gRPC server answers, and stopping a process with its children."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time

from conformance.session.targets.base import TargetUnavailable


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_serving(
    endpoint: str,
    timeout: float,
    process: subprocess.Popen | None = None,
    log_path: str | None = None,
    what: str = "Beam Job API server",
) -> None:
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
                    f"the {what} exited with code {process.returncode} before answering at "
                    f"{endpoint}; its output:\n{read_tail(log_path)}"
                )
            if time.monotonic() > deadline:
                raise TargetUnavailable(
                    f"no {what} answered at {endpoint} within {timeout:g}s (--job-server-timeout)"
                    + (f"; its output:\n{read_tail(log_path)}" if log_path else "")
                )


def refuse_unreachable(host: str, port: int, what: str = "Beam Job API server", connect_timeout: float = 5.0) -> None:
    """Raise at once when nothing can listen at HOST:PORT: a name that does not resolve, a refused
    connection, no route, or no answer to a TCP connect within ``connect_timeout``. Only a server
    that accepts the connection but does not yet answer gRPC is worth waiting for."""
    where = f"{host}:{port}"
    try:
        addresses = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        raise TargetUnavailable(f"no {what} can answer at {where}: the host name does not resolve ({e})") from None
    reasons = []
    for family, kind, proto, _, address in addresses:
        try:
            with socket.socket(family, kind, proto) as s:
                s.settimeout(connect_timeout)
                s.connect(address)
                return
        except ConnectionRefusedError:
            reasons.append("connection refused: nothing listens there")
        except TimeoutError:
            reasons.append(f"no answer to a TCP connect within {connect_timeout:g}s")
        except OSError as e:
            reasons.append(e.strerror or str(e))
    raise TargetUnavailable(f"no {what} answers at {where}: {reasons[0] if reasons else 'no address'}")


def read_tail(path: str | None, lines: int = 30) -> str:
    if not path:
        return "(none captured)"
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:]) or "(empty)"
    except OSError:
        return "(unreadable)"


def start_group(argv: list[str], log, what: str, cwd=None, env=None) -> subprocess.Popen:
    """Start ``argv`` as the leader of a new process group, output to ``log``; ``env``: its whole
    environment (default: this process's)."""
    try:
        return subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=cwd,
            env=env,
        )
    except OSError as e:
        raise TargetUnavailable(f"cannot start the {what} {argv!r}: {e}") from None


def stop_group(process: subprocess.Popen | None) -> None:
    """Stop a process started by ``start_group`` and everything it started (its group)."""
    if process is None or process.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue
