"""One SparkSession per process, reused by every job (starting a JVM costs seconds)."""

from __future__ import annotations

import os
import sys
import threading

_lock = threading.Lock()
_session = None
_settings = None


def get(master: str = "local[2]", conf: dict | None = None):
    """The process's SparkSession, started on first use with ``master`` and ``conf``."""
    global _session, _settings
    with _lock:
        wanted = (master, tuple(sorted((conf or {}).items())))
        if _session is not None:
            if _settings != wanted:
                raise RuntimeError(
                    f"a SparkSession with master {_settings[0]} is already running in this "
                    f"process; it cannot be restarted with {master} (one session per process)"
                )
            return _session
        from pyspark.sql import SparkSession

        # Spark's Python workers run this interpreter and find what the driver finds.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        path = os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))
        builder = (
            SparkSession.builder.master(master)
            .appName("beam-reference-spark")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.executorEnv.PYTHONPATH", path)
            # Python workers fork from a daemon that has Beam imported already
            .config("spark.python.daemon.module", "reference_runner.spark.daemon")
            .config("spark.sql.shuffle.partitions", "4")
        )
        for key, value in (conf or {}).items():
            builder = builder.config(key, value)
        _session = builder.getOrCreate()
        _session.sparkContext.setLogLevel("ERROR")
        _settings = wanted
        return _session


def current():
    """The running SparkSession, or None."""
    return _session


def stop() -> None:
    global _session, _settings
    with _lock:
        if _session is not None:
            _session.stop()
        _session = _settings = None
