"""SDK workers for a runner that cannot reach a LOOPBACK worker: our job server runs in a network
namespace of its own (as in a container without the host network), so its loopback is not ours.
LOOPBACK must fail there (the negative control); EXTERNAL, with the worker pool the session
starts, must pass. PROCESS, with the kit's boot command, is checked against a local job server."""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile

import pytest

from conformance.session.targets.processes import start_group, stop_group, wait_until_serving
from conformance.session.targets.workers import WorkerPoolProcess, write_boot_command
from conformance.targets import TargetUnavailable
from suite_run import suite_command

# A small batch selection touching each kind of work a remote worker does: ParDo, side inputs,
# GroupByKey with merging windows, state, timers, a splittable DoFn, metrics reported over the
# Job API and a user exception surfacing from the worker. (The whole batch suite passes this way
# too; it takes several minutes, so it is run by hand.)
BATCH_SELECTION = " or ".join(
    [
        "test_map_applies_function_to_every_element",
        "test_singleton_value_seen_by_every_element",
        "test_sessions_merge_per_key_only",
        "test_bag_accumulates_all_values_with_duplicates",
        "test_event_time_timer_in_global_window",
        "test_offset_range_split_in_pieces_emits_every_offset_once",
        "test_counter_counts_processed_elements",
        "test_exception_in_process_fails_job_with_message",
    ]
)
SELECTED = 8
REQUIRED = os.environ.get("BEAM_CONFORMANCE_REQUIRE_NETNS") == "1"


