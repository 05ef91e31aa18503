"""Our reference runner, in process. The schedule follows the target name, e.g. ``reference``,
``reference:bundle_size=1``, ``reference:bundle_size=random,splits=random,seed=7``,
``reference:faults=0.2,seed=3``, ``reference:fuse=false``, ``reference:lift=false`` or
``reference:clock=wall`` (processing time is real time: slow for cases that advance it by minutes)."""

from __future__ import annotations

from conformance.session.targets.base import Target, TargetUnavailable
from conformance.session.targets.own_job_server import InProcessJobServer
from reference_runner.knobs import Knobs
from reference_runner.option_table import target_syntax


class ReferenceTarget(Target):
    name = "reference"
    help = (
        "our reference runner, in process (batch and streaming); schedule knobs after a colon, "
        f"any of: reference:{target_syntax(Knobs)}"
    )

    def __init__(self, spec, settings):
        super().__init__(spec, settings)
        from conformance.session.targets import signatures
        from reference_runner.knobs import OptionError, read_spec

        signatures.install()  # pipeline construction and the embedded harness inspect the same DoFns

        try:
            self.knobs = read_spec(spec.partition(":")[2])
        except OptionError as e:
            raise TargetUnavailable(f"{e} (in {spec!r})") from None
        self._job_server = InProcessJobServer(knobs=Knobs.parse(self.knobs))

    def sdk_job_endpoint(self) -> str:
        return self._job_server.endpoint()

    def stop(self) -> None:
        self._job_server.stop()

    def beam_runner(self):
        from reference_runner import ReferenceRunner

        return ReferenceRunner(**self.knobs)

    def describe(self) -> dict:
        return {**super().describe(), "schedule": self.knobs or "default"}
