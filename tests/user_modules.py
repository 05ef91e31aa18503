"""A user's own module that only the submitting client can import, and a job server that cannot.

Pickled by reference (as a module of a user's package is), the module's classes reach an SDK
worker in the client's process (LOOPBACK), while the job server, started from another directory,
would fail to unpickle them: tests of "the runner never builds the user's objects" use both.
"""

import contextlib
import importlib.util
import os
import pathlib
import sys
import textwrap
import uuid

from conformance.session.targets.processes import free_port, start_group, stop_group, wait_until_serving

_ROOT = pathlib.Path(__file__).resolve().parent.parent  # the kit these tests test


def user_module(directory, prefix: str, source: str):
    """``source`` as a new module named ``<prefix>_<random>`` in ``directory``, imported here alone."""
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    path = directory / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def job_server_elsewhere(tmp_path, *server_args: str):
    """Our job server, started in ``tmp_path/server`` (where no user module is) with
    ``server_args``: its endpoint. It runs this checkout's kit: away from the root, ``-m`` would
    find an installed copy instead."""
    (tmp_path / "server").mkdir()
    port = free_port()
    with open(tmp_path / "server.log", "w+") as log:
        server = start_group(
            [sys.executable, "-m", "reference_runner.jobserver", "--port", str(port), *server_args],
            log,
            "job server",
            cwd=tmp_path / "server",
            env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(_ROOT), os.environ.get("PYTHONPATH")]))},
        )
        try:
            wait_until_serving(f"127.0.0.1:{port}", 120, server, log.name, "job server")
            yield f"127.0.0.1:{port}"
        finally:
            stop_group(server)
