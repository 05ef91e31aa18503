"""Tried as a user would: programs other teams wrote, run as their users run them, against our job
server and, side by side, against peers (runners we did not write).

  python -m trials.run_trials [--backend reference|spark] [--peer prism,local] [--only java,go,ts]

- java: Beam's own examples from Maven Central's beam-examples-java (trials/java/pom.xml), each
  `java -cp CLASSPATH org.apache.beam.examples.X --runner=PortableRunner --jobEndpoint=HOST:PORT
  --defaultEnvironmentType=LOOPBACK ...` on local files; trials/java_examples.py says what each
  is given and must write.
- go: the Go SDK's integration tests of the primitives
  (github.com/apache/beam/sdks/v2/go/test/integration/primitives), built by `go test -c` in a
  scratch module that requires the SDK (trials/go), one test per process, `-runner=universal
  -endpoint=HOST:PORT -environment_type=LOOPBACK`. The tests check their own output (passert).
- ts: the TypeScript SDK's word count (trials/typescript/wordcount.js), its printed counts
  compared with counts computed here.

Our job server (`python -m reference_runner.jobserver serve --backend B`) and each peer are
started on free loopback ports, and stopped at the end. Builds go to the cache
(~/.cache/beam-conformance, or $BEAM_CONFORMANCE_CACHE), as do each program's work directory and
logs. The Markdown table goes to OUT/<backend>.md, the same results as JSON to OUT/<backend>.json.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from conformance.peers import artifacts, pins
from conformance.session.results import portable_paths
from conformance.session.targets.processes import free_port, start_group, stop_group, wait_until_serving
from conformance.targets import TargetUnavailable
from trials import findings, java_examples

ROOT = Path(__file__).resolve().parent.parent
TRIALS = Path(__file__).resolve().parent

JAVA_EXAMPLES_BEAM = "2.62.0"  # trials/java/pom.xml; 2.65.0 is not served (see there)
GO_SDK = "v2.77.0"  # trials/go/go.mod
GO_PACKAGE = "github.com/apache/beam/sdks/v2/go/test/integration/primitives"
TS_SDK = "2.49.0"  # trials/typescript/package.json

KEEP_RUNS = 4  # the newest runs' work directories and logs kept in the cache, per backend

DEFAULT_TIMEOUTS = {"java": 300.0, "go": 120.0, "ts": 180.0}

PEERS = {
    "prism": f"Prism {pins.PRISM.version} (Beam's Go portable runner, its job server binary)",
    "local": "Beam's Python local job service (apache-beam's FnApiRunner behind the Job API)",
}


def log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# Job servers


class JobServer:
    """A Job API server this run starts on a free loopback port, restarted if it dies."""

    def __init__(self, name: str, argv: Callable[[int], list[str]], logs: Path, cwd: Path | None = None):
        self.name = name
        self._argv = argv
        self._logs = logs
        self._cwd = cwd
        self._process: subprocess.Popen | None = None
        self._log_file = None
        self.endpoint = ""
        self.starts = 0

    def ensure(self) -> str | None:
        """Started and answering; None, or why it could not be started."""
        if self._process is not None and self._process.poll() is None:
            return None
        if self._process is not None:
            log(f"  {self.name}'s job server exited with code {self._process.returncode}; starting it again")
        self.stop()
        port = free_port()
        self.starts += 1
        path = self._logs / f"job-server-{self.name}-{self.starts}.log"
        self._log_file = open(path, "w")
        argv = self._argv(port)
        self._process = start_group(argv, self._log_file, f"{self.name} job server", cwd=self._cwd)
        self.endpoint = f"localhost:{port}"
        try:
            wait_until_serving(self.endpoint, 120, self._process, str(path), f"{self.name} job server")
        except TargetUnavailable as e:
            self.stop()
            return str(e).splitlines()[0]
        log(f"  {self.name}: job server at {self.endpoint} ({' '.join(argv[:4])} ...)")
        return None

    def stop(self) -> None:
        stop_group(self._process)
        self._process = None
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def jobs(self) -> list[tuple[str, str]] | None:
        """(job name, final state) of every job the server knows, or None if it cannot say."""
        import grpc
        from apache_beam.portability.api import beam_job_api_pb2, beam_job_api_pb2_grpc

        try:
            with grpc.insecure_channel(self.endpoint) as channel:
                stub = beam_job_api_pb2_grpc.JobServiceStub(channel)
                infos = stub.GetJobs(beam_job_api_pb2.GetJobsRequest(), timeout=10).job_info
        except grpc.RpcError:
            return None
        return [(i.job_name, beam_job_api_pb2.JobState.Enum.Name(i.state)) for i in infos]


def our_server(backend: str, logs: Path) -> JobServer:
    return JobServer(
        "ours",
        lambda port: [
            sys.executable,
            "-m",
            "reference_runner.jobserver",
            "serve",
            "--port",
            str(port),
            "--backend",
            backend,
        ],
        logs,
        cwd=ROOT,
    )


def peer_server(name: str, logs: Path) -> JobServer:
    if name == "prism":
        binary = str(artifacts.go_binary(pins.PRISM.module, pins.PRISM.version, log))
        return JobServer(
            "prism", lambda port: [binary, f"--job_port={port}", "--serve_http=false", "--log_level=warn"], logs
        )
    if name == "local":
        return JobServer(
            "local",
            lambda port: [
                sys.executable,
                "-m",
                "apache_beam.runners.portability.local_job_service_main",
                "--port",
                str(port),
            ],
            logs,
        )
    raise ValueError(name)


# ---------------------------------------------------------------------------------------------
# Running one program


@dataclass
class Outcome:
    status: str  # pass, fail, timeout, skip (the program skipped itself), not run
    seconds: float = 0.0
    error: str = ""  # the first line that says what went wrong
    detail: str = ""  # where its whole output is


@dataclass
class Row:
    sdk: str
    program: str
    note: str = ""
    outcomes: dict[str, Outcome] = field(default_factory=dict)


@dataclass
class Finished:
    returncode: int | None  # None: timed out, and was stopped
    seconds: float
    stdout: str
    stderr: str


def run_program(argv: list[str], cwd: Path, timeout: float, env: dict | None = None) -> Finished:
    """Run a program as its own process group, its output in cwd/stdout.txt and cwd/stderr.txt."""
    started = time.monotonic()
    with open(cwd / "stdout.txt", "w") as out, open(cwd / "stderr.txt", "w") as err:
        process = subprocess.Popen(
            argv, cwd=cwd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, start_new_session=True, env=env
        )
        try:
            process.wait(timeout)
            returncode: int | None = process.returncode
        except subprocess.TimeoutExpired:
            stop_group(process)
            returncode = None
        except BaseException:  # interrupted: the program goes with us
            stop_group(process)
            raise
    seconds = time.monotonic() - started
    read = lambda name: (cwd / name).read_text(errors="replace")  # noqa: E731
    return Finished(returncode, seconds, read("stdout.txt"), read("stderr.txt"))


# Lines that say what went wrong, best first.
_ERROR_LINE = [
    re.compile(r"^Caused by: (?!java\.util\.concurrent\.ExecutionException).*"),
    re.compile(r".*(Exception|Error)(: | in thread).*"),
    re.compile(r".*\b(failed|FAILED|error|refused|unsupported|not supported)\b.*"),
]
_NOISE = re.compile(r"^(SLF4J|WARNING: An illegal|\s+at |\s*\.\.\. \d+ more|\(node:\d+\) |\(Use `node )")


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip() and not _NOISE.match(line)]
    return _short(lines[-1]) if lines else "(no output)"


def first_error_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip() and not _NOISE.match(line)]
    for pattern in _ERROR_LINE:
        for i, line in enumerate(lines):
            if pattern.match(line):
                if line.endswith(":"):  # a list of reasons follows (a runner refusing a pipeline)
                    line += "".join(" " + r for r in itertools.takewhile(lambda r: r.startswith("- "), lines[i + 1 :]))
                return _short(line, 400)
    return _short(lines[-1]) if lines else "(no output)"


def _short(line: str, limit: int = 240) -> str:
    line = " ".join(line.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _built(cache_name: str, sources: str, command: list[str], what: str) -> Path:
    """``trials/<sources>`` built into the cache as ``cache_name`` by ``command`` (``what`` says
    what it does, for the progress line)."""
    return artifacts.source_build(cache_name, TRIALS / sources, [(command, what)], log)


def _work_dir(base: Path, *parts: str) -> Path:
    work = base.joinpath(*(re.sub(r"[^A-Za-z0-9_.-]", "_", p) for p in parts))
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    return work


# ---------------------------------------------------------------------------------------------
# Java: Beam's examples


def java_classpath() -> str:
    home = _built(
        "trials-java-examples",
        "java",
        ["mvn", "-q", "-B", "dependency:build-classpath", "-Dmdep.outputFile=classpath.txt"],
        f"resolving beam-examples-java {JAVA_EXAMPLES_BEAM} and the portable runner with Maven",
    )
    return (home / "classpath.txt").read_text().strip()


def java_trial(example, server: JobServer, classpath: str, work: Path, timeout: float) -> Outcome:
    args = example.prepare(work)
    argv = [
        "java",
        *example.jvm_flags,
        "-cp",
        classpath,
        example.main_class,
        "--runner=PortableRunner",
        f"--jobEndpoint={server.endpoint}",
        "--defaultEnvironmentType=LOOPBACK",
        *args,
    ]
    (work / "command.txt").write_text(" ".join(a if a != classpath else "CLASSPATH" for a in argv) + "\n")
    done = run_program(argv, work, timeout)
    if done.returncode is None:
        return Outcome("timeout", done.seconds, f"no end within {timeout:g} s; last line: {last_line(done.stderr)}")
    if done.returncode != 0:
        return Outcome("fail", done.seconds, f"exit {done.returncode}: {first_error_line(done.stderr)}")
    problem = example.check(java_examples.Context(work, done.stdout, done.stderr))
    if problem:
        return Outcome("fail", done.seconds, _short(f"output: {problem}"))
    return Outcome("pass", done.seconds)


# ---------------------------------------------------------------------------------------------
# Go: the SDK's integration tests of the primitives


def go_test_binary() -> Path:
    home = _built(
        "trials-go-primitives",
        "go",
        ["go", "test", "-c", "-o", "primitives.test", GO_PACKAGE],
        f"building the Go SDK {GO_SDK}'s primitives integration tests with go test -c",
    )
    return home / "primitives.test"


def go_filters() -> dict[str, list[str]]:
    """The runner filters of the SDK's test/integration/integration.go: which tests Beam itself
    skips on which runner (regular expressions matched against the whole test name)."""
    directory = subprocess.run(
        ["go", "list", "-m", "-f", "{{.Dir}}", "github.com/apache/beam/sdks/v2"],
        cwd=TRIALS / "go",
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    source = (Path(directory) / "go" / "test" / "integration" / "integration.go").read_text()
    filters = {}
    for name, body in re.findall(r"var (\w+)Filters = \[\]string\{(.*?)\n\}", source, re.S):
        filters[name] = [m for m in re.findall(r'^\s*"([^"]+)"', body, re.M)]
    return filters


def filtered_for(test: str, filters: dict[str, list[str]]) -> list[str]:
    return [runner for runner, patterns in filters.items() if any(re.fullmatch(p, test) for p in patterns)]


def go_tests(binary: Path) -> list[str]:
    listed = subprocess.run([str(binary), "-test.list", ".*"], capture_output=True, text=True, check=True).stdout
    return [line for line in listed.split() if line.startswith("Test")]


def go_trial(binary: Path, test: str, server: JobServer, work: Path, timeout: float) -> Outcome:
    argv = [
        str(binary),
        "-test.run",
        f"^{test}$",
        "-test.v",
        "-test.count=1",
        "-runner=universal",
        f"-endpoint={server.endpoint}",
        "-environment_type=LOOPBACK",
    ]
    (work / "command.txt").write_text(" ".join(argv) + "\n")
    done = run_program(argv, work, timeout)
    output = done.stdout + done.stderr
    if done.returncode is None:
        return Outcome("timeout", done.seconds, f"no end within {timeout:g} s; {_go_error(output, test)}")
    verdicts = re.findall(rf"^--- (PASS|FAIL|SKIP): {re.escape(test)} ", output, re.M)
    verdict = verdicts[-1] if verdicts else None
    if verdict == "SKIP":
        reason = re.search(r"^\s+\S+\.go:\d+: (.*)$", output, re.M)
        return Outcome("skip", done.seconds, _short(reason.group(1) if reason else "skipped"))
    if verdict == "PASS" and done.returncode == 0:
        # The SDK takes a message stream that ends without a terminal state as success: ask the
        # server how the test's jobs (named go-<test>-N) ended.
        jobs = server.jobs()
        prefix = f"go-{test.lower()}-"
        ended = [(n, s) for n, s in (jobs or []) if n.startswith(prefix)]
        bad = [(n, s) for n, s in ended if s != "DONE"]
        if bad:
            return Outcome("fail", done.seconds, f"go test passed, but the job server says {bad[0][0]} is {bad[0][1]}")
        return Outcome("pass", done.seconds)
    return Outcome("fail", done.seconds, _go_error(output, test))


def _go_error(output: str, test: str) -> str:
    """What a failed test said: its first t.Fatal/t.Error message (with its indented continuation
    lines) cut to the job's failure and its last cause, else a panic, else an ERROR log line."""
    lines = output.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^(\s+)\S+\.go:\d+: (.*)", line)
        if m:
            block = [m.group(2).strip()]
            for follow in lines[i + 1 :]:
                if not follow.startswith(m.group(1) + " ") and not follow.startswith("\t"):
                    break
                block.append(follow.strip())
            return _go_summary(block)
    for pattern in (re.compile(r"^panic: (.*)"), re.compile(r".*level=ERROR msg=\"?(.*)")):
        for line in lines:
            m = pattern.match(line)
            if m:
                return _ends(m.group(1).replace("\\n", " ").replace("\\t", " "))
    return first_error_line(output)


