"""ReferenceRunner: run a Beam Python pipeline on the reference engine, in this process
(in_process.run_on: a bounded pipeline to its end inside ``run()``, an unbounded one on a thread
of its own)."""

from __future__ import annotations

from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.runners.runner import PipelineRunner

from reference_runner.executor.backend import ReferenceBackend
from reference_runner.in_process import run_on
from reference_runner.knobs import KNOBS, Knobs


class ReferenceOptions(PipelineOptions):
    """Every knob of the reference runner (knobs.KNOBS). Arguments given to ReferenceRunner(...)
    win over these."""

    @classmethod
    def _add_argparse_args(cls, parser):
        for name, knob in KNOBS.items():
            default = getattr(Knobs(), name)
            default_text = "" if default is None else f" (default {str(default).lower()})"
            parser.add_argument(
                f"--reference_{name}",
                default=None,
                metavar="PATH" if knob.expected == "a file path" else None,
                help=knob.help + default_text,
            )


class ReferenceRunner(PipelineRunner):
    """``beam.Pipeline(runner=ReferenceRunner(seed=7, bundle_size="random", splits="random"))``.

    Knobs left as None come from ReferenceOptions (``--reference_*`` pipeline options)."""

    def __init__(
        self,
        seed: int | None = None,
        bundle_size: str | int | None = None,
        splits: str | None = None,
        faults: float | None = None,
        fuse: bool | None = None,
        lift: bool | None = None,
        trace: str | None = None,
        replay: str | None = None,
        clock: str | None = None,
    ):
        # the parameters are the knobs (knobs.KNOBS; a test holds them equal)
        self.knobs = {name: value for name, value in locals().items() if name in KNOBS}

    def run_pipeline(self, pipeline, options):
        return self.run_portable_pipeline(pipeline.to_runner_api(), options)

    def run_portable_pipeline(self, proto, options):
        """Run a Runner API pipeline (Beam's hook for runners of protos; as submitted, pre-optimized
        by the SDK or not)."""
        opts = options.view_as(ReferenceOptions)
        from_options = Knobs.parse({name: getattr(opts, f"reference_{name}") for name in KNOBS})
        backend = ReferenceBackend(Knobs.parse(self.knobs, base=from_options))
        return run_on(backend, proto, streaming=options.view_as(StandardOptions).streaming)


__all__ = ["ReferenceRunner", "ReferenceOptions"]
