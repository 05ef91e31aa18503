import sys

import apache_beam
import pytest
from apache_beam.portability.api import beam_runner_api_pb2, endpoints_pb2

from reference_runner.spark.user_code import choose
from reference_runner.worker.pool import EnvironmentUnsupported

JOB_SERVER = "127.0.0.1:8099"
THIS_PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"


def _components(env: beam_runner_api_pb2.Environment) -> beam_runner_api_pb2.Components:
    components = beam_runner_api_pb2.Components()
    components.environments["env"].CopyFrom(env)
    components.transforms["fn"].environment_id = "env"
    return components


def _docker(image: str) -> beam_runner_api_pb2.Environment:
    payload = beam_runner_api_pb2.DockerPayload(container_image=image)
    return beam_runner_api_pb2.Environment(urn="beam:env:docker:v1", payload=payload.SerializeToString())


def _external(url: str) -> beam_runner_api_pb2.Environment:
    payload = beam_runner_api_pb2.ExternalPayload(endpoint=endpoints_pb2.ApiServiceDescriptor(url=url))
    return beam_runner_api_pb2.Environment(urn="beam:env:external:v1", payload=payload.SerializeToString())


def test_loopback_over_the_job_server_runs_on_the_clients_pool():
    env = _external("localhost:41234")  # what LOOPBACK becomes
    code = choose(_components(env), JOB_SERVER, "local[2]")
    assert not code.embedded
    assert beam_runner_api_pb2.Environment.FromString(code.environment) == env
    assert code.job_server == JOB_SERVER and code.fn_host == "127.0.0.1"
    assert "EXTERNAL pool at localhost:41234" in code.description


def test_a_cluster_master_listens_on_the_executors_host_name():
    assert choose(_components(_external("client:1")), JOB_SERVER, "spark://head:7077").fn_host == ""


def test_a_process_command_is_started_by_the_executors():
    payload = beam_runner_api_pb2.ProcessPayload(command="/opt/boot")
    env = beam_runner_api_pb2.Environment(urn="beam:env:process:v1", payload=payload.SerializeToString())
    code = choose(_components(env), JOB_SERVER, "local[2]")
    assert not code.embedded and "PROCESS '/opt/boot'" in code.description


def test_the_docker_image_of_this_very_harness_runs_embedded():
    image = f"apache/beam_python{THIS_PYTHON}_sdk:{apache_beam.__version__}"
    assert choose(_components(_docker(image)), JOB_SERVER, "local[2]").embedded


@pytest.mark.parametrize(
    "image",
    [
        "apache/beam_java17_sdk:2.65.0",
        f"apache/beam_python{THIS_PYTHON}_sdk:2.0.0",
        "apache/beam_python2.7_sdk:" + apache_beam.__version__,
    ],
)
def test_any_other_docker_image_is_refused_naming_it(image):
    with pytest.raises(EnvironmentUnsupported, match=f"DOCKER environment '{image}'.*no container runtime"):
        choose(_components(_docker(image)), JOB_SERVER, "local[2]")


def test_in_process_every_environment_is_embedded():
    code = choose(_components(_external("localhost:1")), None, "local[2]")
    assert code.embedded and "in process" in code.description


def test_an_unknown_environment_is_refused_naming_its_urn():
    env = beam_runner_api_pb2.Environment(urn="beam:env:teleport:v1")
    with pytest.raises(EnvironmentUnsupported, match="beam:env:teleport:v1"):
        choose(_components(env), JOB_SERVER, "local[2]")


def test_two_environments_in_one_job_are_refused():
    components = _components(_external("a:1"))
    components.environments["other"].CopyFrom(_external("b:2"))
    components.transforms["fn2"].environment_id = "other"
    with pytest.raises(EnvironmentUnsupported, match="2 environments"):
        choose(components, JOB_SERVER, "local[2]")
