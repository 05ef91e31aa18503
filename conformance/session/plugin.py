"""The pytest plugin: targets, capability markers, expectations and results.

Registered through the ``pytest11`` entry point, so ``pytest --pyargs conformance``
works from any project that installed the kit.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

import reference_runner  # noqa: F401  (first: it imports Beam quietly, reference_runner/beam_import.py)
from conformance import api, capabilities, generated
from conformance.authoring import checks, shapes
from conformance.authoring.case_runner import CaseFailure, CaseRunner, PipelineCapture
from conformance.java_vr import suite as java_vr
from conformance.session import batching, results, streaming_cases, targets
from conformance.session.entry_check import EntryCheck
from conformance.session.expectations import (
    NAMED_BY_OPTION,
    NOT_RUN,
    Expectations,
    ExpectationsError,
    KnownFailure,
)

DEFAULT_TARGET = "reference"
DEFAULT_CASE_TIMEOUT = 180.0
# the committed known-failure files: data of the conformance package (conformance/expectations/)
EXPECTATIONS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "expectations")
CASES_PACKAGE = "conformance.cases."

_CASE = pytest.StashKey["CaseInfo"]()
_RECORDER = pytest.StashKey["_Recorder"]()
_EXPECTATIONS = pytest.StashKey[Expectations]()
_STARTED = pytest.StashKey[float]()
_TARGET = pytest.StashKey["_SessionTarget"]()
_BATCHES = pytest.StashKey[batching.Batches]()
_NOTHING_SELECTED = pytest.StashKey[str]()
_NOT_ASKED_FOR = pytest.StashKey[bool]()
_GENERATED_DEADLINE = pytest.StashKey[float]()


def pytest_addoption(parser):
    group = parser.getgroup("beam-conformance", "Beam runner conformance suite")
    group.addoption(
        "--target",
        default=os.environ.get("BEAM_CONFORMANCE_TARGET", DEFAULT_TARGET),
        help="runner to test: reference (our reference runner, in this process), spark (our Spark "
        "backend), beam-direct, beam-fnapi, prism, flink, beam-spark-job-server, beam-dask, "
        "grpc://HOST:PORT (any Beam Job API endpoint), grpc with --job-server-cmd, or a target a "
        "plugin registered. Default: $BEAM_CONFORMANCE_TARGET, else "
        f"{DEFAULT_TARGET}. --target=list shows every registered target.",
    )
    group.addoption(
        "--target-name",
        default=None,
        help="column name for this runner in results and the capability matrix (default: derived from --target)",
    )
    group.addoption(
        "--expectations",
        default=None,
        metavar="FILE.yaml",
        help="known failures of this runner (by case id glob or capability, each with a "
        "reason). Default: the first of conformance/expectations/<target-name>.yaml under the "
        "current directory, under the project root pytest found, or among the kit's own files; "
        "the run's header names the file. Pass 'none' to expect every case to pass.",
    )
    group.addoption(
        "--environment-type",
        default="LOOPBACK",
        choices=["LOOPBACK", "EXTERNAL", "PROCESS", "DOCKER"],
        type=str.upper,
        help="grpc targets: SDK worker environment requested from the runner (default LOOPBACK: "
        "a worker in this process that the runner reaches on localhost). EXTERNAL without "
        "--environment-config: the session starts Beam's Python worker pool for the runner "
        "to reach at --worker-pool-host (a runner in a container or on another host). "
        "PROCESS without a config: the runner starts the kit's boot command on its machine.",
    )
    group.addoption(
        "--environment-config",
        default=None,
        help="grpc targets: environment config as Beam takes it (EXTERNAL: HOST:PORT of a worker "
        'pool you run; PROCESS: \'{"command": "/path/to/boot"}\'; DOCKER: an image)',
    )
    group.addoption(
        "--worker-pool-host",
        default="127.0.0.1",
        metavar="HOST",
        help="EXTERNAL without a config: the address of this machine as the runner sees it, "
        "e.g. the docker bridge gateway (172.17.0.1) for a job server in a container; "
        "default 127.0.0.1, right for a job server on this machine. The pool listens on "
        "every interface.",
    )
    group.addoption(
        "--worker-pool-port",
        type=int,
        default=0,
        metavar="PORT",
        help="EXTERNAL without a config: the worker pool's port (default: a free one)",
    )
    group.addoption(
        "--job-server-cmd",
        default=None,
        metavar="'CMD ... {port}'",
        help="grpc targets: start this job server for the session on a free loopback port "
        "({port} is replaced), wait until it answers, stop it at the end",
    )
    group.addoption(
        "--job-server-timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="how long to wait for a job server to answer (default 60)",
    )
    group.addoption(
        "--case-timeout",
        type=float,
        default=DEFAULT_CASE_TIMEOUT,
        metavar="SECONDS",
        help=f"time limit of one case, so a hanging runner cannot hang the suite (default {DEFAULT_CASE_TIMEOUT:g})",
    )
    group.addoption(
        "--property-examples",
        type=int,
        default=None,
        metavar="N",
        help="random inputs tried by each property-based case (each one a pipeline run; default "
        f"{api.DEFAULT_PROPERTY_EXAMPLES}, or fewer where the target asks for it, e.g. flink 2): "
        "fewer for a slow runner, more to search harder. The "
        "examples are derandomized: the first N are the same on every run",
    )
    group.addoption(
        "--per-capability",
        type=int,
        default=None,
        metavar="N",
        help="run at most N cases of each capability (the first N in the suite's order, cases "
        "marked skip in the expectations left out): a smoke run that still touches every "
        "capability, for CI or a first look at a new runner. Counted as a narrowed run, like -k",
    )
    group.addoption(
        "--results-dir",
        default="reports",
        metavar="DIR",
        help="where results-<target>.json is written (default ./reports)",
    )
    group.addoption(
        "--junit-beside-results",
        action="store_true",
        help="also write JUnit XML into --results-dir, named after the target like its results file "
        "(junit-<target>.xml; junit-<target>.java-vr.xml for --suite java-vr); --junitxml wins",
    )
    group.addoption(
        "--sdks",
        default="",
        metavar="LIST",
        help="run the cross-SDK cases (cases/test_sdk_pipelines.py) of these SDKs: a comma-separated "
        "subset of java, go, typescript, or 'all'. Each SDK's program is built into the cache on first "
        "use (Maven, go build, npm). Default: none, and those cases are deselected",
    )
    group.addoption("--no-results", action="store_true", help="do not write results-<target>.json")
    group.addoption(
        "--generated-examples",
        type=generated.at_least_one,
        default=generated.DEFAULT_EXAMPLES,
        help="with -m generated: how many generated pipelines to draw and judge against the model "
        f"(default {generated.DEFAULT_EXAMPLES})",
    )
    group.addoption(
        "--generated-seed",
        type=int,
        default=generated.DEFAULT_SEED,
        help="with -m generated: the seed the pipelines are drawn from; a seed gives the same pipelines "
        f"on every machine (default {generated.DEFAULT_SEED})",
    )
    group.addoption(
        "--generated-shrink-runs",
        type=generated.at_least_one,
        default=generated.DEFAULT_SHRINK_RUNS,
        help="with -m generated: at most this many runs of smaller candidates when shrinking a deviating "
        f"pipeline to a minimal program (default {generated.DEFAULT_SHRINK_RUNS})",
    )
    group.addoption(
        "--generated-minutes",
        type=generated.positive_minutes,
        default=None,
        metavar="M",
        help="with -m generated: a time budget for the run, counted from its start; a pipeline whose turn "
        "comes after it is skipped unrun, with that reason (default: no budget, every drawn pipeline runs)",
    )
    group.addoption(
        "--generated-capabilities",
        type=generated.capability_names,
        default=(),
        metavar="LIST",
        help="with -m generated: draw only pipelines that touch one of these capabilities, a comma-separated "
        "list of capability ids (triggers.count), their groups (triggers) or matrix rows ('Count triggers'); "
        "beam-conformance capabilities lists them (default: every pipeline the generator draws)",
    )
    group.addoption(
        "--capture-pipelines",
        default=None,
        metavar="DIR",
        help="write the Runner API proto of every pipeline a case submits to DIR/<case id>-<n>.pb "
        "(as the case built it, n from 1 per case), to reproduce a failure outside the kit",
    )
    group.addoption(
        "--pipeline-shape",
        default=None,
        choices=list(shapes.SHAPES),
        metavar="SHAPE",
        help="submit every pipeline as Beam's Python SDK does after pre-optimizing it "
        "(--experiments=pre_optimize=SHAPE): "
        + "; ".join(f"{k}: {v}" for k, v in shapes.SHAPES.items())
        + ". Default: as built (grpc targets: the client's default rewrite)",
    )
    group.addoption(
        "--batch-size",
        type=int,
        default=None,
        metavar="N",
        help="run up to N independent cases in one shared job (one pipeline, each case under its own "
        "name), where a job's fixed cost dominates; each case keeps the verdict it gets alone (a case "
        "that fails in a batch is run again alone, and a batch whose job fails is split). 1 turns "
        "batching off. Default: the target's own (1 for every target the kit ships, by "
        "measurement: docs/benchmarks/batching.md). Needs the target's workers in this process (LOOPBACK)",
    )
    java_vr.add_options(group)
    group.addoption(
        "--list-cases",
        action="store_true",
        help="list the selected cases (after -k, -m, --per-capability), one per line: case id, "
        "capability, and 'streaming' where it is; run none. The ids are what -k matches, and what "
        "results, reports and expectations files name",
    )
    group.addoption(
        "--trust-unconfirmed-checks",
        action="store_true",
        help="accept output checks that cannot be confirmed because the runner reports no "
        "metrics and its workers run out of process",
    )


def pytest_cmdline_main(config):
    """--target list: the registered targets on stdout, and the run ends there, as with --help."""
    if config.getoption("target") != "list" or config.getoption("help") or config.getoption("version"):
        return None
    print("registered targets:\n" + targets.describe_all())
    return 0


class CaseInfo:
    def __init__(self, case_id: str, capability: capabilities.Capability, known: KnownFailure | None):
        self.id = case_id
        self.capability = capability
        self.known = known


# --------------------------------------------------------------------------- configuration


@pytest.hookimpl(tryfirst=True)  # before pytest's junitxml plugin reads --junitxml
def pytest_configure(config):
    config.addinivalue_line("markers", "capability(id): the capability a conformance case exercises")
    config.addinivalue_line("markers", "sdk(name): a case whose pipeline another SDK wrote (runs with --sdks)")
    config.addinivalue_line("markers", "java_vr(case_id): one of Beam's Java ValidatesRunner tests (--suite java-vr)")
    config.addinivalue_line(
        "markers", "generated: a pipeline the kit generated, judged by its model (collected only with -m generated)"
    )
    for group in capabilities.GROUPS:
        config.addinivalue_line("markers", f"{group}: conformance cases of the {group} capabilities")
    for name, text in capabilities.EXTRA_MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")
    _collect_this_package(config)
    if config.getoption("list_cases"):
        config.option.dist = "no"  # listing runs nothing: no pytest-xdist workers to start
    limit = config.getoption("per_capability")
    if limit is not None and limit < 1:
        raise pytest.UsageError(f"--per-capability must be at least 1, not {limit}")
    config.stash[_TARGET] = _SessionTarget(config)
    _junit_beside_results(config)
    examples = config.getoption("property_examples")
    if examples is None:
        examples = _target_property_examples(config)
    if examples < 1:
        raise pytest.UsageError(f"--property-examples must be at least 1, not {examples}")
    api.set_property_examples(examples)
    config.stash[_RECORDER] = _Recorder(config)
    config.pluginmanager.register(config.stash[_RECORDER], "beam-conformance-recorder")
    config.stash[_STARTED] = time.time()
    if config.getoption("generated_minutes") is not None:
        config.stash[_GENERATED_DEADLINE] = config.stash[_STARTED] + 60 * config.getoption("generated_minutes")
    config.stash[_EXPECTATIONS] = _load_expectations(config)
    config.pluginmanager.register(
        EntryCheck(
            config.stash[_EXPECTATIONS],
            lambda items: [case_id_of(i) for i in items if _is_case(i)],
            lambda: [name.removeprefix("test_") for name in packaged_case_modules()],
        ),
        "beam-conformance-entry-check",
    )
    config.stash[_BATCHES] = batching.Batches(
        _batch_size(config), config.getoption("case_timeout"), config.stash[_TARGET].started, case_id_of
    )


def _collect_this_package(config) -> None:
    """``--pyargs conformance[.MODULE]`` collects this plugin's own package. A folder named
    ``conformance`` in the working directory (where a user keeps conformance/expectations/) is a
    namespace package to Python's import system, and for an editable install it is found before
    the kit: pytest would then collect nothing from it."""
    if not config.option.pyargs:
        return
    import importlib.util

    import conformance

    home = os.path.dirname(os.path.abspath(conformance.__file__))
    rewritten = []
    for arg in config.args:
        name, sep, rest = arg.partition("::")
        if name != "conformance" and not name.startswith("conformance."):
            rewritten.append(arg)
            continue
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        origin = getattr(spec, "origin", None) or ""
        if spec is not None and os.path.abspath(origin).startswith(home + os.sep):
            rewritten.append(arg)  # found where the plugin lives: as given
            continue
        path = os.path.join(home, *name.split(".")[1:])
        path = path if os.path.isdir(path) else path + ".py"
        rewritten.append(path + sep + rest if os.path.exists(path) else arg)
    config.args[:] = rewritten


def _junit_beside_results(config) -> None:
    """--junit-beside-results: the JUnit XML is named by the session's one target name, as the
    results file is (a target that cannot be created reports that later, as every run does)."""
    if not config.getoption("junit_beside_results") or config.option.xmlpath:
        return
    try:
        name = config.stash[_TARGET].name
    except (targets.TargetUnavailable, pytest.UsageError):
        return
    suite = config.getoption("suite", "cases")
    config.option.xmlpath = os.path.join(config.getoption("results_dir"), results.junit_file_name(name, suite))


def _batch_size(config) -> int:
    """--batch-size, else the target's default; 1 (off) where the target's workers are not in this
    process: a shared job's checks are read from their memory."""
    size = config.getoption("batch_size")
    if size is not None and size < 1:
        raise pytest.UsageError(f"--batch-size must be at least 1, not {size}")
    try:
        target = config.stash[_TARGET].created()
    except (targets.TargetUnavailable, pytest.UsageError):
        return 1
    if not target.in_process_worker:
        return 1
    return size if size is not None else target.default_batch_size