def _go_summary(block: list[str]) -> str:
    """The first line of a test's failure message (the job's failure, without the bundle's plan)
    and its last "caused by" (with the list of reasons a refusing runner gives after it), or a
    passert mismatch's counts."""
    head = block[0].removeprefix("Failed to execute job: ")
    if len(block) > 1 and head.endswith(":"):
        head += " " + block[1]
    head = re.split(r" (?:for instruction|: while executing) ", head)[0]
    joined = "\n".join(block)
    if "does not match expected values" in joined:
        counts = re.findall(r"^(\d+) (correct|unexpected|missing) entries", joined, re.M)
        cause = (
            "passert: actual PCollection does not match expected values ("
            + ", ".join(f"{n} {what}" for n, what in counts)
            + ")"
        )
    else:
        causes = [i for i, line in enumerate(block) if line == "caused by:"]
        if not causes:
            return _ends(" ".join(block).removeprefix("Failed to execute job: "))
        rest = block[causes[-1] + 1 :]
        cause = rest[0].split(" goroutine ")[0] if rest else ""
        if cause.endswith(":") and len(rest) > 1:  # e.g. "DoFn[...] failed:", then why
            cause += " " + rest[1]
        cause += "".join(" " + line for line in rest[1:] if line.startswith("- "))
    return _short(f"{_short(head, 110)} -> {cause}", 400)


