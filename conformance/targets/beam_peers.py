"""Beam's own Python runners, as peers: a sanity check of our cases, not an oracle."""
from __future__ import annotations

from conformance.targets.base import Target


class BeamDirectTarget(Target):
    """Beam's DirectRunner as shipped: FnApiRunner for batch, the bundle-based
    direct runner for streaming (TestStream) pipelines."""
    name = "beam-direct"

    def runner(self):
        return "DirectRunner"


class BeamFnApiTarget(Target):
    """Beam's FnApiRunner, in process."""
    name = "beam-fnapi"

    def runner(self):
        from apache_beam.runners.portability.fn_api_runner import FnApiRunner
        return FnApiRunner()
