"""Packaging as users install it: the wheel built and installed as the README says, into a fresh venv
outside the checkout (tests/user_venv.py, shared with tests/test_first_hour.py), running the suite
(against our job server, started from that venv) and the report from an empty directory, with no
file of the checkout on the path."""

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

from conformance.session.targets.processes import free_port, start_group, stop_group, wait_until_serving
from tests.test_docs import CHECKOUT, install_commands

ROOT = Path(__file__).resolve().parents[1]
SELECTION = (
    "test_map_applies_function_to_every_element or test_per_key_builtins "
    "or fixed_default_on_time or sessions_default_merge"
)


def _run(argv, cwd, env, timeout=900):
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{argv[:4]} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def test_the_readmes_clone_line_installs_this_checkout(tmp_path):
    # the line for a clone installs this checkout (pip builds it as the wheel below; here only as far as that)
    clone = [str(ROOT) if word == CHECKOUT else word for word in install_commands()[0]]
    dry_run = [sys.executable, "-m", *clone[:2], "--dry-run", "--no-deps", "--no-build-isolation", "-q", *clone[2:]]
    _run(dry_run, tmp_path, os.environ)


def test_the_wheel_ships_the_semantics_and_spark_as_an_extra(user_venv):
    with zipfile.ZipFile(user_venv.wheel) as archive:
        # the account of the Beam model that the cases cite ("SEMANTICS 4") ships beside them
        assert "conformance/SEMANTICS.md" in archive.namelist()
        [metadata] = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        requires = [line for line in archive.read(metadata).decode().splitlines() if line.startswith("Requires-Dist:")]
    # pyspark (about 500 MB) only for the Spark backend: a user testing a runner over gRPC needs none
    spark = [line for line in requires if line.startswith("Requires-Dist: pyspark")]
    assert spark and all('extra == "spark"' in line for line in spark), requires


def test_wheel_installs_into_a_fresh_venv_and_runs_from_an_empty_directory(user_venv, tmp_path):
    venv_dir, empty = user_venv.root, tmp_path / "empty"
    empty.mkdir()
    python = user_venv.python
    env = user_venv.env()

    script = (
        "import json, sys, conformance, reference_runner; "
        "print(json.dumps([conformance.__file__, reference_runner.__file__, sys.path]))"
    )
    where = json.loads(_run([python, "-c", script], empty, env))
    for path in where[:2]:
        assert path.startswith(str(venv_dir)), where
    assert not [p for p in where[2] if p.startswith(str(ROOT))], where[2]

    # our job server, started from the wheel's console script
    port = free_port()
    log = open(tmp_path / "job-server.log", "w")
    server = start_group([str(venv_dir / "bin" / "reference-runner"), "serve", "--port", str(port)], log, "job server")
    try:
        wait_until_serving(f"127.0.0.1:{port}", 60, server, log.name, "job server")
        _run(
            [
                python,
                "-m",
                "pytest",
                "--pyargs",
                "conformance",
                "--target",
                f"grpc://127.0.0.1:{port}",
                "--target-name",
                "from-wheel",
                "-p",
                "no:cacheprovider",
                "-q",
                "--results-dir",
                "out",
                "-k",
                SELECTION,
            ],
            empty,
            env,
        )
    finally:
        stop_group(server)
        log.close()
    results = json.loads((empty / "out" / "results-from-wheel.json").read_text())
    outcomes = {c["id"]: c["outcome"] for c in results["cases"]}
    assert outcomes["pardo/map_applies_function_to_every_element"] == "passed"
    assert outcomes["combine/per_key_builtins"] == "passed"
    # the scripted trigger scenarios ship in the wheel too
    assert outcomes["transcripts/transcript[fixed_default_on_time]"] == "passed", outcomes
    assert outcomes["transcripts/transcript[sessions_default_merge]"] == "passed", outcomes

    out = _run(
        [str(venv_dir / "bin" / "beam-conformance"), "report", "--results-dir", "out", "--out", "out"], empty, env
    )
    assert "wrote out/capability-matrix.html" in out
    page = (empty / "out" / "capability-matrix.html").read_text()
    assert 'id="matrix"' in page and ".grid-wrap" in page and "cases-dialog" in page  # styles and script inlined
    # nothing else was written where the user ran it (hypothesis keeps its example database there)
    assert {p.name for p in empty.iterdir()} <= {"out", ".hypothesis"}
