"""Fixtures shared by the kit's tests."""

import pytest

from conformance.targets.workers import WorkerPoolProcess, write_boot_command

pytest_plugins = ["pytester"]


@pytest.fixture
def worker_pool(tmp_path):
    """Beam's worker pool in a process of its own (what EXTERNAL environments name), as the suite
    starts it: (its process, the address to reach it at)."""
    pool = WorkerPoolProcess("localhost", 0, 60, write_boot_command(str(tmp_path))).start()
    yield pool.process, pool.address
    pool.stop()  # the pool and the workers it started
