"""A runner served by a job server that the session fetches, starts and stops itself.

The public base class for a runner author's own target (see docs/writing-a-case.md, "Adding a target"): say
how to fetch the job server and the command that serves the Beam Job API on a given port, and
the session does the rest: a free loopback port per session (per pytest-xdist worker), waiting
until it answers, stopping it with its children, SDK workers as ``--environment-type`` asks.
"""

from __future__ import annotations

from conformance.session.targets.base import TargetUnavailable
from conformance.session.targets.grpc_endpoint import GrpcTarget


class JobServerTarget(GrpcTarget):
    """A Job API runner whose job server the session starts from the target's own artifacts."""

    #: every job-server target names itself; the grpc target's name is not theirs to inherit
    name = ""
    #: the runner's release, recorded with the results (and compared with the submitting SDK's)
    runner_version: str | None = None
    #: the Beam release the job server is built from, when it is one of Beam's (None: not Beam's)
    beam_version: str | None = None

    def __init__(self, spec, settings):
        if settings.job_server_cmd:
            raise TargetUnavailable(
                f"target {spec!r} starts its own job server; --job-server-cmd is for the grpc target"
            )
        super().__init__(spec, settings)
        self.name = type(self).name  # not the grpc target's, which names the endpoint

    def starts_job_server(self) -> bool:
        return True

    def job_server_argv(self, port: int) -> list[str]:
        raise NotImplementedError(f"target {self.spec!r} must say how to start its job server")

    def describe(self) -> dict:
        info = super().describe()
        if self.runner_version:
            info["runner_version"] = self.runner_version
        skew = self.version_skew()
        if skew:
            info["version_skew"] = skew
        return info

    def version_skew(self) -> str:
        """A sentence when the job server is another Beam release than the submitting SDK, else ''."""
        import apache_beam

        if not self.beam_version or self.beam_version == apache_beam.__version__:
            return ""
        older = _release(self.beam_version) < _release(apache_beam.__version__)
        return (
            f"the job server is Beam {self.beam_version}, {'older' if older else 'newer'} than the "
            f"submitting Python SDK (apache-beam {apache_beam.__version__})"
        )


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".")[:3] if part.isdigit())
