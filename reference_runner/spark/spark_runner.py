"""SparkRunner: run a Beam pipeline on Apache Spark through PySpark, in this process (batch, and
streaming as micro-batches), with the same lifecycle as the job server's jobs (in_process.run_on)."""

from __future__ import annotations

from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.runners.runner import PipelineRunner

from reference_runner.in_process import run_on
from reference_runner.option_table import add_arguments, from_pipeline_options, keyword_parameters
from reference_runner.spark.settings import PREFIX, SparkSettings
from reference_runner.spark.spark_backend import SparkBackend


class SparkOptions(PipelineOptions):
    """Every option of spark/settings.SparkSettings as ``--spark_NAME``. Arguments given to
    SparkRunner(...) win over these."""

    @classmethod
    def _add_argparse_args(cls, parser):
        add_arguments(parser, SparkSettings, PREFIX)


class SparkRunner(PipelineRunner):
    """``beam.Pipeline(runner=SparkRunner(master="local[4]"))``. The keyword parameters are the
    settings (spark/settings.SparkSettings), each an attribute; None falls back to SparkOptions."""

    @keyword_parameters(SparkSettings)
    def __init__(self, **settings):
        self.arguments = settings
        vars(self).update(settings)  # runner.master, runner.bundle_size, ...

    def run_pipeline(self, pipeline, options):
        return self.run_portable_pipeline(pipeline.to_runner_api(), options)

    def run_portable_pipeline(self, proto, options):
        """Run a Runner API pipeline (Beam's hook for runners of protos)."""
        opts = options.view_as(SparkOptions)
        from_options = SparkSettings.parse(from_pipeline_options(opts, SparkSettings, PREFIX))
        settings = SparkSettings.parse(self.arguments, base=from_options)
        return run_on(SparkBackend(settings), proto, streaming=options.view_as(StandardOptions).streaming)


__all__ = ["SparkOptions", "SparkRunner"]