def _ends(text: str, head: int = 90, tail: int = 190) -> str:
    text = " ".join(text.split())
    return text if len(text) <= head + tail + 5 else f"{text[:head]} ... {text[-tail:]}"


# ---------------------------------------------------------------------------------------------
# TypeScript: the SDK's word count

TS_INPUT = (
    "In the beginning God created the heaven and the earth.\n"
    "And the earth was without form, and void; and darkness was upon the face of the deep.\n"
    "And the Spirit of God moved upon the face of the waters.\n"
    "And God said, Let there be light: and there was light.\n"
    "And God saw the light, that it was good -- 1:4\n"
)


def ts_expected(text: str) -> collections.Counter:
    """The example's transform, computed here: lower-case, split on /[^a-z]+/ (empty words
    included), count."""
    counts: collections.Counter = collections.Counter()
    for line in text.splitlines():
        counts.update(re.split(r"[^a-z]+", line.lower()))
    return counts


def ts_program() -> Path:
    home = _built(
        "trials-typescript",
        "typescript",
        ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"],
        f"installing npm apache-beam {TS_SDK}",
    )
    return home / "wordcount.js"


def ts_trial(program: Path, server: JobServer, work: Path, timeout: float) -> Outcome:
    (work / "input.txt").write_text(TS_INPUT)
    argv = ["node", str(program), f"--endpoint={server.endpoint}", f"--input={work / 'input.txt'}"]
    (work / "command.txt").write_text(" ".join(argv) + "\n")
    done = run_program(argv, work, timeout)
    if done.returncode is None:
        last = last_line(done.stdout + "\n" + done.stderr)
        return Outcome("timeout", done.seconds, f"no end within {timeout:g} s; last line: {last}")
    if done.returncode != 0:
        return Outcome("fail", done.seconds, f"exit {done.returncode}: {first_error_line(done.stderr)}")
    got: dict[str, int] = {}
    for word, count in re.findall(r"^\{ element: '([a-z]*)', count: (\d+) \}$", done.stdout, re.M):
        if word in got:
            return Outcome("fail", done.seconds, f"output: {word!r} printed twice")
        got[word] = int(count)
    problem = java_examples._compare_counts(got, dict(ts_expected(TS_INPUT)), "word counts")
    if problem:
        return Outcome("fail", done.seconds, _short(f"output: {problem}"))
    return Outcome("pass", done.seconds)


