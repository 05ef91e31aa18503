"""The Spark backend: the reference runner's front end, executed on Apache Spark through PySpark.

``from reference_runner.spark import SparkRunner``. The runner (and PySpark with it) is imported
on first use, so that reading the backend's settings (spark/settings.py) costs no Spark import."""

from __future__ import annotations

__all__ = ["SparkOptions", "SparkRunner"]


def __getattr__(name: str):
    if name in __all__:
        from reference_runner.spark import spark_runner

        return getattr(spark_runner, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