class _SessionTarget:
    """The session's one Target: created on first use (its defaults, its name, fetching, the Java
    tests it selects), started on first use by a case: by the first case's fixture, or earlier by
    the first batch (which runs before any fixture of its cases is set up)."""

    def __init__(self, config):
        self.config = config
        self._target: targets.Target | None = None
        self._running = False
        self._error: Exception | None = None  # why it could not be created or started, raised again

    def created(self) -> targets.Target:
        """The target, not started (an xdist controller never starts it). --target-name names it."""
        if self._target is None:
            if self._error is not None:
                raise self._error
            try:
                target = targets.create(self.config.getoption("target"), settings_of(self.config))
            except (targets.TargetUnavailable, pytest.UsageError) as e:
                self._error = e
                raise
            target.name = self.config.getoption("target_name") or target.name
            self._target = target
        return self._target

    @property
    def name(self) -> str:
        """The name of the results file and the matrix column (and of default expectations)."""
        return self.created().name

    def started(self) -> targets.Target:
        target = self.created()
        if self._running:
            return target
        if self._error is not None:
            raise self._error
        try:
            target.start()
        except targets.TargetUnavailable as e:
            self._error = e
            raise
        self._running = True
        self.config.stash[_RECORDER].target_info = target.describe()
        return target

    def stop(self) -> None:
        if self._running:
            self._running = False
            self.created().stop()


