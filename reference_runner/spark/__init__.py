"""The Spark backend: the reference runner's front end, executed on Apache Spark through PySpark."""

from reference_runner.spark.runner import SparkOptions, SparkRunner

__all__ = ["SparkRunner", "SparkOptions"]
