"""Our reference runner, in process. The schedule follows the target name, e.g. ``reference``,
``reference:bundle_size=1``, ``reference:bundle_size=random,splits=random,seed=7``,
``reference:faults=0.2,seed=3``, ``reference:fuse=false``, ``reference:lift=false`` or
``reference:clock=wall`` (processing time is real time: slow for cases that advance it by minutes)."""
from __future__ import annotations

from conformance.targets.base import Target, TargetUnavailable

#: knob -> how to read it (raises ValueError on a bad value)
_KNOBS = {
    "seed": int,
    "bundle_size": lambda v: v if v in ("whole", "random") else _positive(v),
    "splits": lambda v: _one_of(v, "none", "random"),
    "faults": lambda v: _fraction(v),
    "fuse": lambda v: _one_of(v, "true", "false") == "true",
    "lift": lambda v: _one_of(v, "true", "false") == "true",
    "clock": lambda v: _one_of(v, "virtual", "wall"),
}


class ReferenceTarget(Target):
    name = "reference"

    def __init__(self, spec, settings):
        super().__init__(spec, settings)
        self.knobs = _parse(spec)

    def runner(self):
        from reference_runner import ReferenceRunner
        return ReferenceRunner(**self.knobs)

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
        try:
            knobs[key] = _KNOBS[key](value)
        except ValueError as e:
            raise TargetUnavailable(f"bad value for {key} in {spec!r}: {e}") from None
    return knobs


def _positive(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"expected 'whole', 'random' or a positive integer, not {value!r}")
    return int(value)


def _one_of(value: str, *allowed: str) -> str:
    if value not in allowed:
        raise ValueError(f"expected one of {', '.join(allowed)}, not {value!r}")
    return value


def _fraction(value: str) -> float:
    number = float(value)
    if not 0 <= number < 1:
        raise ValueError(f"expected a probability in [0, 1), not {value!r}")
    return number
