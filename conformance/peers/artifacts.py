"""Fetching other teams' runners into a cache outside the repository: Go binaries through
``go install``, Java classpaths through Maven, Python packages through pip.

The cache is ``$BEAM_CONFORMANCE_CACHE``, else ``$XDG_CACHE_HOME/beam-conformance``, else
``~/.cache/beam-conformance``. Each artifact sits in a directory named by its pinned version, so
a new pin fetches anew and an old one stays usable. A file lock per artifact lets several
sessions (or pytest-xdist workers) ask at once: one fetches, the others wait for it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

Progress = Callable[[str], None]

# how often a long fetch says it is still going
_HEARTBEAT_S = 30.0


class ArtifactUnavailable(RuntimeError):
    """An artifact could not be fetched; the message says what was tried and what to do."""


def cache_dir() -> Path:
    configured = os.environ.get("BEAM_CONFORMANCE_CACHE")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "beam-conformance"


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _require(tool: str, what: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise ArtifactUnavailable(f"{what} needs `{tool}` on PATH, and there is none")
    return path


def _run(argv: list[str], what: str, progress: Progress, cwd: Path | None = None, env: dict | None = None) -> None:
    """Run a fetching command, saying every half minute that it still runs; on failure raise
    with the tail of its output."""
    with tempfile.TemporaryFile(mode="w+") as log:
        started = time.monotonic()
        process = subprocess.Popen(
            argv, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        next_news = started + _HEARTBEAT_S
        while process.poll() is None:
            time.sleep(0.5)
            if time.monotonic() >= next_news:
                progress(f"  ... still {what} ({time.monotonic() - started:.0f} s)")
                next_news += _HEARTBEAT_S
        if process.returncode != 0:
            log.seek(0)
            tail = "".join(log.readlines()[-25:])
            raise ArtifactUnavailable(
                f"{what} failed (exit code {process.returncode}): {' '.join(argv)}\n{tail.rstrip()}"
            )
        progress(f"  done in {time.monotonic() - started:.0f} s")


def go_binary(module: str, version: str, progress: Progress) -> Path:
    """``go install MODULE@VERSION`` into the cache; the path of the binary."""
    name = module.rsplit("/", 1)[-1]
    home = cache_dir() / "go" / f"{name}-{version}"
    binary = home / "bin" / name
    if binary.exists():
        return binary
    with _locked(home):
        if binary.exists():  # another session fetched it while we waited
            return binary
        go = _require("go", f"installing {name} ({module}@{version})")
        progress(f"fetching {name} {version}: go install {module}@{version} (a few minutes the first time)")
        env = {**os.environ, "GOBIN": str(binary.parent), "GOFLAGS": os.environ.get("GOFLAGS", "") + " -buildvcs=false"}
        _run([go, "install", f"{module}@{version}"], f"building {name} {version} with go install", progress, env=env)
    if not binary.exists():
        raise ArtifactUnavailable(f"go install {module}@{version} finished but left no {binary}")
    return binary


_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <!-- Written by beam-conformance to resolve {name}'s classpath; not a build of anything. -->
  <modelVersion>4.0.0</modelVersion>
  <groupId>beam-conformance.cache</groupId>
  <artifactId>{name}</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
{dependencies}
  </dependencies>
</project>
"""


def maven_classpath(name: str, coordinates: list[str], progress: Progress) -> list[str]:
    """The runtime classpath of ``coordinates`` (``group:artifact:version``), resolved by Maven
    into its local repository (~/.m2); the jar paths, in Maven's order."""
    home = cache_dir() / "maven" / name
    classpath_file = home / "classpath.txt"
    cached = _read_classpath(classpath_file)
    if cached:
        return cached
    with _locked(home):
        cached = _read_classpath(classpath_file)
        if cached:
            return cached
        mvn = _require("mvn", f"resolving {name} ({', '.join(coordinates)})")
        dependencies = "\n".join(
            "    <dependency><groupId>{}</groupId><artifactId>{}</artifactId><version>{}</version></dependency>".format(
                *c.split(":")
            )
            for c in coordinates
        )
        (home / "pom.xml").write_text(_POM.format(name=name, dependencies=dependencies))
        progress(f"fetching {name}: Maven resolves {', '.join(coordinates)} and their dependencies")
        partial = home / "classpath.txt.partial"
        _run(
            [mvn, "-B", "-q", "dependency:build-classpath", f"-Dmdep.outputFile={partial}"],
            f"resolving {name} with Maven",
            progress,
            cwd=home,
        )
        os.replace(partial, classpath_file)
    resolved = _read_classpath(classpath_file)
    if not resolved:
        raise ArtifactUnavailable(f"Maven resolved no classpath for {name} ({classpath_file})")
    return resolved


def _read_classpath(path: Path) -> list[str]:
    """The cached classpath, if every jar on it is still in Maven's repository."""
    try:
        jars = path.read_text().strip().split(os.pathsep)
    except OSError:
        return []
    return jars if jars and all(os.path.exists(j) for j in jars) else []


def pip_install(requirements: list[str], progress: Progress) -> None:
    """Install pinned Python packages into this interpreter's environment (the tox env's)."""
    progress(f"installing {' '.join(requirements)} into {sys.prefix}")
    _run([sys.executable, "-m", "pip", "install", "--quiet", *requirements], "installing with pip", progress)


def source_build(name: str, sources: Path, commands: list[tuple[list[str], str]], progress: Progress) -> Path:
    """A copy of the directory ``sources`` in the cache, built by running ``commands`` (argv, what
    it does) in it; the copy's path. The copy is named by a hash of the sources, so an edited
    source builds anew and an unchanged one is built once."""
    digest = hashlib.sha256()
    for path in sorted(p for p in sources.rglob("*") if p.is_file() and "node_modules" not in p.parts):
        digest.update(str(path.relative_to(sources)).encode() + b"\0" + path.read_bytes())
    home = cache_dir() / "sdk-pipelines" / f"{name}-{digest.hexdigest()[:16]}"
    built = home / ".built"
    if built.exists():
        return home
    with _locked(home):
        if built.exists():  # another session built it while we waited
            return home
        shutil.copytree(sources, home, dirs_exist_ok=True, ignore=shutil.ignore_patterns("node_modules", "target"))
        for argv, what in commands:
            _require(argv[0], what)
            progress(f"{what}: {' '.join(argv)}")
            _run(argv, what, progress, cwd=home)
        built.touch()
    return home
