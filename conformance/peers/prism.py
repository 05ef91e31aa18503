"""Prism, Beam's Go portable runner, served as a Job API server on a free loopback port."""

from __future__ import annotations

from conformance.peers import artifacts, pins
from conformance.targets import JobServerTarget, TargetUnavailable


class PrismTarget(JobServerTarget):
    """Prism (Beam's Go portable runner, `go install`ed at the Python SDK's version), started per session"""

    name = "prism"
    beam_version = pins.PRISM.version.lstrip("v")
    runner_version = pins.PRISM.version
    java_vr_profile = "prism"

    def __init__(self, spec, settings):
        if ":" in spec:
            raise TargetUnavailable(f"target prism takes no options: {spec!r}")
        super().__init__(spec, settings)
        self.binary: str | None = None

    def fetch(self, progress) -> None:
        try:
            self.binary = str(artifacts.go_binary(pins.PRISM.module, pins.PRISM.version, progress))
        except artifacts.ArtifactUnavailable as e:
            raise TargetUnavailable(str(e)) from None

    def start(self) -> None:
        if self.binary is None:
            self.fetch(lambda line: None)  # a warm cache: no news to give
        super().start()

    def job_server_argv(self, port: int) -> list[str]:
        assert self.binary is not None
        # no web UI (it would take a fixed port), logs at warn: the session keeps them in a file
        return [self.binary, f"--job_port={port}", "--serve_http=false", "--log_level=warn"]