def _target_property_examples(config) -> int:
    """The target's own default for --property-examples, else the kit's."""
    try:
        target = config.stash[_TARGET].created()
    except (targets.TargetUnavailable, pytest.UsageError):
        return api.DEFAULT_PROPERTY_EXAMPLES
    return target.default_property_examples or api.DEFAULT_PROPERTY_EXAMPLES


def settings_of(config) -> targets.TargetSettings:
    return targets.TargetSettings(
        environment_type=config.getoption("environment_type"),
        environment_config=config.getoption("environment_config"),
        job_server_cmd=config.getoption("job_server_cmd"),
        job_server_timeout=config.getoption("job_server_timeout"),
        worker_pool_host=config.getoption("worker_pool_host"),
        worker_pool_port=config.getoption("worker_pool_port"),
        trust_unconfirmed_checks=config.getoption("trust_unconfirmed_checks"),
        pipeline_shape=config.getoption("pipeline_shape"),
    )


def _sdks(option: str) -> tuple[str, ...]:
    from conformance.sdk_pipelines.programs import PROGRAMS

    named = [s.strip().lower() for s in option.split(",") if s.strip()]
    if named == ["all"]:
        return tuple(PROGRAMS)
    unknown = sorted(set(named) - set(PROGRAMS))
    if unknown:
        raise pytest.UsageError(f"--sdks: unknown SDK {unknown[0]!r}; known: {', '.join(PROGRAMS)} or all")
    return tuple(named)


def expectation_candidates(config, name: str) -> list[tuple[str, str]]:
    """Where a target's default expectations file is looked for, each with how it was chosen, the
    first that exists winning: ``conformance/expectations/<name>.yaml`` under the current directory,
    then under the project root pytest found, then the file the kit ships for its own peers."""
    relative = os.path.join("conformance", "expectations", f"{name}.yaml")
    found: list[tuple[str, str]] = []
    seen: set[str] = set()
    for path, how in (
        (os.path.join(os.getcwd(), relative), "chosen by the target's name"),
        (os.path.join(str(config.rootpath), relative), "chosen by the target's name, under the project root"),
        (os.path.join(EXPECTATIONS_DIR, f"{name}.yaml"), "shipped with the kit"),
    ):
        real = os.path.realpath(path)
        if real not in seen:
            seen.add(real)
            found.append((path, how))
    return found


