"""The Python side of the Java ValidatesRunner launcher (launcher/, its class comment has the
protocol): building it into the cache, the listing of the tests, and the launcher JVM a
pytest(-xdist) worker keeps for its whole session.

One JVM serves many tests, one at a time: JVM start and class loading are paid once per worker.
A test that outlasts the time cap gets its JVM (with its process group) killed and is reported as
failed, "timed out after N s"; a JVM that dies is reported with the end of its stderr. Either way
the next test gets a fresh JVM.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from conformance.peers import artifacts, pins

SOURCES = Path(__file__).parent / "launcher"
MAIN_CLASS = "beamconformance.vr.Launcher"
DEFAULT_TIMEOUT_S = 180.0
# how long a fresh JVM may take to say it is ready (class loading on a busy machine)
START_TIMEOUT_S = 120.0
_STDERR_TAIL_LINES = 30


def build_steps(beam_version: str) -> list[tuple[list[str], str]]:
    """Maven's build of the launcher against the tests of ``beam_version`` (the pom's beam.version)."""
    release = f"-Dbeam.version={beam_version}"
    return [
        (["mvn", "-q", "-B", release, "package", "-DskipTests"], "building the Java ValidatesRunner launcher"),
        (
            ["mvn", "-q", "-B", release, "dependency:build-classpath", "-Dmdep.outputFile=classpath.txt"],
            f"resolving Beam {beam_version}'s Java ValidatesRunner tests and their classpath",
        ),
    ]


def java() -> str:
    home = os.environ.get("JAVA_HOME")
    return os.path.join(home, "bin", "java") if home else "java"


@dataclass(frozen=True)
class Launcher:
    """The built launcher: its directory in the cache, its classpath and the Beam release whose tests
    it runs."""

    home: Path
    classpath: tuple[str, ...]
    beam_version: str = pins.BEAM_JAVA_VR

    @property
    def tests_jar(self) -> str:
        suffix = f"beam-sdks-java-core-{self.beam_version}-tests.jar"
        for jar in self.classpath:
            if jar.endswith(suffix):
                return jar
        raise artifacts.ArtifactUnavailable(f"no {suffix} on the launcher's classpath ({self.home})")

    def argv(self, *args: str, system_properties: dict[str, str] | None = None) -> list[str]:
        props = [f"-D{k}={v}" for k, v in (system_properties or {}).items()]
        return [
            java(),
            # logs of Beam and the harness: warnings only, to stderr (slf4j-simple)
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            *props,
            "-cp",
            os.pathsep.join(self.classpath),
            MAIN_CLASS,
            *args,
        ]


def build(progress: artifacts.Progress, beam_version: str = pins.BEAM_JAVA_VR) -> Launcher:
    """Build the launcher for the tests of ``beam_version`` into the cache if needed (Maven resolves
    the tests jar, the portable runner and the harness into ~/.m2); cached per release and by a hash
    of its sources."""
    if shutil.which(java()) is None:
        raise artifacts.ArtifactUnavailable("Beam's Java ValidatesRunner tests need Java 17 (`java` or JAVA_HOME)")
    home = artifacts.source_build(f"java-vr-launcher-{beam_version}", SOURCES, build_steps(beam_version), progress)
    classpath = (str(home / "target" / "classes"), *(home / "classpath.txt").read_text().strip().split(os.pathsep))
    return Launcher(home, classpath, beam_version)


@dataclass(frozen=True)
class ListedTest:
    class_name: str
    method: str
    categories: frozenset[str]
    ignored: bool = False

    @property
    def junit_id(self) -> str:
        return f"{self.class_name}.{self.method}"

    @property
    def case_id(self) -> str:
        return f"java_vr/{self.junit_id}"


@dataclass
class Listing:
    tests: list[ListedTest] = field(default_factory=list)
    # classes the JVM could not load or inspect: class -> the error
    unloadable: dict[str, str] = field(default_factory=dict)


def listing(launcher: Launcher, progress: artifacts.Progress) -> Listing:
    """The ValidatesRunner tests of the tests jar, listed once per built launcher (the launcher's
    directory is named by its sources, which pin the Beam release) and cached beside it."""
    path = launcher.home / "listing.jsonl"
    if not path.exists():
        progress(f"listing Beam {launcher.beam_version}'s Java ValidatesRunner tests")
        done = subprocess.run(launcher.argv("list", launcher.tests_jar), capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            tail = "\n".join(done.stderr.strip().splitlines()[-_STDERR_TAIL_LINES:])
            raise artifacts.ArtifactUnavailable(f"listing the Java ValidatesRunner tests failed:\n{tail}")
        partial = path.with_suffix(".partial")
        partial.write_text(done.stdout)
        os.replace(partial, path)
    return parse_listing(path.read_text())


def parse_listing(text: str) -> Listing:
    result = Listing()
    for line in text.splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        if "load_error" in record:
            result.unloadable[record["class"]] = record["load_error"]
            continue
        result.tests.append(
            ListedTest(record["class"], record["method"], frozenset(record["categories"]), bool(record.get("ignored")))
        )
    return result


def pipeline_options(endpoint: str, extra: tuple[str, ...] | list[str] = ()) -> list[str]:
    """The options every test's TestPipeline gets (Beam's system property beamTestPipelineOptions)."""
    return [
        "--runner=TestUniversalRunner",
        f"--jobEndpoint={endpoint}",
        "--defaultEnvironmentType=LOOPBACK",
        "--experiments=beam_fn_api",
        *extra,
    ]


@dataclass(frozen=True)
class Verdict:
    outcome: str  # passed | failed | skipped | error
    message: str
    trace: str = ""
    duration_s: float = 0.0
    timed_out: bool = False  # the test outlasted its cap and its JVM was killed


class LauncherJvm:
    """One launcher JVM in ``run`` mode, restarted after a timeout or a crash."""

    def __init__(self, launcher: Launcher, options: list[str]):
        self.launcher = launcher
        self.options = list(options)
        self.process: subprocess.Popen | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._stderr = tempfile.NamedTemporaryFile(prefix="java-vr-", suffix=".log", delete=False)
        self.starts = 0  # how many JVMs this object started (a restart counts)

    @property
    def stderr_path(self) -> str:
        return self._stderr.name

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> None:
        argv = self.launcher.argv("run", system_properties={"beamTestPipelineOptions": json.dumps(self.options)})
        self._lines = queue.Queue()
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            bufsize=1,
            start_new_session=True,  # its own process group: killed with everything it started
        )
        self.starts += 1
        threading.Thread(target=self._pump, args=(self.process, self._lines), daemon=True).start()
        line = self._next_line(START_TIMEOUT_S)
        if line is None or json.loads(line).get("ready") is not True:
            tail = self._stderr_tail(0)
            self.stop()
            raise RuntimeError(f"the Java ValidatesRunner launcher did not start: {line!r}\n{tail}")

    @staticmethod
    def _pump(process: subprocess.Popen, lines: queue.Queue) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)
        lines.put(None)  # end of output: the JVM exited

    def _next_line(self, timeout: float) -> str | None:
        """The JVM's next line; None at its end; raises queue.Empty after ``timeout``."""
        line = self._lines.get(timeout=timeout)
        return None if line is None else line.strip()

    def run(self, junit_id: str, timeout: float) -> Verdict:
        """Run one test; a verdict always comes back (a timeout or a dead JVM is a failure)."""
        if not self.alive():
            self.start()
        assert self.process is not None and self.process.stdin is not None
        offset = self._stderr_size()
        started = time.monotonic()
        try:
            self.process.stdin.write(junit_id + "\n")
            self.process.stdin.flush()
            line = self._next_line(timeout)
        except queue.Empty:
            self.stop()
            return Verdict(
                "failed",
                f"timed out after {timeout:g} s: the test did not finish, so its JVM (and the job's LOOPBACK "
                "harness in it) was killed; the next test gets a fresh JVM",
                self._stderr_tail(offset),
                time.monotonic() - started,
                timed_out=True,
            )
        except (BrokenPipeError, OSError):
            line = None
        if line is None:
            code = self.process.poll() if self.process else None
            self.stop()
            return Verdict(
                "error",
                f"the launcher JVM died while running the test (exit code {code}); the end of its stderr:\n"
                + self._stderr_tail(offset),
                "",
                time.monotonic() - started,
            )
        answer = json.loads(line)
        return Verdict(
            answer["outcome"], answer.get("message", ""), answer.get("trace", ""), float(answer.get("duration_s", 0))
        )

    def _stderr_size(self) -> int:
        try:
            return os.path.getsize(self._stderr.name)
        except OSError:
            return 0

    def _stderr_tail(self, offset: int) -> str:
        try:
            with open(self._stderr.name, errors="replace") as f:
                f.seek(offset)
                lines = f.readlines()[-_STDERR_TAIL_LINES:]
        except OSError:
            return "(unreadable)"
        return "".join(lines).rstrip() or "(empty)"

    def stop(self) -> None:
        """Kill the JVM and its process group (a timed-out test leaves nothing behind)."""
        process, self.process = self.process, None
        if process is None:
            return
        if process.poll() is None:
            try:
                os.killpg(process.pid, 9)
            except ProcessLookupError:
                pass
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            pass
        for stream in (process.stdin, process.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass

    def close(self) -> None:
        self.stop()
        self._stderr.close()
        try:
            os.unlink(self._stderr.name)
        except OSError:
            pass
