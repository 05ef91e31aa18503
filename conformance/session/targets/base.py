"""What every target provides: the Target base class, its settings, and the error for a target that
cannot be reached or started. How a case runs its pipelines on a target is CaseRunner
(conformance/authoring/case_runner.py)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field

import apache_beam as beam

from conformance.authoring import shapes


class TargetUnavailable(RuntimeError):
    """The target could not be reached or started (a setup problem, not a verdict)."""


@dataclass
class TargetSettings:
    """Command-line settings a target may use (see ``pytest --help``)."""

    environment_type: str = "LOOPBACK"
    environment_config: str | None = None
    job_server_cmd: str | None = None
    job_server_timeout: float = 60.0
    # EXTERNAL without a config: where the runner reaches the worker pool the session starts
    worker_pool_host: str = "127.0.0.1"
    worker_pool_port: int = 0
    trust_unconfirmed_checks: bool = False
    extra_options: list[str] = field(default_factory=list)
    # Submit every pipeline as the SDK pre-optimized it (conformance/authoring/shapes.py); None: as built
    pipeline_shape: str | None = None


class Target:
    """A runner the suite can execute pipelines on.

    Subclasses say how to build the runner and its options; ``start``/``stop``
    bracket the test session (a job server, a SparkSession, ...).
    """

    #: the results file's and the matrix column's name: every target class sets its own (the
    #: registry refuses a class without one, rather than a run writing results-target.json)
    name: str = ""
    #: can the test process see the SDK worker's memory (so checks confirm in process)?
    in_process_worker: bool = True
    #: random examples per property case when --property-examples is not given (None: the kit's
    #: default); a runner that takes seconds per job asks for fewer, or those cases time out
    default_property_examples: int | None = None
    #: independent cases per shared job (--batch-size; 1: a job per case). Worth it where a job's
    #: fixed cost dominates a small case's (a JVM job server), measured per target
    default_batch_size: int = 1
    #: whose exclusion lists select Beam's Java ValidatesRunner tests for this target (--suite
    #: java-vr): a profile of conformance/java_vr/selections.py. The default is Beam's portable
    #: task for its Universal Local Runner, the profile of any Job API runner without one of its own
    java_vr_profile: str = "portable"
    #: the Beam release whose Java ValidatesRunner tests run against this target (None: the kit's
    #: pin, conformance/peers/pins.py BEAM_JAVA_VR); a Beam job server runs those of its own release
    java_vr_beam: str | None = None
    #: seconds one Java ValidatesRunner test may take on this target when --java-vr-timeout is not
    #: given (None: the kit's default, conformance/java_vr/driver.py DEFAULT_TIMEOUT_S); a backend
    #: whose jobs are slower sets its own, from tests measured on it
    java_vr_timeout: float | None = None

    def __init__(self, spec: str, settings: TargetSettings):
        self.spec = spec
        self.settings = settings

    def fetch(self, progress: Callable[[str], None]) -> None:
        """Bring the target's artifacts (binaries, jars, packages) into the cache, if missing.
        Called once per session before any case runs (and by ``beam-conformance fetch``);
        ``progress`` takes one line of news at a time."""

    def preflight(self) -> None:
        """Before any case is collected into a run: raise TargetUnavailable at once for what is
        known to be missing (an endpoint nothing listens at, a package not installed), so a run
        never waits out a timeout to say so. Not called for --collect-only."""

    def start(self) -> None:
        pass

    def ensure_running(self) -> None:
        """Before each case: bring back what the session started if it died during an earlier
        case (a crashed job server must not fail every case after it)."""

    def stop(self) -> None:
        pass

    def beam_runner(self):
        raise NotImplementedError(f"target {self.spec!r} must say which Beam runner it uses")

    def option_args(self, streaming: bool) -> list[str]:
        args = list(self.settings.extra_options)
        if streaming:
            args.append("--streaming")
        return args

    def run_shaped(self, pipeline: beam.Pipeline, shape: str):
        """Run ``pipeline`` as the SDK submits it in ``shape``: pre-optimized by PortableRunner's own
        rewrite, handed to the runner through Beam's run_portable_pipeline. Returns its result."""
        options = shapes.ask_for(pipeline.options, shape)
        proto = shapes.pre_optimized(pipeline, options, self.default_environment(pipeline.runner))
        return self.run_proto(pipeline.runner, proto, options)

    def default_environment(self, runner):
        """The environment of transforms that name none, as the runner's run_pipeline would give."""
        return None

    def run_proto(self, runner, proto, options):
        return runner.run_portable_pipeline(proto, options)

    def sdk_job_endpoint(self) -> str:
        """The Job API endpoint that pipelines of other SDKs are submitted to (their programs run
        LOOPBACK workers of their own); raises TargetUnavailable with the reason when there is none."""
        raise TargetUnavailable(f"target {self.spec!r} runs only Python pipelines, in process (no Job API endpoint)")

    def explain_failure(self, error_text: str) -> str | None:
        """A note for a runner error whose text alone would mislead (None: nothing to add)."""
        return None

    def describe(self) -> dict:
        """Versions and settings recorded with the results."""
        return {
            "spec": self.spec,
            "apache_beam": beam.__version__,
            "python": sys.version.split()[0],
        }
