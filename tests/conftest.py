"""Fixtures shared by the kit's tests."""

import os

import pytest

from conformance.session.targets.workers import WorkerPoolProcess, write_boot_command

pytest_plugins = ["pytester"]


@pytest.fixture
def worker_pool(tmp_path):
    """Beam's worker pool in a process of its own (what EXTERNAL environments name), as the suite
    starts it: (its process, the address to reach it at)."""
    pool = WorkerPoolProcess("localhost", 0, 60, write_boot_command(str(tmp_path))).start()
    yield pool.process, pool.address
    pool.stop()  # the pool and the workers it started


# The longest tests (whole-suite runs in subprocesses, fetching and building peers) go first, so that
# pytest-xdist's two workers do not end with one of them alone on a run of several minutes.
_LONGEST_FIRST = (
    "tests/test_peer_expectations.py",
    "tests/test_schedule_properties.py",
    "tests/test_beam_direct_pinned.py",
    "tests/test_peer_selection.py",
    "tests/test_spark_cluster.py",
    "tests/test_job_server_load.py",
)


def pytest_collection_modifyitems(items):
    def rank(item):
        path = item.nodeid.split("::", 1)[0]
        return _LONGEST_FIRST.index(path) if path in _LONGEST_FIRST else len(_LONGEST_FIRST)

    items.sort(key=rank)  # stable: the order within a file is kept


@pytest.fixture(scope="session")
def session_dir(tmp_path_factory):
    """A directory every pytest-xdist worker of this session shares (the base temp's parent)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if "PYTEST_XDIST_WORKER" in os.environ else base


@pytest.fixture(scope="session")
def user_venv(session_dir):
    """The kit installed from its wheel into a fresh venv, as a user installs it (tests/user_venv.py)."""
    from tests.user_venv import once_per_session

    return once_per_session(session_dir / "user-venv")
