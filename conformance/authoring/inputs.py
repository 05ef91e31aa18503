"""Small transforms that give test input its event timestamps (times in seconds)."""

from __future__ import annotations

import apache_beam as beam
from apache_beam.transforms.window import TimestampedValue


def keyed_at(value, seconds, key="k") -> TimestampedValue:
    """The element (key, value) at event time ``seconds``: a TestStream's or Create's input."""
    return TimestampedValue((key, value), seconds)


def stamped_by_value():
    """(key, t) -> the same pair, timestamped at t."""
    return beam.Map(lambda kv: TimestampedValue(kv, kv[1]))


def value_at_time(label: str = "Stamp"):
    """(value, t) -> value, timestamped at t."""
    return label >> beam.Map(lambda vt: TimestampedValue(vt[0], vt[1]))


def keyed_input(p: beam.Pipeline, items, label: str = "Input") -> beam.PCollection:
    """(key, value) pairs from (key, value, t) triples, each timestamped at its t."""
    return (
        p
        | label >> beam.Create(items)
        | f"{label}/Stamp" >> beam.Map(lambda kvt: TimestampedValue((kvt[0], kvt[1]), kvt[2]))
    )