def _load_expectations(config) -> Expectations:
    path = config.getoption("expectations")
    if path and path.lower() == "none":
        return Expectations.empty("none, as --expectations none asks")
    how = NAMED_BY_OPTION
    if path is None:
        try:
            name = config.stash[_TARGET].name
        except targets.TargetUnavailable as e:
            raise pytest.UsageError(str(e)) from None
        candidates = expectation_candidates(config, name)
        chosen = next(((p, h) for p, h in candidates if os.path.exists(p)), None)
        if chosen is None:
            return Expectations.empty(
                f"none: no conformance/expectations/{name}.yaml here, in the project or in the kit"
            )
        path, how = chosen
    try:
        return Expectations.load(path, how=how)
    except ExpectationsError as e:
        raise pytest.UsageError(str(e)) from None


def pytest_sessionstart(session):
    """Fetch the target's artifacts once, before any case (or pytest-xdist worker) starts, with
    news on the terminal: a first run of a fetched runner can take minutes."""
    config = session.config
    if hasattr(config, "workerinput"):
        return  # the controller fetched already
    reporter = config.pluginmanager.get_plugin("terminalreporter")

    def progress(line: str) -> None:
        if reporter is not None:
            reporter.write_line(f"beam-conformance: {line}")

    try:
        target = config.stash[_TARGET].created()
        target.fetch(progress)
        if not _only_lists(config):
            target.preflight()
    except targets.TargetUnavailable as e:
        # a usage error: pytest prints it as one "ERROR:" line and exits 4, before any case
        raise pytest.UsageError(f"target {config.getoption('target')} is unavailable: {e}") from None
    warning = config.stash[_EXPECTATIONS].version_warning(target.describe().get("runner_version"))
    if warning is not None and reporter is not None:
        reporter.write_line(f"beam-conformance: WARNING: {warning}", yellow=True)
    if java_vr.runs_java(config):
        java_vr.build(target, progress)  # Maven, once: the workers find it in the cache


def _only_lists(config) -> bool:
    """A run that lists cases and runs none (--collect-only, --list-cases) needs no live target."""
    return bool(config.getoption("collectonly") or config.getoption("list_cases", False))


def _named_target(config) -> str:
    """The target as the run's results name it, and its --target spec where that differs."""
    spec = config.getoption("target")
    try:
        name = config.stash[_TARGET].name
    except (targets.TargetUnavailable, pytest.UsageError):
        return spec
    return name if name == spec else f"{name} ({spec})"


def pytest_report_header(config):
    expectations = config.stash[_EXPECTATIONS]
    if expectations.path is None:
        said = f"expectations {expectations.how}"
    else:
        count = len(expectations.entries)
        said = (
            f"expectations {_shown_path(expectations.path)} ({expectations.how}; "
            f"{count} known failure{'' if count == 1 else 's'})"
        )
    return [f"beam-conformance: target {_named_target(config)}, {said}"]


def _shown_path(path: str) -> str:
    """A path relative to the working directory when it lies inside it."""
    relative = os.path.relpath(os.path.abspath(path))
    return path if relative.startswith("..") else relative


# --------------------------------------------------------------------------- collection


def case_id_of(item) -> str:
    java = item.get_closest_marker("java_vr")
    if java is not None:
        return java.args[0]
    module = item.module.__name__.rsplit(".", 1)[-1]
    module = module[len("test_") :] if module.startswith("test_") else module
    name = item.name[len("test_") :] if item.name.startswith("test_") else item.name
    return f"{module}/{name}"


def packaged_case_modules() -> set[str]:
    """The kit's case modules (``test_gbk``), but the Java ValidatesRunner suite's."""
    import pkgutil

    import conformance.cases

    return {
        m.name
        for m in pkgutil.iter_modules(conformance.cases.__path__)
        if m.name.startswith("test_") and m.name != java_vr.MODULE.removesuffix(".py")
    }


def _is_case(item) -> bool:
    """Packaged cases, and anyone's test marked @capability (a runner author may add their own)."""
    if item.get_closest_marker("capability") is not None:
        return True
    module = getattr(item, "module", None)
    return module is not None and module.__name__.startswith(CASES_PACKAGE)


def pytest_ignore_collect(collection_path, config):
    """--suite: the Java ValidatesRunner module is collected only for java-vr and all, the kit's
    other case modules only for cases and all."""
    if collection_path.parent.name != "cases" or collection_path.parent.parent.name != "conformance":
        return None
    if collection_path.name == GENERATED_MODULE:
        return None if asks_for_generated(config) else True
    if collection_path.name == java_vr.MODULE:
        return None if java_vr.runs_java(config) else True
    if collection_path.name.startswith("test_") and collection_path.suffix == ".py" and not java_vr.runs_cases(config):
        return True
    return None


GENERATED_MODULE = "test_generated.py"


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """--generated-minutes counts from the controller's start: its deadline goes to every xdist worker."""
    node.workerinput["beam_conformance_generated_deadline"] = node.config.stash.get(_GENERATED_DEADLINE, None)


def asks_for_generated(config) -> bool:
    """Generated pipelines are their own selection: collected when -m names them."""
    return "generated" in (config.getoption("markexpr", "") or "")


def pytest_generate_tests(metafunc):
    if "generated_program" in metafunc.fixturenames:
        from conformance.generated import cases as generated_cases  # only a -m generated run needs it

        config = metafunc.config
        try:
            drawn = generated_cases.params(
                config.getoption("generated_seed"),
                config.getoption("generated_examples"),
                config.getoption("generated_capabilities"),
                generated_cases.Judging(
                    config.getoption("generated_shrink_runs"),
                    os.path.join(config.getoption("results_dir"), "generated"),
                    config.workerinput.get("beam_conformance_generated_deadline")
                    if hasattr(config, "workerinput")
                    else config.stash.get(_GENERATED_DEADLINE, None),
                ),
            )
        except ValueError as e:
            raise pytest.UsageError(str(e)) from None
        metafunc.parametrize("generated_program", drawn)
    if "java_vr_test" in metafunc.fixturenames:
        config = metafunc.config
        try:
            target = config.stash[_TARGET].created()
        except targets.TargetUnavailable as e:
            raise pytest.UsageError(str(e)) from None
        metafunc.parametrize("java_vr_test", java_vr.params(config, target))


