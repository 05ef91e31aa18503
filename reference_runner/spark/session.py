"""One SparkSession per process, reused by every job (starting a JVM costs seconds).

A process that already runs a SparkSession of its own (the user's) keeps it as it is: the
backend runs on it when its master and every setting asked for match, and refuses otherwise,
rather than let getOrCreate() silently rewrite that session's configuration."""

from __future__ import annotations

import os
import re
import sys
import threading

from reference_runner.spark.settings import DEFAULT_MASTER


class PySparkMissing(ImportError):
    """pyspark is not installed: the Spark backend is the kit's ``spark`` extra."""


# no package index serves the kit: it is installed again from the clone or the wheel, with the extra
INSTALL_HINT = (
    "install the kit again with its spark extra: pip install '/path/to/clone[spark]', "
    "or pip install 'dist/beam_runner_conformance-<version>-py3-none-any.whl[spark]'"
)


def require_pyspark() -> None:
    """Raise PySparkMissing, naming the extra that installs it, when pyspark cannot be imported."""
    import importlib.util

    if importlib.util.find_spec("pyspark") is None:
        raise PySparkMissing(f"the Spark backend needs pyspark, which is not installed: {INSTALL_HINT}")


_lock = threading.Lock()
_session = None
_settings = None
_owned = False  # started here (stop() stops it), not the user's

# The driver JVM (with a local master, also the executor) mostly schedules many small jobs and
# moves bytes for the Python workers: C2 compilation and G1's concurrent threads cost more CPU
# than they save. A 17-pass TestStream case on local[2]: the JVM used 27 s of CPU on its first
# run and 5.7 s on the next with the JVM's defaults, 11.6 s and 2.5 s with these. A user's own
# spark.driver.extraJavaOptions replaces them.
DRIVER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
STATUS_RETENTION = {"spark.ui.retainedJobs": "50", "spark.ui.retainedStages": "50", "spark.ui.retainedTasks": "2000"}
# A Python worker that dies of a signal or a native fault leaves only "Python worker exited
# unexpectedly (crashed)"; with the faulthandler on, Spark adds the worker's native traceback.
FAULT_REPORTS = {"spark.python.worker.faulthandler.enabled": "true"}
# Over TCP, every Python task stalled about 40 ms reading its input (Nagle's algorithm against
# delayed ACKs on the JVM's small writes): a one-element task took 64 ms, 25 ms over a Unix
# domain socket, and a case's job, four stages one after another, 0.26 s against 0.09 s.
# Executor and Python worker always share a host, so a local socket serves every master.
PYTHON_WORKER_SOCKETS = {"spark.python.unix.domain.socket.enabled": "true"}
TASK_ATTEMPTS = 4  # Spark's own default for a cluster (spark.task.maxFailures)
_LOCAL = re.compile(r"^local(\[(\d+|\*)\])?$")


def with_task_retries(master: str, conf: dict) -> str:
    """``local`` and ``local[N]`` never retry a failed task (Spark's local mode allows one
    attempt); as ``local[N,F]`` they retry as a cluster does, F being spark.task.maxFailures
    (default 4). Other masters, ``local[N,F]`` itself included, are left as they are."""
    match = _LOCAL.match(master)
    if match is None:
        return master
    attempts = conf.get("spark.task.maxFailures", TASK_ATTEMPTS)
    return f"local[{match.group(2) or 1},{attempts}]"


def get(master: str = DEFAULT_MASTER, conf: dict | None = None):
    """The process's SparkSession, started on first use with ``master`` and ``conf``."""
    global _session, _settings, _owned
    with _lock:
        wanted = (master, tuple(sorted((conf or {}).items())))
        if _session is not None and _session.sparkContext._jsc is None:
            _session = _settings = None  # stopped by someone else: start again
        if _session is not None and not _jvm_alive(_session):
            _forget_dead_jvm()  # its driver JVM exited under it: a new JVM
        if _session is not None:
            if _settings != wanted:
                raise RuntimeError(
                    f"a SparkSession with master {_settings[0]} is already running in this "
                    f"process; it cannot be restarted with {master} (one session per process)"
                )
            return _session
        from pyspark.sql import SparkSession

        existing = _running_elsewhere()
        if existing is not None:
            _check_compatible(existing, master, conf or {})
            _check_workers_import_beam(existing)
            _session, _settings, _owned = existing, wanted, False
            return _session
        # Spark's Python workers run this interpreter and find what the driver finds.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        path = os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))
        builder = (
            SparkSession.builder.master(with_task_retries(master, conf or {}))
            .appName("beam-reference-spark")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.executorEnv.PYTHONPATH", path)
            # Python workers fork from a daemon that has Beam imported already
            .config("spark.python.daemon.module", "reference_runner.spark.daemon")
            .config("spark.sql.shuffle.partitions", "4")
            .config("spark.scheduler.mode", "FAIR")  # jobs side by side share the slots (fair_pools.py)
            .config("spark.driver.extraJavaOptions", DRIVER_JAVA_OPTIONS)
        )
        # Spark's status store keeps 1000 jobs and stages, with their tasks, even with the UI
        # off: a stream runs a few jobs per micro-batch, and the driver JVM grew with them
        for key, value in {**STATUS_RETENTION, **FAULT_REPORTS, **PYTHON_WORKER_SOCKETS}.items():
            builder = builder.config(key, value)
        for key, value in (conf or {}).items():
            builder = builder.config(key, value)
        _session = _started(builder)
        _session.sparkContext.setLogLevel("ERROR")
        _settings, _owned = wanted, True
        return _session


