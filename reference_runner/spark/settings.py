"""The Spark backend's settings, one record that is also their option table (SPARK_OPTIONS, read
from its fields): SparkRunner's arguments and its ``--spark_*`` pipeline options
(spark/runner.py), a conformance target name (``spark:master=URL,bundle_size=N``), the job
server's ``--spark-master`` and the per-job options a Job API client sends are all generated from
it and read their values through it. A bad value is refused with OptionError, naming the option."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from reference_runner import knobs, option_table
from reference_runner.option_table import Knob, option, split_spec, table
from reference_runner.option_table import OptionError as OptionError  # raised by parse: its users catch it here

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


@dataclass(frozen=True)
class SparkSettings:
    """The settings, each with its option table row (option_table.option): SparkRunner's
    parameters, its ``--spark_*`` options and the Spark target's help are generated from these
    fields. remote=False: the server's own (its jobs share one SparkSession), never a Job API
    client's."""

    master: str = option(
        DEFAULT_MASTER,
        read=_text,
        form="URL",
        expected="a Spark master URL",
        help="Spark master URL: local[N] or spark://HOST:PORT, ...",
        remote=False,
    )
    conf: dict = option(
        factory=dict,
        read=_conf,
        form="KEY=VALUE",
        expected="KEY=VALUE settings",
        help="a Spark configuration setting KEY=VALUE; repeat for several",
        remote=False,
        repeated=True,
    )
    parallelism: int | None = option(
        None,
        read=knobs.positive_integer,
        form="N",
        expected="a positive integer",
        help="partitions after a shuffle (default: Spark's default parallelism)",
    )
    bundle_size: int = option(
        1000,
        read=knobs.positive_integer,
        form="N",
        expected="a positive integer",
        help="elements per bundle inside a partition; outputs leave the partition bundle by bundle",
    )
    seed: int | None = option(
        None,
        read=knobs.integer,
        form="N",
        expected="an integer",
        help="streaming: seeded micro-batch boundaries. Each TestStream event's elements arrive over a "
        "seeded number of micro-batches (cut at seeded points) and each pass's bundles take seeded "
        "sizes of at most --spark_bundle_size; the same seed, the same boundaries. Default: one "
        "micro-batch per event, bundles of --spark_bundle_size",
    )
    max_side_input_mib: int = option(
        256,
        read=knobs.positive_integer,
        form="N",
        expected="a positive integer",
        help="largest side input broadcast to executors, in MiB",
    )

    @property
    def max_side_input_bytes(self) -> int:
        return self.max_side_input_mib * MiB

    @classmethod
    def parse(cls, values: dict[str, Any], base: SparkSettings | None = None) -> SparkSettings:
        """``base`` (default: the defaults) with ``values`` read over it (None values skipped;
        Spark configuration merged over the base's)."""
        base = base or cls()
        changes = option_table.read(values, SPARK_OPTIONS, PREFIX)
        if "conf" in changes:
            changes["conf"] = {**base.conf, **changes["conf"]}
        return dataclasses.replace(base, **changes)

    def for_job(self, options) -> SparkSettings:
        """These (a job server's) settings with the per-job options a Job API client sent; the
        master and the Spark configuration stay the server's."""
        remote = [name for name, knob in SPARK_OPTIONS.items() if knob.remote]
        return self.parse(option_table.job_options(options, PREFIX, remote), base=self)


SPARK_OPTIONS: dict[str, Knob] = table(SparkSettings)


def is_local(master: str) -> bool:
    """Do the master's executors run on this host (``local``, ``local[N]``, ``local[N,F]``,
    ``local-cluster[...]``), so that loopback addresses reach them and they reach us?"""
    return master.startswith("local")


def read_spec(spec: str) -> SparkSettings:
    """'master=local[4],bundle_size=10' (a target name's options) -> the settings it gives."""
    return SparkSettings.parse(split_spec(spec))


__all__ = ["DEFAULT_MASTER", "SPARK_OPTIONS", "OptionError", "SparkSettings", "is_local", "read_spec"]