def _deselect_other_sdks(config, items) -> None:
    """Cases of another SDK's pipelines run only when --sdks names that SDK: unselected, they are
    not part of the run at all (no skip that would take a --per-capability slot or a matrix cell)."""
    enabled = set(_sdks(config.getoption("sdks")))
    dropped = [i for i in items if (m := i.get_closest_marker("sdk")) is not None and m.args[0] not in enabled]
    for item in dropped:
        item.stash[_NOT_ASKED_FOR] = True  # not part of the run: its leaving narrows nothing
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [i for i in items if i not in dropped]


@pytest.hookimpl(tryfirst=True)  # before -k and -m deselect: they read the case ids and markers added here
def pytest_collection_modifyitems(session, config, items):
    _deselect_other_sdks(config, items)
    expectations = config.stash[_EXPECTATIONS]
    timeout = config.getoption("case_timeout")
    seen: dict[str, str] = {}
    errors = []
    for item in items:
        if not _is_case(item):
            continue
        marker = item.get_closest_marker("capability")
        if marker is None or not marker.args:
            errors.append(f"{item.nodeid}: every conformance case needs @capability('<id>')")
            continue
        try:
            cap = capabilities.get(marker.args[0])
        except KeyError as e:
            errors.append(f"{item.nodeid}: {e.args[0]}")
            continue
        case_id = case_id_of(item)
        item.extra_keyword_matches.add(case_id)  # -k by the id results and reports give
        if case_id in seen:
            errors.append(f"case id {case_id} is used by both {seen[case_id]} and {item.nodeid}")
        seen[case_id] = item.nodeid
        item.add_marker(getattr(pytest.mark, cap.group))
        if item.get_closest_marker("streaming") is not None:
            errors.append(
                f"{item.nodeid}: remove @pytest.mark.streaming: the kit derives it from what the case does (a "
                "streaming capability, a TestStream, or the --streaming option; conformance/session/streaming_cases.py)"
            )
            continue
        if _is_streaming(item, cap):
            item.add_marker(pytest.mark.streaming)
        if item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(timeout))
        known = expectations.lookup(case_id, cap.id)
        item.stash[_CASE] = CaseInfo(case_id, cap, known)
        if known is not None and known.skip:
            item.add_marker(pytest.mark.skip(reason=NOT_RUN + known.describe()))
    if errors:
        raise pytest.UsageError("malformed conformance cases:\n  " + "\n  ".join(errors))


def _is_streaming(item, cap: capabilities.Capability) -> bool:
    drawn = getattr(getattr(item, "callspec", None), "params", {}).get("generated_program")
    if drawn is not None:
        return drawn.program.streaming  # from the generated program itself
    if cap.streaming:
        return True
    if item.get_closest_marker("java_vr") is not None:
        return False  # Beam's Java tests say it through their categories
    return streaming_cases.builds_a_stream(getattr(item, "function", None))


@pytest.hookimpl(trylast=True, specname="pytest_collection_modifyitems")
def pytest_collection_modifyitems_per_capability(session, config, items):
    """--per-capability N: keep the first N cases of each capability, after -k/-m chose theirs."""
    limit = config.getoption("per_capability")
    if limit is None:
        return
    kept, dropped = [], []
    taken: dict[str, int] = {}
    for item in items:
        info = item.stash.get(_CASE, None) if _is_case(item) else None
        if info is None:
            kept.append(item)
            continue
        if info.known is not None and info.known.skip:
            dropped.append(item)
            continue
        if item.get_closest_marker("java_vr") is not None and item.get_closest_marker("skip") is not None:
            dropped.append(item)  # a Java test its Beam profile leaves out takes no slot
            continue
        count = taken.get(info.capability.id, 0)
        (kept if count < limit else dropped).append(item)
        taken[info.capability.id] = count + 1
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    """--list-cases: the selected cases, one per line, and nothing runs."""
    if not session.config.getoption("list_cases"):
        return None
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    write = reporter.write_line if reporter is not None else print
    cases = [(i.stash[_CASE], i.get_closest_marker("streaming") is not None) for i in session.items if _CASE in i.stash]
    width = max((len(case.id) for case, _ in cases), default=0)
    for case, streaming in cases:
        write(f"{case.id:<{width}}  {case.capability.id}" + ("  streaming" if streaming else ""))
    write(f"{len(cases)} case{'' if len(cases) == 1 else 's'}")
    return True


def _nothing_selected_hint(session) -> str | None:
    """Why a run that collected cases selected none, and what selects them."""
    if any(_is_case(i) for i in session.items) or not session.config.stash[_RECORDER].deselected:
        return None
    return (
        "no case was selected: -k matches a case's id (e.g. -k impulse/one_element) or its test name, "
        "and `beam-conformance cases` (or pytest --list-cases) lists the ids. A case added to a clone's "
        "conformance/cases/ is collected only from an editable install (pip install -e); otherwise keep "
        "it in a folder of your own (docs/writing-a-case.md, 'Where it goes, and its id')"
    )


def pytest_collection_finish(session):
    """Plan the batches from the cases this process will run (an xdist controller runs none)."""
    hint = _nothing_selected_hint(session)
    if hint is not None:
        session.config.stash[_NOTHING_SELECTED] = hint
    batches = session.config.stash[_BATCHES]
    if batches.size > 1:
        batches.plan(session.items, _sharing_group, lambda item: item.get_closest_marker("streaming") is not None)


