"""ReferenceRunner: run a Beam Python pipeline on the reference engine, in this process
(in_process.run_on: a bounded pipeline to its end inside ``run()``, an unbounded one on a thread
of its own)."""

from __future__ import annotations

from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.runners.runner import PipelineRunner

from reference_runner.executor.reference_backend import ReferenceBackend
from reference_runner.in_process import run_on
from reference_runner.knobs import PREFIX, Knobs
from reference_runner.option_table import add_arguments, from_pipeline_options, keyword_parameters


class ReferenceOptions(PipelineOptions):
    """Every knob of the reference runner (knobs.Knobs) as ``--reference_NAME``. Arguments given to
    ReferenceRunner(...) win over these."""

    @classmethod
    def _add_argparse_args(cls, parser):
        add_arguments(parser, Knobs, PREFIX)


class ReferenceRunner(PipelineRunner):
    """``beam.Pipeline(runner=ReferenceRunner(seed=7, bundle_size="random", splits="random"))``.

    The keyword parameters are the knobs (knobs.Knobs); those left as None come from
    ReferenceOptions (``--reference_*`` pipeline options)."""

    @keyword_parameters(Knobs)
    def __init__(self, **knobs):
        self.knobs = knobs

    def run_pipeline(self, pipeline, options):
        return self.run_portable_pipeline(pipeline.to_runner_api(), options)

    def run_portable_pipeline(self, proto, options):
        """Run a Runner API pipeline (Beam's hook for runners of protos; as submitted, pre-optimized
        by the SDK or not)."""
        opts = options.view_as(ReferenceOptions)
        from_options = Knobs.parse(from_pipeline_options(opts, Knobs, PREFIX))
        backend = ReferenceBackend(Knobs.parse(self.knobs, base=from_options))
        return run_on(backend, proto, streaming=options.view_as(StandardOptions).streaming)


__all__ = ["ReferenceRunner", "ReferenceOptions"]
