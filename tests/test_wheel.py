"""Packaging as users install it: build the wheel and install it as the README says, into a fresh venv
outside the checkout, and run the suite (against our job server, started from that venv) and the report
from an empty directory, with no file of the checkout on the path."""

import glob
import json
import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

from conformance.session.targets.processes import free_port, start_group, stop_group, wait_until_serving
from tests.test_docs import CHECKOUT, install_commands

ROOT = Path(__file__).resolve().parents[1]
SELECTION = (
    "test_map_applies_function_to_every_element or test_per_key_builtins "
    "or fixed_default_on_time or sessions_default_merge"
)


def _clean_env(venv_dir: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "PYTHONSTARTUP")}
    # the fresh venv first; nothing of the checkout or of the tox env on PATH
    env["PATH"] = os.pathsep.join(
        [str(venv_dir / "bin")]
        + [p for p in env.get("PATH", "").split(os.pathsep) if p and not p.startswith(str(ROOT))]
    )
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _run(argv, cwd, env, timeout=900):
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{argv[:4]} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def test_wheel_installs_into_a_fresh_venv_and_runs_from_an_empty_directory(tmp_path):
    venv_dir, empty = tmp_path / "venv", tmp_path / "empty"
    empty.mkdir()
    # the README's commands: build the wheel from the clone (here with this environment's
    # setuptools, no download), then install it as a user would, from where it was built
    clone, build, install = [[str(ROOT) if word == CHECKOUT else word for word in c] for c in install_commands()]
    # the line for a clone installs this checkout (pip builds it as below; here only as far as that)
    dry_run = [sys.executable, "-m", *clone[:2], "--dry-run", "--no-deps", "--no-build-isolation", "-q", *clone[2:]]
    _run(dry_run, tmp_path, os.environ)
    _run([sys.executable, "-m", *build[:2], "--no-build-isolation", "-q", *build[2:]], tmp_path, os.environ)
    [built] = glob.glob(install[-1], root_dir=tmp_path)  # the README's dist/beam_runner_conformance-*.whl
    wheel = tmp_path / built
    # the account of the Beam model that the cases cite ("SEMANTICS 4") ships beside them
    with zipfile.ZipFile(wheel) as archive:
        assert "conformance/SEMANTICS.md" in archive.namelist()
    venv.create(venv_dir, with_pip=False, clear=True)
    python = str(venv_dir / "bin" / "python")
    env = _clean_env(venv_dir)
    # this environment's pip installs into the fresh venv (pip --python); dependencies come from
    # the index (or pip's cache); no byte-compiling, which only costs time here
    _run([sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-compile", str(wheel)], empty, env)

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