def _sharing_group(item) -> str | None:
    """Which cases a case may share a job with, from what it declares: None for cases marked to run
    otherwise (skip, xfail, another SDK's program, one of Beam's Java tests); a known failure's
    reason for the cases that fail for it, since a failure may crash the whole job; "" for the
    rest. What a case does while it builds decides the rest (batching.MemberRunner)."""
    info = item.stash.get(_CASE, None)
    if info is None or (info.known is not None and info.known.skip):
        return None
    if any(item.get_closest_marker(m) is not None for m in ("skip", "skipif", "xfail", "sdk", "java_vr")):
        return None
    return f"known failure: {info.known.describe()}" if info.known is not None else ""


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """Batching under pytest-xdist: every case of a batch goes to one worker (scope scheduling, a
    batch chunk as the scope), unless the user chose a distribution mode."""
    size = config.stash[_BATCHES].size
    if size < 2 or config.getvalue("dist") != "load":
        return None
    return batching.make_scheduler(config, log, size)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    """A batch runs at its first case's turn, before that case's setup and time limit start
    (the batch has a time limit of its own: --case-timeout per job)."""
    item.config.stash[_BATCHES].before(item)
    return (yield)


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def conformance_target(request):
    config = request.config
    try:
        target = config.stash[_TARGET].started()
    except targets.TargetUnavailable as e:
        reason = f"target {config.getoption('target')} is unavailable: {e}"
        if hasattr(config, "workerinput"):
            # pytest.exit in an xdist worker crashes the run with an INTERNALERROR that names a test,
            # not the reason: stop this worker after this test instead, which the controller turns
            # into "Interrupted: <reason>"
            request.session.shouldstop = reason
            pytest.fail(reason, pytrace=False)
        pytest.exit(reason, returncode=3)
    yield target
    config.stash[_TARGET].stop()


@pytest.fixture
def runner(request, conformance_target) -> CaseRunner:
    """Builds and runs this case's pipelines on the target under test."""
    streaming = request.node.get_closest_marker("streaming") is not None
    try:
        conformance_target.ensure_running()
    except targets.TargetUnavailable as e:
        pytest.fail(f"the target could not be brought back for this case: {e}", pytrace=False)
    capture = None
    directory = request.config.getoption("capture_pipelines")
    if directory:
        case = request.node.stash.get(_CASE, None)
        capture = PipelineCapture(Path(directory), case.id if case is not None else request.node.name)
    return CaseRunner(conformance_target, streaming=streaming, capture=capture)


# --------------------------------------------------------------------------- outcomes


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """A case that passed in its batch, or a known failure that failed there, has its verdict: its
    body ran there."""
    verdict = pyfuncitem.config.stash[_BATCHES].verdict(pyfuncitem)
    if verdict is not None and verdict.failed is not None:
        raise verdict.failed  # a known failure that failed in its batch
    return True if verdict is not None and verdict.passed else None


@pytest.hookimpl(wrapper=True, specname="pytest_pyfunc_call")
def pytest_pyfunc_call_finish(pyfuncitem):
    """A case whose body passed still fails if a check deviated in a cross-cutting property
    (CaseRunner.finish): only now has everything else it checks been checked. And a case that
    passes alone but failed in its batch fails: a correct runner runs independent parts of one
    pipeline as it runs each alone."""
    __tracebackhide__ = True
    result = yield
    runner = pyfuncitem.funcargs.get("runner")
    if isinstance(runner, CaseRunner) and pyfuncitem.stash.get(_CASE, None) is not None:
        runner.finish()
    verdict = pyfuncitem.config.stash[_BATCHES].verdict(pyfuncitem)
    if verdict is not None and verdict.failed_in_batch is not None:
        failure = CaseFailure(
            f"passes in a job of its own, but failed in a job it shared with other cases ({verdict.batch}): "
            f"the runner does not run independent parts of one pipeline as it runs each alone "
            f"(run with --batch-size 1 to judge cases one job each). In the shared job:\n{verdict.failed_in_batch}"
        )
        # shown from the case's line that ran its pipeline alone (its body has returned)
        raise failure.with_traceback(runner.last_run_site() if isinstance(runner, CaseRunner) else None)
    return result


def _suite_of(item) -> str:
    if item.get_closest_marker("java_vr") is not None:
        return "java-vr"
    return "generated" if item.get_closest_marker("generated") is not None else "cases"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    try:
        report = outcome.get_result()
    except SystemError as e:
        if _AST_RACE not in str(e):
            raise
        report = _report_despite_ast_race(item, call)
        outcome.force_result(report)
    case = item.stash.get(_CASE, None)
    if case is None:
        return
    report.sections = [(title, checks.without_diffs(text)) for title, text in report.sections]
    kind = None
    message = ""
    known = case.known
    failure = call.excinfo.value if call.excinfo is not None else None
    if report.when == "call":
        message = _message_of(call)
        _summary_line(report, getattr(failure, "summary", "") or message)
        if report.skipped:
            kind, message = "skipped", _skip_reason(report)
        else:
            judged = item.config.stash[_EXPECTATIONS].judge(
                known, report.failed, getattr(failure, "cross_cutting", None), getattr(failure, "signature", None)
            )
            kind, known = judged.outcome, judged.entry
        if kind == "expected-failure" and known is not None:
            report.outcome = "skipped"
            report.wasxfail = f"known failure: {known.describe()}"
        elif kind == "passed" and known is not None:  # a flaky entry's pass
            message = f"passed this time; known to fail in some runs: {known.describe()}"
        elif kind == "unexpected-pass" and known is not None:
            report.outcome = "failed"
            report.longrepr = (
                f"UNEXPECTED PASS: {case.id} passed but is listed as a known failure "
                f"in {known.source} ({known.describe()}). "
                "Remove the entry so the expectations stay true."
            )
            message = report.longrepr
    elif report.when == "setup" and not report.passed:
        kind = "skipped" if report.skipped else "error"
        message = _skip_reason(report) if report.skipped else _message_of(call)
    elif report.when == "teardown" and report.failed:
        kind, message = "error", _message_of(call)
    if kind is None:
        return
    if kind == "failed" and getattr(failure, "conformance_outcome", None) == "error":
        kind = "error"  # the Java launcher could not run the test
    cap = case.capability
    report.user_properties.extend(
        [
            ("suite", _suite_of(item)),
            ("case_id", case.id),
            ("capability", cap.id),
            ("beam_category", cap.beam_category),
            ("conformance_outcome", kind),
            ("streaming", item.get_closest_marker("streaming") is not None),
            ("conformance_message", message[:8000]),
        ]
    )
    if known is not None:
        report.user_properties.append(("known_failure", known.describe()))
    verdict = item.config.stash[_BATCHES].verdict(item)
    if verdict is not None:
        report.user_properties.extend([("batch", verdict.describe()), ("batch_share_s", verdict.share_s)])
        if verdict.batch_failure is not None:
            report.user_properties.append(("batch_failure", verdict.batch_failure))
    listed = getattr(getattr(item, "callspec", None), "params", {}).get("java_vr_test")
    if listed is not None and hasattr(listed, "categories"):
        report.user_properties.append(("java_categories", java_vr.short_categories(listed.categories)))
    if getattr(failure, "signature", None):
        report.user_properties.extend([("signature", failure.signature), ("counts_against", failure.counts_against)])
    if kind in ("failed", "expected-failure") and getattr(failure, "cross_cutting", None):
        report.user_properties.extend([("cross_cutting", failure.cross_cutting), ("judged", failure.judged)])
    elif kind == "expected-failure" and known is not None and known.lies_in:
        # the expectations say where this failure lies (a property no output can show)
        report.user_properties.extend([("cross_cutting", known.lies_in), ("judged", False)])


