"""Beam's own Python runners, as peers: a sanity check of our cases, not an oracle."""

from __future__ import annotations

from conformance.shapes import ShapeNotApplicable
from conformance.targets.base import Target


class BeamDirectTarget(Target):
    """Beam's DirectRunner as shipped: FnApiRunner for batch, the bundle-based
    direct runner for streaming (TestStream) pipelines."""

    name = "beam-direct"

    def runner(self):
        return "DirectRunner"

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

    def runner(self):
        from apache_beam.runners.portability.fn_api_runner import FnApiRunner

        return FnApiRunner()

    def default_environment(self, runner):
        return runner._default_environment  # noqa: SLF001 - the embedded environment its run_pipeline uses

    def run_proto(self, runner, proto, options):
        return runner.run_via_runner_api(proto, options)  # FnApiRunner's entry for protos