# ---------------------------------------------------------------------------------------------
# The run


def run(args) -> int:
    started = datetime.datetime.now(datetime.timezone.utc)
    copied: dict[tuple[str, str], dict[str, Outcome]] = {}
    if args.peers_from:  # the peers' columns come from an earlier run: only ours runs now
        earlier = json.loads(Path(args.peers_from).read_text())
        args.peer = earlier["runners"][1:]
        args.peers_copied = f"{portable_paths(args.peers_from)} (run {earlier['started']})"
        for r in earlier["rows"]:
            copied[(r["sdk"], r["program"])] = {k: Outcome(**o) for k, o in r["outcomes"].items() if k != "ours"}
    runners = ["ours", *args.peer]
    running = ["ours"] if args.peers_from else runners
    runs = artifacts.cache_dir() / "trials" / args.backend
    base = runs / f"{started:%Y%m%d-%H%M%S}-{os.getpid()}"  # one directory per run: runs may overlap
    logs = base / "logs"
    logs.mkdir(parents=True)
    for old in sorted(p for p in runs.iterdir() if p.is_dir())[:-KEEP_RUNS]:
        if time.time() - old.stat().st_mtime > 6 * 3600:  # never a run that may still be going
            shutil.rmtree(old, ignore_errors=True)
    rows: list[Row] = []
    problems: list[str] = []

    def servers(sdk: str) -> dict[str, JobServer]:
        (logs / sdk).mkdir()
        made = {"ours": our_server(args.backend, logs / sdk)}
        for peer in running[1:]:
            made[peer] = peer_server(peer, logs / sdk)
        return made

    def section(sdk: str, programs: list[tuple[str, str, Callable[[JobServer, Path], Outcome]]]) -> None:
        """Run each (program, note, trial) on every runner, one job server per runner per SDK."""
        by_runner = servers(sdk)
        try:
            for name, note, trial in programs:
                row = Row(sdk, name, note)
                rows.append(row)
                for runner in runners:
                    if runner not in running:
                        row.outcomes[runner] = copied.get((sdk, name), {}).get(runner, Outcome("not run"))
                        continue
                    server = by_runner[runner]
                    refused = server.ensure()
                    if refused:
                        row.outcomes[runner] = Outcome("not run", 0.0, f"job server did not start: {refused}")
                        continue
                    work = _work_dir(base / "work", sdk, runner, name)
                    outcome = trial(server, work)
                    outcome.detail = str(work.relative_to(artifacts.cache_dir()))
                    row.outcomes[runner] = outcome
                    log(f"  {sdk} {name} on {runner}: {outcome.status} ({outcome.seconds:.1f} s) {outcome.error}")
        finally:
            for server in by_runner.values():
                server.stop()

    timeout = lambda sdk: args.timeout or DEFAULT_TIMEOUTS[sdk]  # noqa: E731

    if "java" in args.only:
        log(f"java: Beam's examples (beam-examples-java {JAVA_EXAMPLES_BEAM})")
        try:
            classpath = java_classpath()
        except artifacts.ArtifactUnavailable as e:
            problems.append(f"java: {e}")
        else:
            section(
                "java",
                [
                    (
                        ex.name,
                        "",
                        lambda server, work, ex=ex: java_trial(ex, server, classpath, work, timeout("java")),
                    )
                    for ex in java_examples.EXAMPLES
                    if re.search(args.java_run, ex.name)
                ],
            )

    if "go" in args.only:
        log(f"go: the Go SDK {GO_SDK}'s {GO_PACKAGE}")
        try:
            binary = go_test_binary()
            filters = go_filters()
            tests = [t for t in go_tests(binary) if re.search(args.go_run, t)]
        except (artifacts.ArtifactUnavailable, subprocess.CalledProcessError) as e:
            problems.append(f"go: {e}")
        else:
            section(
                "go",
                [
                    (
                        test,
                        ", ".join(filtered_for(test, filters)),
                        lambda server, work, test=test: go_trial(binary, test, server, work, timeout("go")),
                    )
                    for test in tests
                ],
            )

    if "ts" in args.only:
        log(f"ts: the TypeScript SDK's word count (npm apache-beam {TS_SDK})")
        try:
            program = ts_program()
        except artifacts.ArtifactUnavailable as e:
            problems.append(f"ts: {e}")
        else:
            section("ts", [("wordcount", "", lambda server, work: ts_trial(program, server, work, timeout("ts")))])

    ended = datetime.datetime.now(datetime.timezone.utc)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report = render(args, runners, rows, problems, started, ended)
    (out / f"{args.backend}.md").write_text(report)
    (out / f"{args.backend}.json").write_text(
        json.dumps(
            {
                "backend": args.backend,
                "runners": runners,
                "started": started.isoformat(timespec="seconds"),
                "ended": ended.isoformat(timespec="seconds"),
                "problems": problems,
                "rows": [asdict(r) for r in rows],
            },
            indent=1,
        )
        + "\n"
    )
    log(f"wrote {out / (args.backend + '.md')} and .json; logs and work directories under {base}")
    for problem in problems:
        log(f"could not run: {problem}")
    if problems:
        return 2
    if args.strict and any(_unexpected(r) for r in rows):
        return 1
    return 0