def _started(builder):
    """``builder.getOrCreate()``, again if the driver JVM exits before it answers: PySpark forks
    this process to start it, and a fork while this process's gRPC threads are busy (a job server,
    a LOOPBACK worker) can lose the child ("Java gateway process exited before sending its port
    number", seen once in CI with gRPC's "skipping fork() handlers"). A third failure is reported."""
    from pyspark.errors import PySparkRuntimeError

    for attempt in range(3):
        try:
            return builder.getOrCreate()
        except PySparkRuntimeError as e:
            if "JAVA_GATEWAY_EXITED" not in str(e) or attempt == 2:
                raise
    raise AssertionError("unreachable")


def _jvm_alive(session) -> bool:
    """Does the session's driver JVM still run? Spark exits its JVM on an OutOfMemoryError (a job
    with keys of 100 MB on a small heap does that), which leaves every later job of this process
    failing with "Connection refused" from the Py4J gateway."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    process = getattr(gateway, "proc", None)
    if process is not None and process.poll() is not None:
        return False
    try:
        return not session.sparkContext._jsc.sc().isStopped()
    except Exception:  # Py4J's network errors: the gateway no longer answers
        return False


def _forget_dead_jvm() -> None:
    """Drop every handle on a driver JVM that has exited, so the next session starts a new one
    (PySpark would otherwise reuse its gateway and its active context)."""
    global _session, _settings, _owned
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    _session = _settings = None
    _owned = False
    SparkContext._active_spark_context = None
    SparkContext._gateway = None
    SparkContext._jvm = None
    SparkSession._instantiatedSession = None
    SparkSession._activeSession = None


def _running_elsewhere():
    """A SparkSession this module did not start, if the process runs one."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    context = SparkContext._active_spark_context
    if context is None:
        return None
    return SparkSession.getActiveSession() or SparkSession._instantiatedSession or SparkSession(context)


def _check_compatible(existing, master: str, conf: dict) -> None:
    differences = []
    if existing.sparkContext.master not in (master, with_task_retries(master, conf)):
        differences.append(f"master {existing.sparkContext.master} (wanted {master})")
    settings = existing.sparkContext.getConf()
    for key, value in sorted(conf.items()):
        have = existing.conf.get(key, None) if key.startswith("spark.sql.") else settings.get(key, None)
        if have != str(value):
            differences.append(f"{key}={have} (wanted {value})")
    if differences:
        raise RuntimeError(
            "this process already runs a SparkSession the Spark backend did not start, with "
            + ", ".join(differences)
            + "; run the pipeline with that session's master and settings, or stop the session first "
            "(one session per process; the backend does not change a running session's settings)"
        )


def _check_workers_import_beam(spark) -> None:
    """Refuse a session whose Python workers cannot import Beam and this kit (say PYSPARK_PYTHON
    names another interpreter, or was unset when the user's session started, so its workers run
    the ``python3`` on their PATH): every task would fail deep inside Spark with "No module named
    'apache_beam'". One tiny Spark job, once per session."""

    def imports(_):  # (nested, so that cloudpickle ships it by value: it must not need this kit)
        import importlib
        import sys

        missing = []
        for name in ("apache_beam", "reference_runner"):
            try:
                importlib.import_module(name)
            except ImportError as e:
                missing.append(f"{name} ({e})")
        return sys.executable, missing

    [(python, missing)] = spark.sparkContext.parallelize([0], 1).map(imports).collect()
    if missing:
        configured = os.environ.get("PYSPARK_PYTHON")
        raise RuntimeError(
            f"the SparkSession running in this process (master {spark.sparkContext.master}) has Python workers "
            f"that cannot import {', '.join(missing)}: they run {python}, while this process runs "
            f"{sys.executable}. PYSPARK_PYTHON is {'set to ' + repr(configured) if configured else 'unset'}; "
            "set it to an interpreter with apache-beam and this kit installed (and spark.executorEnv.PYTHONPATH "
            "to this process's path) before the session starts, or let the Spark backend start its own session"
        )


def current():
    """The running SparkSession, or None."""
    return _session


def stop() -> None:
    """Stop the session this module started; one it found running is only let go of."""
    global _session, _settings, _owned
    with _lock:
        if _session is not None and _owned:
            _session.stop()
        _session = _settings = None
        _owned = False
