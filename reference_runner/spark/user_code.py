"""Where a Spark job's user code runs, decided once on the driver and shipped in every ShippedStage.

- The executors' embedded Python SDK harness, where that is what the pipeline asked for or is
  equivalent to it: an embedded environment; a DOCKER image of this very harness (the Python SDK
  of the installed apache-beam, for this Python), which cannot be started here anyway (no
  container runtime); and every job of the in-process SparkRunner, which, like the in-process
  reference runner, embeds its environments (another SDK's user code is refused at Prepare).
- Otherwise, over the job server, the environment's own workers: an EXTERNAL worker pool
  (LOOPBACK's pool inside the submitting process is one), or a PROCESS command. Each executor
  reaches them through an Fn API server of its own (spark/sdk_workers.py), so a LOOPBACK
  Python pipeline keeps its logging, its registered types and its module state in the process
  that submitted it, and a Java, Go or TypeScript pipeline runs at all.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

import apache_beam
from apache_beam.portability.api import beam_runner_api_pb2

from reference_runner.spark.settings import is_local
from reference_runner.worker.pool import DOCKER, EMBEDDED, EXTERNAL, PROCESS, EnvironmentUnsupported, environment_of

_PYTHON_IMAGE = re.compile(r"beam_python(\d+\.\d+)_sdk:([^@\s]+)$")


@dataclass(frozen=True)
class UserCode:
    environment: bytes = b""  # the Environment whose workers run the user code; empty: embedded
    job_server: str = ""  # its address: those workers' staged files, and where executors say they hold them
    fn_host: str = "127.0.0.1"  # where executors listen for those workers; "": the executor's host name
    description: str = "the executors' embedded Python SDK harness"

    @property
    def embedded(self) -> bool:
        return not self.environment


EMBEDDED_CODE = UserCode()


def choose(components: beam_runner_api_pb2.Components, job_server: str | None, master: str) -> UserCode:
    """How the job's user code runs; ``job_server``: its address (None in process).
    EnvironmentUnsupported says why it cannot run."""
    env = environment_of(components)
    if env.urn in EMBEDDED:
        return EMBEDDED_CODE
    if job_server is None:  # the in-process SparkRunner embeds every environment, as ReferenceRunner does
        return UserCode(description=f"the executors' embedded Python SDK harness (in process: {_name(env)} unused)")
    if env.urn == DOCKER:
        image = beam_runner_api_pb2.DockerPayload.FromString(env.payload).container_image
        if _is_this_harness(image):
            return UserCode(description=f"the executors' embedded Python SDK harness (the same SDK as image {image})")
        raise EnvironmentUnsupported(
            f"DOCKER environment {image!r}: there is no container runtime here, and the executors' embedded "
            f"harness is apache-beam {apache_beam.__version__} for Python {_python()}, not that image; "
            "submit with LOOPBACK, EXTERNAL or PROCESS"
        )
    if env.urn not in (EXTERNAL, PROCESS):
        raise EnvironmentUnsupported(
            f"environment {env.urn} is not supported (supported: {EXTERNAL}, {PROCESS}, embedded Python, "
            f"DOCKER images of apache-beam {apache_beam.__version__} for Python {_python()})"
        )
    local = is_local(master)
    return UserCode(
        env.SerializeToString(deterministic=True),
        job_server,
        "127.0.0.1" if local else "",
        f"the environment's own workers ({_name(env)}), started by each executor",
    )


def _name(env: beam_runner_api_pb2.Environment) -> str:
    if env.urn == EXTERNAL:
        return f"EXTERNAL pool at {beam_runner_api_pb2.ExternalPayload.FromString(env.payload).endpoint.url}"
    if env.urn == PROCESS:
        return f"PROCESS {beam_runner_api_pb2.ProcessPayload.FromString(env.payload).command!r}"
    if env.urn == DOCKER:
        return f"DOCKER {beam_runner_api_pb2.DockerPayload.FromString(env.payload).container_image!r}"
    return env.urn


def _is_this_harness(image: str) -> bool:
    found = _PYTHON_IMAGE.search(image)
    return bool(found) and found.group(1) == _python() and found.group(2) == apache_beam.__version__


def _python() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"