# CPython 3.11 before 3.11.8 keeps one AST-construction depth counter per interpreter, so ast.parse
# in two threads at once can fail with this SystemError (python/cpython#106905). pytest parses
# source files to show a failure's traceback; a runner that runs user code on threads of this
# process (Dask's in-process workers format tracebacks as tasks fail) can race it, and the error
# would end the whole session as an INTERNALERROR.
_AST_RACE = "AST constructor recursion depth mismatch"


def _report_despite_ast_race(item, call) -> pytest.TestReport:
    """Build the report again (the race is rare); if it keeps failing, without the traceback's source."""
    for _ in range(3):
        try:
            return pytest.TestReport.from_item_and_call(item, call)
        except SystemError as e:
            if _AST_RACE not in str(e):
                raise
    excinfo = call.excinfo

    def without_source(*args, **kwargs) -> str:
        return f"{excinfo.exconly()}\n(traceback not shown: {_AST_RACE}, python/cpython#106905)"

    for name in ("repr_failure", "_repr_failure_py"):
        setattr(item, name, without_source)
    try:
        return pytest.TestReport.from_item_and_call(item, call)
    finally:
        for name in ("repr_failure", "_repr_failure_py"):
            delattr(item, name)


def _summary_line(report, message: str) -> None:
    """pytest's short summary shows a failure's first line: the diff's, not the exception's module path."""
    crash = getattr(report.longrepr, "reprcrash", None)
    if report.failed and crash is not None and message:
        crash.message = results.first_line(message)


def _message_of(call) -> str:
    if call.excinfo is None:
        return ""
    value = call.excinfo.value
    timeout = _timeout_within(value)
    if timeout is not None:
        # A property case runs one pipeline per example; when the case's time limit runs out in one
        # of them, hypothesis replays that example, sees it pass, and calls the case flaky.
        return (
            f"{timeout} in one of the property case's examples (each one a pipeline run): the case "
            f"needs more time than --case-timeout on this runner, or fewer --property-examples "
            f"(hypothesis reported it as {call.excinfo.typename})"
        )
    text = getattr(value, "msg", None) or str(value)
    return f"{text}" if isinstance(value, AssertionError) else f"{call.excinfo.typename}: {text}"


def _timeout_within(error: BaseException) -> str | None:
    """The text of the case time limit's failure inside a group of errors (hypothesis wraps the
    errors of its examples), if there is one."""
    for inner in getattr(error, "exceptions", None) or ():
        # hypothesis carries a BaseException (as pytest's failures are) as the cause of a wrapper
        for candidate in (inner, inner.__cause__):
            text = str(candidate)
            if isinstance(candidate, pytest.fail.Exception) and text.startswith("Timeout"):
                return text.splitlines()[0]
        nested = _timeout_within(inner)
        if nested is not None:
            return nested
    return None


def _skip_reason(report) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr or "")


def narrowed_by(config) -> list[str]:
    """The options that chose part of the suite: -k, -m, --per-capability, --deselect, paths."""
    said = []
    if config.getoption("keyword"):
        said.append(f"-k {config.getoption('keyword')!r}")
    if config.getoption("markexpr"):
        said.append(f"-m {config.getoption('markexpr')!r}")
    if config.getoption("per_capability") is not None:
        said.append(f"--per-capability {config.getoption('per_capability')}")
    for deselected in config.getoption("deselect") or ():
        said.append(f"--deselect {deselected}")
    return said + _paths_given(config)


def _paths_given(config) -> list[str]:
    """The arguments naming less than the whole kit's suite (a module, a node id), as given."""
    whole = {"conformance", "conformance.cases"}
    given = [a for a in config.invocation_params.args if not str(a).startswith("-")]
    parts = [str(a) for a in given if _names_cases(str(a)) and str(a) not in whole]
    return [f"paths: {' '.join(parts)}"] if parts else []


def _names_cases(arg: str) -> bool:
    """Does a command-line argument name (part of) the kit's cases?"""
    return arg.startswith("conformance.cases") or "conformance/cases" in arg or "::" in arg


