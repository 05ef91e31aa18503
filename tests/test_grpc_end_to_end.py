"""The grpc:// target against a real Beam Job API server the session starts on loopback."""

import json
import socket
import subprocess
import sys
import textwrap

JOB_SERVER = f"{sys.executable} -m apache_beam.runners.portability.local_job_service_main --port {{port}}"

CASES = textwrap.dedent("""
    import apache_beam as beam
    from apache_beam.transforms import window
    from conformance.api import W, capability, check, el, sorted_groups

    @capability("gbk.fixed")
    def test_fixed_windows(runner):
        p = runner.pipeline()
        out = (p | beam.Create([("k", 1), ("k", 2), ("k", 12)])
                 | beam.Map(lambda kv: window.TimestampedValue(kv, kv[1]))
                 | beam.WindowInto(window.FixedWindows(10)) | beam.GroupByKey() | sorted_groups())
        check(out, [el(("k", [1, 2]), 9.999, W(0, 10)), el(("k", [12]), 19.999, W(10, 20))])
        runner.run(p)

    @capability("side_inputs.iterable")
    def test_side_input(runner):
        p = runner.pipeline()
        side = p | "side" >> beam.Create([1, 2, 3])
        out = p | beam.Create(["a"]) | beam.Map(lambda x, s: (x, sum(s)), s=beam.pvalue.AsIter(side))
        check(out, [("a", 6)])
        runner.run(p)

    @capability("metrics.counters")
    def test_counter(runner):
        from apache_beam.metrics import Metrics
        counter = Metrics.counter("e2e", "seen")
        p = runner.pipeline()
        _ = p | beam.Create([1, 2, 3]) | beam.Map(lambda x: counter.inc() or x)
        assert runner.run(p).counter("seen", "e2e") == 3

    @capability("pardo.basic")
    def test_wrong_on_purpose(runner):
        p = runner.pipeline()
        check(p | beam.Create([1, 2]), [1, 2, 3])
        runner.run(p)
""")


def run(pytester, *args):
    return pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--show-capture=no", "--results-dir", str(pytester.path / "out"), *args
    )


def test_cases_run_over_grpc_against_a_job_server_started_for_the_session(pytester):
    pytester.makepyfile(test_e2e=CASES)
    result = run(
        pytester,
        "--target",
        "grpc",
        "--target-name",
        "local-job-service",
        "--job-server-cmd",
        JOB_SERVER,
        "--pyargs",
        "conformance.cases.test_impulse",
        "test_e2e.py",
    )
    # Impulse cases and three of ours pass; the deliberately wrong one fails with its diff,
    # which travelled back from the SDK worker through the job service.
    assert result.ret == 1, result.stdout.str()[-3000:]
    out = result.stdout.str()
    assert "1 missing, 0 unexpected" in out and "missing (expected, not produced) (1):" in out
    doc = json.loads((pytester.path / "out" / "results-local-job-service.json").read_text())
    outcomes = {c["id"]: c["outcome"] for c in doc["cases"]}
    assert outcomes.pop("e2e/wrong_on_purpose") == "failed"
    assert set(outcomes.values()) == {"passed"} and len(outcomes) == 6, outcomes
    # The session stopped the job server it started.
    port = doc["target_info"]["endpoint"].rsplit(":", 1)[1]
    alive = subprocess.run(["pgrep", "-f", f"local_job_service_main --port {port}"], capture_output=True)
    assert alive.returncode == 1, alive.stdout


def test_a_refused_endpoint_is_a_usage_error_at_once_not_a_wait(pytester):
    pytester.makepyfile(test_e2e=CASES)
    # a timeout no run would wait out: a refused connection is known at once
    result = run(pytester, "--target", "grpc://127.0.0.1:9", "--job-server-timeout", "600")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["ERROR: target grpc://127.0.0.1:9 is unavailable: *127.0.0.1:9*connection refused*"])


def test_a_listening_server_that_never_answers_is_waited_on_for_the_job_server_timeout(pytester):
    pytester.makepyfile(test_e2e=CASES)
    with socket.socket() as silent:  # accepts connections, never speaks gRPC
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        result = run(pytester, "--target", f"grpc://127.0.0.1:{port}", "--job-server-timeout", "2")
    assert result.ret == 4
    result.stderr.fnmatch_lines(
        [f"ERROR: *no Beam Job API server answered at 127.0.0.1:{port} within 2s (--job-server-timeout)*"]
    )


def test_a_job_server_that_dies_is_reported_with_its_output(pytester):
    pytester.makepyfile(test_e2e=CASES)
    result = run(
        pytester,
        "--target",
        "grpc",
        "--job-server-timeout",
        "30",
        "--job-server-cmd",
        f"{sys.executable} -c \"import sys; print('cannot bind {{port}}'); sys.exit(7)\"",
    )
    assert result.ret == 3
    result.stdout.fnmatch_lines(["*job server exited with code 7*", "*cannot bind*"])


def test_a_job_server_that_dies_under_xdist_workers_stops_the_run_naming_why(pytester):
    pytester.makepyfile(test_e2e=CASES)
    dies = f"{sys.executable} -c \"import sys; print('no module named beam {{port}}'); sys.exit(7)\""
    result = run(pytester, "-n", "2", "--target", "grpc", "--job-server-timeout", "30", "--job-server-cmd", dies)
    out = result.stdout.str()
    assert result.ret not in (0, 5) and "INTERNALERROR" not in out, out[-3000:]
    result.stdout.fnmatch_lines(["*Interrupted: target grpc is unavailable*job server exited with code 7*"])


CRASHING = textwrap.dedent("""
    import os
    import signal

    import apache_beam as beam
    from conformance.api import capability, check

    @capability("pardo.basic")
    def test_1_the_job_server_dies_during_this_case(runner):
        p = runner.pipeline("--job_server_timeout=5")
        check(p | beam.Create([1]), [1])
        os.killpg(runner.target.server.process.pid, signal.SIGKILL)
        runner.run(p)

    @capability("pardo.basic")
    def test_2_the_next_case_runs_on_a_fresh_job_server(runner):
        p = runner.pipeline()
        check(p | beam.Create([1, 2]) | beam.Map(lambda x: x * 10), [10, 20])
        runner.run(p)
""")


def test_a_job_server_that_dies_during_a_case_fails_that_case_alone(pytester):
    pytester.makepyfile(test_crash=CRASHING)
    result = run(pytester, "--target", "grpc", "--job-server-cmd", JOB_SERVER)
    outcomes = {c["id"]: c for c in json.loads((pytester.path / "out" / "results-grpc.json").read_text())["cases"]}
    died = outcomes["crash/1_the_job_server_dies_during_this_case"]
    assert died["outcome"] == "failed" and "the job server exited with code -9 while this case ran" in died["message"]
    assert outcomes["crash/2_the_next_case_runs_on_a_fresh_job_server"]["outcome"] == "passed", result.stdout.str()