def _unexpected(row: Row) -> bool:
    """Did ours neither pass nor skip the program, with no finding of ours to explain it?"""
    status = row.outcomes.get("ours", Outcome("not run")).status
    return status not in ("pass", "skip") and not findings.expected_failure(row.sdk, row.program, status)


def render(args, runners, rows, problems, started, ended) -> str:
    import apache_beam

    cell = lambda o: "—" if o is None else {"pass": "pass", "skip": "skip"}.get(o.status, f"**{o.status}**")  # noqa: E731
    lines = [
        f"# SDK trials: `{args.backend}` backend",
        "",
        "Programs other teams wrote, run as their users run them against our job server "
        f"(`python -m reference_runner.jobserver serve --backend {args.backend}`) and, side by side, "
        "against "
        + ", ".join(PEERS[p] for p in args.peer)
        + (
            f" (their columns copied from {portable_paths(args.peers_copied)}; only ours ran now)"
            if args.peers_from
            else ""
        )
        + ". Written by `python -m trials.run_trials "
        + portable_paths(" ".join(sys.argv[1:]))
        + f"`, {started:%Y-%m-%d %H:%M} to {ended:%H:%M} UTC (times are wall seconds on a shared two-core machine).",
        "",
        f"- **java**: `beam-examples-java` {JAVA_EXAMPLES_BEAM} from Maven Central (2.65.0 is not served), "
        "`java -cp CLASSPATH org.apache.beam.examples.X --runner=PortableRunner --jobEndpoint=localhost:PORT "
        "--defaultEnvironmentType=LOOPBACK` with local input files; the output files are compared with what "
        "`trials/java_examples.py` computes from the inputs.",
        f"- **go**: `{GO_PACKAGE}` at {GO_SDK}, built with `go test -c` in a scratch module (`trials/go`), each test "
        "as `primitives.test -test.run '^TestX$' -runner=universal -endpoint=localhost:PORT "
        "-environment_type=LOOPBACK` (the tests check themselves with passert; a pass is also checked against the "
        "job's final state on the server). `-runner=universal` matches none of the SDK's runner filters, so every "
        "test runs; the column *Beam skips on* names the runners whose filter list in "
        "`test/integration/integration.go` skips the test; *our finding* links ours where a test asks for "
        "more than the Beam model fixes (`trials/findings.py`: --strict expects those failures).",
        f"- **ts**: npm `apache-beam` {TS_SDK}: the SDK's `examples/wordcount.js` transform "
        "(`trials/typescript/wordcount.js`, PortableRunner, LOOPBACK), its printed counts compared with counts "
        "computed here.",
        f"- Python side: apache-beam {apache_beam.__version__}. Timeout per program: "
        + ", ".join(f"{sdk} {args.timeout or s:g} s" for sdk, s in DEFAULT_TIMEOUTS.items())
        + ".",
        "",
    ]
    if problems:
        lines += ["**Could not run:**", ""] + [f"- {p.splitlines()[0]}" for p in problems] + [""]

    # summary
    lines += ["| runner | pass | fail | timeout | skip | not run |", "|---|---|---|---|---|---|"]
    for runner in runners:
        counts = collections.Counter(r.outcomes[runner].status for r in rows if runner in r.outcomes)
        lines.append(
            f"| {runner} | {counts['pass']} | {counts['fail']} | {counts['timeout']} | {counts['skip']} | "
            f"{counts['not run']} |"
        )
    lines.append("")

    header = ["SDK", "program"]
    for runner in runners:
        header += [runner, "s"]
    header += ["Beam skips on", "our finding", "first error line (ours)"]
    header += [f"first error line ({p})" for p in args.peer]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        cells = [row.sdk, f"`{row.program}`"]
        for runner in runners:
            o = row.outcomes.get(runner)
            cells += [cell(o), f"{o.seconds:.1f}" if o else ""]
        cells.append(row.note)
        ours = row.outcomes.get("ours", Outcome("not run")).status
        cells.append(findings.note(row.sdk, row.program, ours, Path(args.out).resolve()))
        for runner in runners:
            o = row.outcomes.get(runner)
            cells.append(_md(o.error) if o and o.status not in ("pass",) else "")
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    if "java" in args.only:
        lines += ["Java examples not tried, and why:", ""]
        lines += [f"- {names}: {why}." for names, why in java_examples.EXCLUDED]
        lines.append("")
    lines += [
        "Each program's command, output and work files:"
        " `<cache>/trials/<backend>/<run>/work/<sdk>/<runner>/<program>/` "
        "(`<cache>` is `~/.cache/beam-conformance`); the job servers' logs:"
        " `<cache>/trials/<backend>/<run>/logs/<sdk>/`.",
        "",
    ]
    return "\n".join(lines)


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _list(value: str, allowed) -> list[str]:
    items = [v.strip() for v in value.split(",") if v.strip()]
    if value.strip() in ("", "none"):
        return []
    unknown = [v for v in items if v not in allowed]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown {', '.join(unknown)}; choose from {', '.join(allowed)}")
    return items


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m trials.run_trials",
        description=(
            "Run programs other teams wrote (Beam's Java examples, the Go SDK's primitives integration "
            "tests, the TypeScript SDK's word count), each as its users run it, against our job server "
            "and side by side against peers; check their outputs against expectations computed from "
            "their inputs; write a Markdown table (and JSON) of the outcomes to OUT/<backend>.md. "
            "Exit code: 0 when the table was written (whatever it says), 1 with --strict when one of "
            "ours did not pass and no finding of ours (trials/findings.py) explains it, 2 when an SDK's "
            "programs could not be built or fetched."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--backend",
        choices=["reference", "spark"],
        default="reference",
        help="which engine our job server runs the jobs on (python -m reference_runner.jobserver serve --backend ...)",
    )
    parser.add_argument(
        "--peer",
        default="prism,local",
        type=lambda v: _list(v, PEERS),
        help="the runners run side by side with ours, comma-separated (or 'none'): prism = "
        + PEERS["prism"]
        + "; local = "
        + PEERS["local"],
    )
    parser.add_argument(
        "--peers-from",
        metavar="JSON",
        help="do not run the peers: copy their columns from an earlier run's OUT/<backend>.json (its peers "
        "replace --peer); only our job server runs. The peers do not depend on --backend, so a run of the "
        "other backend can reuse them",
    )
    parser.add_argument(
        "--only",
        default="java,go,ts",
        type=lambda v: _list(v, ("java", "go", "ts")),
        help="which SDKs' programs to run, comma-separated: java (Beam's examples), go (the SDK's "
        "primitives integration tests), ts (the TypeScript word count)",
    )
    parser.add_argument(
        "--out",
        default=str(ROOT / "reports" / "sdk-trials"),
        help="directory for <backend>.md and <backend>.json",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="seconds each program may run before it is stopped and counted as a timeout "
        "(default per SDK: " + ", ".join(f"{k} {v:g}" for k, v in DEFAULT_TIMEOUTS.items()) + ")",
    )
    parser.add_argument("--java-run", default="", help="only the Java examples whose name matches this regex")
    parser.add_argument("--go-run", default="", help="only the Go tests whose name matches this regex")
    parser.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 when any program on our job server does not pass (or skip), unless a finding of ours "
        "(trials/findings.py) expects its failure",
    )
    args = parser.parse_args(argv)
    os.chdir(ROOT)
    # a terminated run still stops the job servers and the program it started
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