class _Recorder:
    """Collects one record per case (on the xdist controller, from every worker)."""

    def __init__(self, config):
        self.config = config
        self.records: dict[str, dict] = {}
        self.results_paths: list[str] = []
        # The started target's description; xdist workers send theirs to the controller.
        self.target_info: dict | None = None
        # How the run was narrowed: cases left out by -k/-m, packaged case modules not collected
        # (xdist workers collect, and tell the controller).
        self.deselected = 0
        self.case_modules: set[str] = set()

    def pytest_itemcollected(self, item):
        module = getattr(item, "module", None)
        if module is not None and module.__name__.startswith(CASES_PACKAGE):
            self.case_modules.add(module.__name__[len(CASES_PACKAGE) :])

    def pytest_deselected(self, items):
        self.deselected += sum(1 for item in items if _is_case(item) and not item.stash.get(_NOT_ASKED_FOR, False))

    def selection(self) -> dict:
        packaged = packaged_case_modules()
        return {
            "deselected": self.deselected,
            "narrowed_by": narrowed_by(self.config) if self.deselected else _paths_given(self.config),
            "case_modules_not_collected": sorted(packaged - self.case_modules),
        }

    def pytest_runtest_logreport(self, report):
        props = dict(report.user_properties)
        if "conformance_outcome" not in props:
            return
        previous = self.records.get(report.nodeid)
        # A teardown error spoils a passing case; otherwise the call (or failed setup) decides.
        if previous is not None and not (report.when == "teardown" and previous["outcome"] == "passed"):
            return
        duration = report.duration + (previous["duration_s"] if previous else props.get("batch_share_s", 0.0))
        self.records[report.nodeid] = results.case_record(report.nodeid, props, duration)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error):
        output = getattr(node, "workeroutput", {})
        info = output.get("beam_conformance_target")
        if info and self.target_info is None:
            self.target_info = info
        # every worker collects the whole suite, so each saw the same deselection
        self.deselected = max(self.deselected, output.get("beam_conformance_deselected", 0))
        self.case_modules |= set(output.get("beam_conformance_case_modules", []))

    def _target_description(self) -> dict:
        session_target = self.config.stash[_TARGET]
        info = dict(self.target_info or session_target.created().describe())
        info["name"] = session_target.name
        return info

    def pytest_sessionfinish(self, session, exitstatus):
        if hasattr(self.config, "workerinput"):  # xdist worker: the controller writes the results
            if self.target_info is not None:
                self.config.workeroutput["beam_conformance_target"] = self.target_info
            self.config.workeroutput["beam_conformance_deselected"] = self.deselected
            self.config.workeroutput["beam_conformance_case_modules"] = sorted(self.case_modules)
            return
        if not self.records or self.config.getoption("no_results"):
            return
        expectations = self.config.stash[_EXPECTATIONS]
        for suite_name, records in self.by_suite().items():
            java = suite_name == "java-vr"
            path = results.write(
                results_dir=self.config.getoption("results_dir"),
                target=self._target_description(),
                expectations_path=expectations.path,
                records=records,
                started=self.config.stash[_STARTED],
                selection=self.java_vr_selection()
                if java
                else self.generated_selection()
                if suite_name == "generated"
                else self.selection(),
                suite=suite_name,
            )
            self.results_paths.append(path)

    def by_suite(self) -> dict[str, list[dict]]:
        suites: dict[str, list[dict]] = {}
        for record in self.records.values():
            suites.setdefault(record.get("suite", "cases"), []).append(record)
        return suites

    def generated_selection(self) -> dict:
        """How the generated pipelines were drawn: from which seed, how many, narrowed to what, in what time."""
        option = self.config.getoption
        return {
            **self.selection(),
            "generated": {
                "seed": option("generated_seed"),
                "examples": option("generated_examples"),
                "capabilities": list(option("generated_capabilities")),
                "minutes": option("generated_minutes"),
            },
        }

    def java_vr_selection(self) -> dict:
        """How the Java run was chosen: Beam's profile or all, and the tests -k/-m left out."""
        target = self.config.stash[_TARGET].created()
        return {"deselected": self.deselected, "java_vr": java_vr.describe(self.config, target)}


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    recorder = config.stash[_RECORDER]
    hint = config.stash.get(_NOTHING_SELECTED, None)
    if hint is not None and not config.getoption("list_cases"):
        terminalreporter.write_line(f"beam-conformance: {hint}", yellow=True)
    if not recorder.records:
        return
    terminalreporter.section("beam-conformance")
    named = _named_target(config)
    for suite_name, records in recorder.by_suite().items():
        counts = results.summarize(records)
        label = {"java-vr": " (Beam's Java ValidatesRunner tests)", "generated": " (generated pipelines)"}.get(
            suite_name, ""
        )
        terminalreporter.write_line(f"target {named}{label}: " + ", ".join(f"{n} {k}" for k, n in counts.items() if n))
        for signature, failing in results.deviations_by_signature(records).items():
            known = " (known: expectations)" if failing[0]["outcome"] == "expected-failure" else ""
            terminalreporter.write_line(
                f"  deviation {signature}: {len(failing)} pipeline(s), first {failing[0]['id']}{known}"
            )
    for path in recorder.results_paths:
        terminalreporter.write_line(f"results: {path} (merge runs with `beam-conformance report`)")
    _report_batches(terminalreporter, list(recorder.records.values()))
    expectations = config.stash[_EXPECTATIONS]
    for suite_name, records in recorder.by_suite().items():
        _report_stale(terminalreporter, expectations, records, suite_name == "java-vr")


def _report_batches(terminalreporter, records: list[dict]) -> None:
    """How many cases shared jobs, and every shared job that failed as a whole although none of its
    cases fails its own job alone: a runner bug that shows only in a shared job."""
    batched = [r for r in records if r.get("batch")]
    if not batched:
        return
    shared = [r for r in batched if not r["batch"].startswith("ran alone")]
    jobs = {r["batch"] for r in shared}
    terminalreporter.write_line(
        f"batches: {len(shared)} cases judged in {len(jobs)} shared jobs; {len(batched) - len(shared)} planned "
        "for one ran alone (each record's 'batch' says why)"
    )
    failed: dict[str, list[dict]] = {}
    for r in batched:
        if r.get("batch_failure"):
            failed.setdefault(r["batch_failure"], []).append(r)
    for text, members in failed.items():
        if any(m["outcome"] in ("failed", "expected-failure") and "the job failed" in m["message"] for m in members):
            continue  # a case whose own job fails alone explains it
        terminalreporter.write_line(
            f"a shared job failed as a whole, yet each of its cases passes alone (a runner bug that shows "
            f"only in a shared job): {text}\n  its cases: {', '.join(m['id'] for m in members)}",
            yellow=True,
        )


def _report_stale(terminalreporter, expectations, records, java: bool) -> None:
    """Entries of this suite that matched no case that ran (Java entries name java_vr/ ids)."""
    run_ids = [r["id"] for r in records]
    stale = expectations.stale(records, java)
    if stale and len(run_ids) >= 50:  # only meaningful when (most of) the suite ran
        terminalreporter.write_line(
            f"{len(stale)} known-failure entr{'y' if len(stale) == 1 else 'ies'} "
            f"in {expectations.path} matched no case:",
            yellow=True,
        )
        for e in stale:
            terminalreporter.write_line(f"  {e.label()}: {e.reason}", yellow=True)
