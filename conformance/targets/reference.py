"""Our reference runner, in process. Options follow the target name:
``reference``, ``reference:fuse=false``, ``reference:lift=false`` (or both, comma-separated)."""
from __future__ import annotations

from conformance.targets.base import Target, TargetUnavailable

_KNOBS = {"fuse": ("true", "false"), "lift": ("true", "false")}


class ReferenceTarget(Target):
    name = "reference"

    def __init__(self, spec, settings):
        super().__init__(spec, settings)
        self.knobs = _parse(spec)

    def runner(self):
        from reference_runner import ReferenceRunner
        return ReferenceRunner(fuse=self.knobs.get("fuse", "true") == "true",
                               lift=self.knobs.get("lift", "true") == "true")

    def describe(self) -> dict:
        return {**super().describe(), "schedule": self.knobs or "default"}


def _parse(spec: str) -> dict:
    _, _, rest = spec.partition(":")
    knobs = {}
    for part in filter(None, rest.split(",")):
        key, _, value = part.partition("=")
        if key not in _KNOBS:
            raise TargetUnavailable(f"unknown reference runner option {key!r} in {spec!r}; "
                                    f"known: {', '.join(sorted(_KNOBS))}")
        if value not in _KNOBS[key]:
            raise TargetUnavailable(f"{key} must be one of {_KNOBS[key]}, not {value!r}")
        knobs[key] = value
    return knobs
