"""SparkRunner: run a Beam pipeline on Apache Spark through PySpark, in this process (batch, and
streaming as micro-batches), with the same lifecycle as the job server's jobs (in_process.run_on)."""

from __future__ import annotations

from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.runners.runner import PipelineRunner

from reference_runner.in_process import run_on
from reference_runner.spark.backend import SparkBackend
from reference_runner.spark.settings import PREFIX, SPARK_OPTIONS, SparkSettings


class SparkOptions(PipelineOptions):
    """Every option of spark/settings.SPARK_OPTIONS as ``--spark_NAME``. Arguments given to
    SparkRunner(...) win over these."""

    @classmethod
    def _add_argparse_args(cls, parser):
        for name, option in SPARK_OPTIONS.items():
            repeated = name == "conf"  # one KEY=VALUE setting per occurrence
            parser.add_argument(
                f"--{PREFIX}{name}",
                default=None,
                action="append" if repeated else "store",
                metavar="KEY=VALUE" if repeated else None,
                help=option.help,
            )


class SparkRunner(PipelineRunner):
    """``beam.Pipeline(runner=SparkRunner(master="local[4]"))``; None falls back to SparkOptions."""

    def __init__(
        self,
        master: str | None = None,
        parallelism: int | None = None,
        conf: dict | None = None,
        bundle_size: int | None = None,
        seed: int | None = None,
    ):
        self.master, self.parallelism, self.conf, self.bundle_size = master, parallelism, conf, bundle_size
        self.seed = seed

    def run_pipeline(self, pipeline, options):
        return self.run_portable_pipeline(pipeline.to_runner_api(), options)

    def run_portable_pipeline(self, proto, options):
        """Run a Runner API pipeline (Beam's hook for runners of protos)."""
        opts = options.view_as(SparkOptions)
        from_options = SparkSettings.parse({name: getattr(opts, f"{PREFIX}{name}") for name in SPARK_OPTIONS})
        arguments = {name: getattr(self, name) for name in ("master", "parallelism", "conf", "bundle_size", "seed")}
        settings = SparkSettings.parse(arguments, base=from_options)
        return run_on(SparkBackend(settings), proto, streaming=options.view_as(StandardOptions).streaming)


__all__ = ["SparkOptions", "SparkRunner"]