def _ip(*args, namespace=None):
    prefix = ["ip", "netns", "exec", namespace] if namespace else []
    done = subprocess.run(prefix + ["ip", *args], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise OSError(f"ip {' '.join(args)}: {done.stderr.strip()}")


class Namespace:
    """A network namespace joined to this one by a veth pair on a /30 of its own."""

    def __init__(self):
        pid = os.getpid()
        self.name = f"bcx{pid}"
        third, fourth = (pid // 64) % 256, (pid % 64) * 4
        self.host_ip = f"10.250.{third}.{fourth + 1}"  # this side, where the worker pool listens
        self.inside_ip = f"10.250.{third}.{fourth + 2}"  # the job server's side
        self.created = False

    def create(self):
        host, inside = f"{self.name}a", f"{self.name}b"
        _ip("netns", "add", self.name)
        self.created = True
        _ip("link", "set", "lo", "up", namespace=self.name)  # its own loopback, as a container has
        _ip("link", "add", host, "type", "veth", "peer", "name", inside)
        _ip("link", "set", inside, "netns", self.name)
        _ip("addr", "add", f"{self.host_ip}/30", "dev", host)
        _ip("link", "set", host, "up")
        _ip("addr", "add", f"{self.inside_ip}/30", "dev", inside, namespace=self.name)
        _ip("link", "set", inside, "up", namespace=self.name)

    def delete(self):
        if self.created:
            subprocess.run(["ip", "netns", "del", self.name], capture_output=True)  # takes the veth pair along
            subprocess.run(["ip", "link", "del", f"{self.name}a"], capture_output=True)


@pytest.fixture(scope="module")
def isolated_job_server():
    """Our job server in its own network namespace: grpc://INSIDE_IP:PORT, and this machine's
    address as the namespace sees it."""
    if shutil.which("ip") is None or os.geteuid() != 0:
        reason = "needs root and iproute2 (apt-get install iproute2) to make a network namespace"
        if REQUIRED:
            pytest.fail(reason)
        pytest.skip(reason)
    ns = Namespace()
    try:
        ns.create()
    except OSError as e:
        ns.delete()
        if REQUIRED:
            pytest.fail(f"cannot make a network namespace: {e}")
        pytest.skip(f"cannot make a network namespace here: {e}")
    port = 8099
    log = tempfile.NamedTemporaryFile(prefix="ns-job-server-", suffix=".log", delete=False)
    server = start_group(
        [
            "ip",
            "netns",
            "exec",
            ns.name,
            sys.executable,
            "-m",
            "reference_runner.jobserver",
            "--host",
            ns.inside_ip,
            "--port",
            str(port),
            "--spare-workers",
            "2",
        ],
        log,
        "job server",
    )
    try:
        wait_until_serving(f"{ns.inside_ip}:{port}", 60, server, log.name, "job server")
        yield f"grpc://{ns.inside_ip}:{port}", ns.host_ip
    finally:
        stop_group(server)
        ns.delete()


def _suite(tmp_path, target, *args):
    command = suite_command(
        tmp_path,
        "--target",
        target,
        "--target-name",
        "isolated",
        "--expectations",
        "none",
        "--show-capture=no",
        "--tb=short",
        *args,
    )
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    doc = json.loads((tmp_path / "results-isolated.json").read_text())
    return done, {c["id"]: c for c in doc["cases"]}, doc


def test_loopback_cannot_reach_a_job_server_in_another_namespace(isolated_job_server, tmp_path):
    endpoint, _ = isolated_job_server
    done, cases, _ = _suite(tmp_path, endpoint, "-k", "test_map_applies_function_to_every_element")
    assert done.returncode == 1, done.stdout[-2000:]
    [case] = cases.values()
    # the job server dialled the worker pool LOOPBACK left on *its own* loopback
    assert case["outcome"] == "failed" and "127.0.0.1" in case["message"] and "Connection refused" in case["message"], (
        case["message"]
    )


def test_external_worker_pool_runs_batch_cases_for_a_job_server_in_another_namespace(isolated_job_server, tmp_path):
    endpoint, host_ip = isolated_job_server
    done, cases, doc = _suite(
        tmp_path,
        endpoint,
        "--environment-type",
        "EXTERNAL",
        "--worker-pool-host",
        host_ip,
        "-m",
        "not streaming",
        "-k",
        BATCH_SELECTION,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert len(cases) == SELECTED and {c["outcome"] for c in cases.values()} == {"passed"}, cases.keys()
    assert doc["target_info"]["worker_pool"].startswith(host_ip + ":")
    # the session stopped the worker pool it started
    port = doc["target_info"]["worker_pool"].rsplit(":", 1)[1]
    alive = subprocess.run(["pgrep", "-f", f"worker_pool_main --service_port={port}"], capture_output=True)
    assert alive.returncode == 1, alive.stdout


def test_process_environment_uses_the_kits_boot_command(tmp_path):
    job_server = f"{sys.executable} -m reference_runner.jobserver --port {{port}}"
    command = [
        sys.executable,
        "-m",
        "pytest",
        "--pyargs",
        "conformance",
        "--target",
        "grpc",
        "--target-name",
        "process-env",
        "--job-server-cmd",
        job_server,
        "--environment-type",
        "PROCESS",
        "--expectations",
        "none",
        "-p",
        "no:cacheprovider",
        "-q",
        "--results-dir",
        str(tmp_path),
        "-k",
        # and the user-type cases: their types exist only in the submitting process, so an SDK
        # worker of another process gets them only inside the pipeline's DoFns and coders
        "test_map_applies_function_to_every_element or user_types",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:]
    doc = json.loads((tmp_path / "results-process-env.json").read_text())
    outcomes = {c["id"]: c["outcome"] for c in doc["cases"]}
    assert len(outcomes) == 8 and set(outcomes.values()) == {"passed"}, outcomes
    assert "beam-conformance-boot" in doc["target_info"]["environment_config"]


def test_a_worker_pool_that_cannot_listen_is_a_clear_setup_error(tmp_path):
    with socket.socket() as taken:  # the pool's port is taken
        taken.bind(("0.0.0.0", 0))
        taken.listen(1)
        pool = WorkerPoolProcess("127.0.0.1", taken.getsockname()[1], 30, write_boot_command(str(tmp_path)))
        with pytest.raises(TargetUnavailable, match="the SDK worker pool exited with code"):
            pool.start()
    assert pool.process.poll() is not None
