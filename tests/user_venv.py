"""The kit installed as a user installs it: the wheel built from this checkout (or the one
$BEAM_CONFORMANCE_WHEEL names, to try a previous main's), in a fresh venv outside the checkout,
without the ``spark`` extra. Built once per test session and shared by the pytest-xdist workers
(a file lock: the first to ask builds it, the others wait)."""

from __future__ import annotations

import fcntl
import glob
import json
import os
import subprocess
import sys
import venv
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class UserVenv:
    root: Path
    wheel: Path

    @property
    def python(self) -> str:
        return str(self.root / "bin" / "python")

    def script(self, name: str) -> str:
        return str(self.root / "bin" / name)

    def env(self) -> dict:
        """This process's environment without the checkout or the tox env: the venv first on PATH."""
        drop = ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONWARNINGS", "PYTHONDONTWRITEBYTECODE")
        env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("PYTEST_")}
        env["PATH"] = os.pathsep.join(
            [str(self.root / "bin")]
            + [
                p
                for p in env.get("PATH", "").split(os.pathsep)
                if p and not p.startswith(str(ROOT)) and ".tox" not in p
            ]
        )
        env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
        return env

    def run(self, argv: list[str], cwd: Path, timeout: float = 600, check: bool = False) -> subprocess.CompletedProcess:
        """``argv`` from ``cwd`` as the user's shell would run it (``pytest`` and the kit's commands
        are the venv's); stdout and stderr as text."""
        done = subprocess.run(argv, cwd=cwd, env=self.env(), capture_output=True, text=True, timeout=timeout)
        if check:
            assert done.returncode == 0, (
                f"{argv} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
            )
        return done

    def pytest(self, args: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
        return self.run([self.python, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd, timeout)


def build_wheel(into: Path) -> Path:
    """The wheel as the README builds it (this environment's setuptools, no download)."""
    named = os.environ.get("BEAM_CONFORMANCE_WHEEL")
    if named:
        return Path(named)
    command = [
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--no-build-isolation",
        "-q",
        "-w",
        str(into),
        str(ROOT),
    ]
    subprocess.run(command, check=True, capture_output=True, cwd=into)
    [built] = glob.glob(str(into / "beam_runner_conformance-*.whl"))
    return Path(built)


def once_per_session(shared: Path) -> UserVenv:
    """The session's user venv under ``shared`` (a directory every xdist worker sees)."""
    shared.mkdir(parents=True, exist_ok=True)
    done = shared / "user-venv.json"
    with open(shared / "user-venv.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            recorded = json.loads(done.read_text())
            return UserVenv(Path(recorded["root"]), Path(recorded["wheel"]))
        wheel = build_wheel(shared)
        root = shared / "venv"
        venv.create(root, with_pip=False, clear=True)
        made = UserVenv(root, wheel)
        # this environment's pip installs into the venv (pip --python); dependencies from the index
        # or pip's cache. Byte-compiled, as pip does for a user: every command here imports Beam
        install = [sys.executable, "-m", "pip", "--python", made.python, "install", "-q", str(wheel)]
        subprocess.run(install, check=True, capture_output=True, cwd=shared, env=made.env())
        done.write_text(json.dumps({"root": str(root), "wheel": str(wheel)}))
        return made
