"""The target registry: one entry per kind of runner the suite can run against.

A target spec is ``KIND`` or ``KIND:PARAMETERS`` (``grpc://HOST:PORT``,
``reference:bundle_size=1``). Adding a target is one ``register`` call.
"""

from __future__ import annotations

from collections.abc import Callable

from conformance.targets.base import CaseFailure, CaseRunner, RunResult, Target, TargetSettings, TargetUnavailable

_REGISTRY: dict[str, tuple[Callable[[str, TargetSettings], Target], str]] = {}


def register(kind: str, factory: Callable[[str, TargetSettings], Target], help_text: str) -> None:
    _REGISTRY[kind] = (factory, help_text)


def kind_of(spec: str) -> str:
    return spec.split(":", 1)[0]


def create(spec: str, settings: TargetSettings) -> Target:
    try:
        factory, _ = _REGISTRY[kind_of(spec)]
    except KeyError:
        raise TargetUnavailable(f"unknown target {spec!r}; known targets:\n{describe_all()}") from None
    return factory(spec, settings)


def describe_all() -> str:
    return "\n".join(f"  {kind:<12} {text}" for kind, (_, text) in sorted(_REGISTRY.items()))


def _register_builtin() -> None:
    from conformance.targets.beam_peers import BeamDirectTarget, BeamFnApiTarget
    from conformance.targets.grpc_endpoint import GrpcTarget
    from conformance.targets.reference import ReferenceTarget
    from conformance.targets.spark import SparkTarget

    register("beam-direct", BeamDirectTarget, "Beam's DirectRunner as shipped (a peer)")
    register("beam-fnapi", BeamFnApiTarget, "Beam's FnApiRunner, in process (a peer)")
    register(
        "reference",
        ReferenceTarget,
        "our reference runner, in process (batch and streaming); schedule knobs after a colon: "
        "reference:bundle_size=whole|N|random,splits=none|random,seed=N,faults=P,fuse=true|false,"
        "clock=virtual|wall",
    )
    register(
        "spark",
        SparkTarget,
        "our Spark backend through PySpark: spark (local[2]), spark:master=spark://HOST:PORT, "
        "spark:bundle_size=N, spark:seed=N (seeded micro-batch boundaries); options combine with commas",
    )
    register("grpc", GrpcTarget, "any Beam Job API endpoint: grpc://HOST:PORT, or grpc with --job-server-cmd")


_register_builtin()

__all__ = [
    "CaseFailure",
    "CaseRunner",
    "RunResult",
    "Target",
    "TargetSettings",
    "TargetUnavailable",
    "create",
    "describe_all",
    "register",
]
