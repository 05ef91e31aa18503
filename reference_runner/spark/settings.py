"""The Spark backend's settings, from one table of options: SparkRunner's arguments and its
``--spark_*`` pipeline options (spark/runner.py), a conformance target name
(``spark:master=URL,bundle_size=N``), the job server's ``--spark-master`` and the per-job
options a Job API client sends all read their values through SPARK_OPTIONS. A bad value is
refused with knobs.OptionError, naming the option."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from reference_runner import knobs
from reference_runner.knobs import Knob, OptionError

MiB = 1 << 20
#: the master of every Spark run nobody gave one (a laptop's two cores)
DEFAULT_MASTER = "local[2]"
PREFIX = "spark_"  # the options' prefix as pipeline options: --spark_bundle_size


def _text(value) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError
    return value


def _conf(value) -> dict:
    """Spark configuration: a dict, or KEY=VALUE settings (one, or a list: the repeated option)."""
    if isinstance(value, dict):
        return {str(k): str(v) for k, v in value.items()}
    items = [value] if isinstance(value, str) else list(value)
    if not all(isinstance(item, str) and "=" in item for item in items):
        raise ValueError
    return dict(item.split("=", 1) for item in items)


# remote=False: the server's own (its jobs share one SparkSession), never a Job API client's.
SPARK_OPTIONS: dict[str, Knob] = {
    "master": Knob(
        _text,
        "a Spark master URL",
        f"Spark master URL: local[N] (default {DEFAULT_MASTER}) or spark://HOST:PORT, ...",
        remote=False,
    ),
    "conf": Knob(
        _conf, "KEY=VALUE settings", "a Spark configuration setting KEY=VALUE; repeat for several", remote=False
    ),
    "parallelism": Knob(
        knobs.positive_integer,
        "a positive integer",
        "partitions after a shuffle (default: Spark's default parallelism)",
    ),
    "bundle_size": Knob(
        knobs.positive_integer,
        "a positive integer",
        "elements per bundle inside a partition (default 1000); outputs leave the partition bundle by bundle",
    ),
    "seed": Knob(
        knobs.integer,
        "an integer",
        "streaming: seeded micro-batch boundaries. Each TestStream event's elements arrive over a "
        "seeded number of micro-batches (cut at seeded points) and each pass's bundles take seeded "
        "sizes of at most --spark_bundle_size; the same seed, the same boundaries. Default: one "
        "micro-batch per event, bundles of --spark_bundle_size",
    ),
    "max_side_input_mib": Knob(
        knobs.positive_integer, "a positive integer", "largest side input broadcast to executors, in MiB (default 256)"
    ),
}


@dataclass(frozen=True)
class SparkSettings:
    master: str = DEFAULT_MASTER
    conf: dict = field(default_factory=dict)
    parallelism: int | None = None
    bundle_size: int = 1000
    seed: int | None = None  # streaming: seeded micro-batch boundaries (--spark_seed)
    max_side_input_mib: int = 256

    @property
    def max_side_input_bytes(self) -> int:
        return self.max_side_input_mib * MiB

    @classmethod
    def parse(cls, values: dict[str, Any], base: SparkSettings | None = None) -> SparkSettings:
        """``base`` (default: the defaults) with ``values`` read over it (None values skipped;
        Spark configuration merged over the base's)."""
        base = base or cls()
        changes = knobs.read(values, SPARK_OPTIONS, PREFIX)
        if "conf" in changes:
            changes["conf"] = {**base.conf, **changes["conf"]}
        return dataclasses.replace(base, **changes)

    def for_job(self, options) -> SparkSettings:
        """These (a job server's) settings with the per-job options a Job API client sent; the
        master and the Spark configuration stay the server's."""
        remote = [name for name, option in SPARK_OPTIONS.items() if option.remote]
        return self.parse(knobs.job_options(options, PREFIX, remote), base=self)


def is_local(master: str) -> bool:
    """Do the master's executors run on this host (``local``, ``local[N]``, ``local[N,F]``,
    ``local-cluster[...]``), so that loopback addresses reach them and they reach us?"""
    return master.startswith("local")


def read_spec(spec: str) -> SparkSettings:
    """'master=local[4],bundle_size=10' (a target name's options) -> the settings it gives."""
    values = dict(part.partition("=")[::2] for part in spec.split(",") if part)
    return SparkSettings.parse(values)


__all__ = ["DEFAULT_MASTER", "SPARK_OPTIONS", "OptionError", "SparkSettings", "is_local", "read_spec"]
