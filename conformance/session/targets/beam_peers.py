"""Beam's own Python runners, as peers: a sanity check of our cases, not an oracle."""

from __future__ import annotations

from conformance.authoring.shapes import ShapeNotApplicable
from conformance.session.targets.base import Target


class BeamDirectTarget(Target):
    """Beam's DirectRunner as its docstring describes it: FnApiRunner for batch, the bundle-based
    direct runner for streaming (TestStream) pipelines; never Prism."""

    name = "beam-direct"
    help = "Beam's DirectRunner (a peer): FnApiRunner for batch, BundleBasedDirectRunner for streaming, never Prism"

    def beam_runner(self):
        from apache_beam.runners.direct.direct_runner import DirectRunner

        runner = DirectRunner()
        # Since Beam 2.6x DirectRunner hands a pipeline to Prism first whenever Prism can be had
        # (cached, configured or downloaded), and falls back only if that fails: the column would
        # silently become Prism's on some machines. is_interactive() is the switch Interactive
        # Beam uses to keep it off Prism; in 2.77 it decides nothing else. Prism is a target of
        # its own (prism).
        runner.is_interactive()
        return runner

    def run_shaped(self, pipeline, shape):
        raise ShapeNotApplicable(
            "the DirectRunner runs the Python pipeline object itself; it takes no submitted (pre-optimized) proto"
        )

    def explain_failure(self, error_text: str) -> str | None:
        # The streaming DirectRunner reports "Monitor task detected a pipeline stall" by raising
        # a tuple, which Python turns into this TypeError.
        if "exceptions must derive from BaseException" in error_text:
            return (
                "the DirectRunner raises this when it detects a stall: nothing left to run but "
                "watermarks incomplete, e.g. a timer or trigger it never fires"
            )
        return None


class BeamFnApiTarget(Target):
    """Beam's FnApiRunner, in process."""

    name = "beam-fnapi"
    help = "Beam's FnApiRunner, in process (a peer)"

    def beam_runner(self):
        from apache_beam.runners.portability.fn_api_runner import FnApiRunner

        return FnApiRunner()

    def default_environment(self, runner):
        return runner._default_environment  # noqa: SLF001 - the embedded environment its run_pipeline uses

    def run_proto(self, runner, proto, options):
        return runner.run_via_runner_api(proto, options)  # FnApiRunner's entry for protos
