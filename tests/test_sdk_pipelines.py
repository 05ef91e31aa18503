"""The cross-SDK cases as CI runs them: the TypeScript SDK's pipelines (the cheapest SDK to build:
one npm install), on the reference runner in process and over its job server, and two of them
over the Spark backend's job server. They fail on a runner that lifts a combine whose output is
not a KV, that pushes descriptors with RegisterRequest, whose staging call never sends headers,
or (Spark) that runs user code in its executors' own Python harness instead of the job's
environment. The Java and Go pipelines run whole in `tox -e sdk-pipelines` (results in
reports/sdk-pipelines/)."""

import json
import sys

from conformance.sdk_pipelines.programs import PROGRAMS

SERVER = f"{sys.executable} -m reference_runner.jobserver --port {{port}}"


def _outcomes(pytester, *target_args, cases: str = "typescript") -> dict:
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--show-capture=no",
        "--results-dir",
        str(pytester.path / "out"),
        "--target-name",
        "sdks",
        "--expectations",
        "none",
        "--sdks",
        "typescript",
        "--pyargs",
        "conformance.cases.test_sdk_pipelines",
        "-k",
        cases,
        *target_args,
    )
    assert result.ret == 0, result.stdout.str()[-4000:]
    doc = json.loads((pytester.path / "out" / "results-sdks.json").read_text())
    return {c["id"]: c["outcome"] for c in doc["cases"]}


def test_typescript_pipelines_on_the_reference_runner_and_its_job_server(pytester):
    expected = len(PROGRAMS["typescript"].cases)
    for target_args in (("--target", "reference"), ("--target", "grpc", "--job-server-cmd", SERVER)):
        outcomes = _outcomes(pytester, *target_args)
        assert set(outcomes.values()) == {"passed"} and len(outcomes) == expected, (target_args, outcomes)


def test_typescript_pipelines_on_the_spark_job_server(pytester):
    cases = "typescript and (combine_per_key or side_input)"
    outcomes = _outcomes(pytester, "--target", "grpc", "--job-server-cmd", f"{SERVER} --backend spark", cases=cases)
    assert set(outcomes.values()) == {"passed"} and len(outcomes) == 2, outcomes
