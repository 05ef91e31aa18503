"""The reference runner's knobs, read in one place: from ``ReferenceRunner(...)`` arguments,
``--reference_*`` pipeline options, a conformance target name (``reference:seed=7,splits=random``)
and the options a Job API client sends the job server.

``Knobs`` is the one record of a run's schedule and the one table of its knobs: each field
carries its default, its reader (which accepts a value as typed or as text and names the knob
when it refuses one: OptionError), how it is written and its help (option_table.option), and
ReferenceRunner's parameters, the ``--reference_*`` options and the reference target's help are
generated from the fields. The seeded policy (bundling.SeededPolicy) is made from it. The same
readers serve the Spark backend's settings (spark/settings.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from reference_runner import option_table
from reference_runner.option_table import Knob, job_options, option, split_spec, table
from reference_runner.option_table import OptionError as OptionError  # raised by read: its users catch it here

WHOLE, RANDOM, NONE = "whole", "random", "none"  # the knobs' words (bundle_size, splits)
PREFIX = "reference_"  # the knobs' prefix as pipeline options: --reference_bundle_size


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
class Knobs:
    """The knobs, each with its option table row (option_table.option): the runner's parameters,
    its ``--reference_*`` options and the reference target's help are generated from these fields."""

    seed: int | str = option(  # str: a seed derived from one (the Spark backend's per partition, "7/3")
        0,
        read=integer,
        form="N",
        expected="an integer",
        help="seed of every scheduling decision (bundle sizes, split points, injected faults); the "
        "same seed and pipeline give the same run",
    )
    bundle_size: str | int = option(
        WHOLE,
        read=_bundle_size,
        form="whole|N|random",
        expected="'whole', 'random' or a positive integer",
        help="elements per bundle: 'whole' (all pending input of a stage), a positive integer N, "
        "or 'random' (seeded sizes, small ones likely)",
    )
    splits: str = option(
        NONE,
        read=_choice(NONE, RANDOM),
        form="none|random",
        expected="'none' or 'random'",
        help="'random': at a seeded position of some bundles the runner sends a "
        "ProcessBundleSplitRequest with a seeded fraction while the bundle runs, and "
        "reschedules the residual",
    )
    faults: float = option(
        0.0,
        read=_probability,
        form="P",
        expected="a number in [0, 1)",
        help="probability in [0, 1) that a bundle attempt fails part-way in the worker; the runner "
        "discards that attempt and retries the bundle",
    )
    fuse: bool = option(
        True,
        read=_flag,
        form="true|false",
        expected="'true' or 'false'",
        help="fuse ParDo and Window transforms into stages (false: every transform is its own stage, "
        "exercising cross-stage paths)",
    )
    lift: bool = option(
        True,
        read=_flag,
        form="true|false",
        expected="'true' or 'false'",
        help="lift CombinePerKey into precombine, GroupByKey, merge and extract (false: run the "
        "composite's own subtransforms)",
    )
    clock: str = option(
        "virtual",
        read=_choice("virtual", "wall"),
        form="virtual|wall",
        expected="'virtual' or 'wall'",
        help="processing time: 'virtual' (deterministic; when nothing else can progress it jumps to "
        "the next processing-time timer, trigger deadline or TestStream step) or 'wall' (real "
        "time: the runner waits for timers, and a TestStream's processing-time advance waits "
        "that long)",
    )
    trace: str | None = option(
        None,
        read=_path,
        form="PATH",
        expected="a file path",
        help="write one JSON line per bundle attempt (stage, elements, split, fault, attempt, watermarks, outcome) "
        "to PATH",
        remote=False,
    )
    replay: str | None = option(
        None,
        read=_path,
        form="PATH",
        expected="a file path",
        help="take every scheduling decision from a trace written by --reference_trace, reproducing that run",
        remote=False,
    )

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
        return cls.parse(job_options(options, PREFIX, remote), base)


KNOBS: dict[str, Knob] = table(Knobs)


def read_spec(spec: str) -> dict[str, Any]:
    """'seed=7,splits=random' (a target name's options) -> the knobs it sets, read."""
    return read(split_spec(spec))


def read(values: dict[str, Any]) -> dict[str, Any]:
    """Every knob given (None: not given), read; OptionError names an unknown knob or a bad value."""
    return option_table.read(values, KNOBS)
