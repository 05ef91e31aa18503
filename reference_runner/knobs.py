"""The reference runner's knobs, read in one place: from ``ReferenceRunner(...)`` arguments,
``--reference_*`` pipeline options, a conformance target name (``reference:seed=7,splits=random``)
and the options a Job API client sends the job server.

Each knob has one reader that accepts its value as typed or as text and names the knob when it
refuses one (OptionError). The same readers and ``read`` serve the Spark backend's option table
(spark/settings.py). ``Knobs`` is the one record of a run's schedule, defaults included: the
seeded policy (bundling.SeededPolicy) is made from it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

WHOLE, RANDOM, NONE = "whole", "random", "none"  # the knobs' words (bundle_size, splits)


class OptionError(ValueError):
    """A runner option (a knob, a Spark option) is unknown or has a value the runner does not take."""


def integer(value) -> int:
    """An integer given as a number (a Job API Struct's are floats) or as text."""
    if isinstance(value, bool):
        raise ValueError
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError
        return int(value)
    return int(value)


def positive_integer(value) -> int:
    number = integer(value)
    if number < 1:
        raise ValueError
    return number


def _bundle_size(value) -> str | int:
    if value in (WHOLE, RANDOM):
        return value
    return positive_integer(value)


def _choice(*allowed: str) -> Callable[[Any], str]:
    def read(value) -> str:
        if value not in allowed:
            raise ValueError
        return value

    return read


def _flag(value) -> bool:
    if isinstance(value, bool):
        return value
    if value not in ("true", "false"):
        raise ValueError
    return value == "true"


def _probability(value) -> float:
    number = float(value)
    if not 0 <= number < 1:
        raise ValueError
    return number


def _path(value) -> str | None:
    return None if value in (None, "") else str(value)


@dataclass(frozen=True)
class Knob:
    read: Callable[[Any], Any]
    expected: str  # what the error says a good value is
    help: str
    remote: bool = True  # may a Job API client set it (not: paths on the server's disk)


KNOBS: dict[str, Knob] = {
    "seed": Knob(
        integer,
        "an integer",
        "seed of every scheduling decision (bundle sizes, split points, injected faults); the "
        "same seed and pipeline give the same run",
    ),
    "bundle_size": Knob(
        _bundle_size,
        "'whole', 'random' or a positive integer",
        "elements per bundle: 'whole' (all pending input of a stage), a positive integer N, "
        "or 'random' (seeded sizes, small ones likely)",
    ),
    "splits": Knob(
        _choice(NONE, RANDOM),
        "'none' or 'random'",
        "'random': at a seeded position of some bundles the runner sends a "
        "ProcessBundleSplitRequest with a seeded fraction while the bundle runs, and "
        "reschedules the residual",
    ),
    "faults": Knob(
        _probability,
        "a number in [0, 1)",
        "probability in [0, 1) that a bundle attempt fails part-way in the worker; the runner "
        "discards that attempt and retries the bundle",
    ),
    "fuse": Knob(
        _flag,
        "'true' or 'false'",
        "fuse ParDo and Window transforms into stages (false: every transform is its own stage, "
        "exercising cross-stage paths)",
    ),
    "lift": Knob(
        _flag,
        "'true' or 'false'",
        "lift CombinePerKey into precombine, GroupByKey, merge and extract (false: run the "
        "composite's own subtransforms)",
    ),
    "clock": Knob(
        _choice("virtual", "wall"),
        "'virtual' or 'wall'",
        "processing time: 'virtual' (deterministic; when nothing else can progress it jumps to "
        "the next processing-time timer, trigger deadline or TestStream step) or 'wall' (real "
        "time: the runner waits for timers, and a TestStream's processing-time advance waits "
        "that long)",
    ),
    "trace": Knob(
        _path,
        "a file path",
        "write one JSON line per bundle attempt (stage, elements, split, fault, attempt, watermarks, outcome) to PATH",
        remote=False,
    ),
    "replay": Knob(
        _path,
        "a file path",
        "take every scheduling decision from a trace written by --reference_trace, reproducing that run",
        remote=False,
    ),
}


@dataclass(frozen=True)
class Knobs:
    seed: int | str = 0  # str: a seed derived from one (the Spark backend's per partition, "7/3")
    bundle_size: str | int = WHOLE
    splits: str = NONE
    faults: float = 0.0
    fuse: bool = True
    lift: bool = True
    clock: str = "virtual"
    trace: str | None = None
    replay: str | None = None

    @classmethod
    def parse(cls, values: dict[str, Any], base: Knobs | None = None) -> Knobs:
        """``base`` (default: the defaults) with ``values`` read over it; None values are skipped."""
        return dataclasses.replace(base or cls(), **read(values))

    @classmethod
    def from_job_options(cls, options, base: Knobs | None = None) -> Knobs:
        """The knobs among a Job API client's options (a protobuf Struct of beam:option:NAME:v1),
        as Beam's PortableRunner sends the --reference_* pipeline options, over ``base`` (the
        server's own, default the defaults); the ones that name paths on the server's disk are
        not taken from clients."""
        remote = [name for name, knob in KNOBS.items() if knob.remote]
        return cls.parse(job_options(options, "reference_", remote), base)


def job_options(options, prefix: str, names) -> dict[str, Any]:
    """The values a Job API client sent for the pipeline options ``--{prefix}{name}`` (a protobuf
    Struct of beam:option:OPTION:v1, as Beam's PortableRunner sends them), by name, as sent: a
    number, a string or a bool. Options not sent, or sent as null (unset), are left out."""
    values = {}
    for name in names:
        value = options.fields.get(f"beam:option:{prefix}{name}:v1")
        kind = value.WhichOneof("kind") if value is not None else None
        if kind not in (None, "null_value"):
            values[name] = getattr(value, kind)
    return values


def read_spec(spec: str) -> dict[str, Any]:
    """'seed=7,splits=random' (a target name's options) -> the knobs it sets, read."""
    return read(dict(part.partition("=")[::2] for part in spec.split(",") if part))


def read(values: dict[str, Any], table: dict[str, Knob] = KNOBS, prefix: str = "") -> dict[str, Any]:
    """Every knob of ``table`` given (None: not given), read; OptionError names an unknown knob
    or a bad value (as ``prefix`` + its name: how the user spelled it)."""
    out = {}
    for name, value in values.items():
        knob = table.get(name)
        if knob is None:
            raise OptionError(f"unknown runner option {prefix + name!r}; known: {', '.join(sorted(table))}")
        if value is None:
            continue
        try:
            out[name] = knob.read(value)
        except (TypeError, ValueError):
            raise OptionError(f"{prefix}{name} must be {knob.expected}, not {value!r}") from None
    return out
