"""Deterministic scheduling decisions: how big each bundle is, where it is split while it runs,
and which attempts fail on purpose.

Every decision comes from a seeded random stream of its own (one for sizes, one for splits, one
for faults), drawn in the order the runner asks, and the runner asks in a fixed order. So the
same seed and pipeline give the same bundles, split points and faults, and switching splits on
does not change the bundle sizes drawn. A recorded trace can stand in for the streams
(``Replay``), reproducing a run decision by decision.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

from reference_runner.knobs import NONE, RANDOM, WHOLE, Knobs

#: an attempt that has failed this often is not failed on purpose again, so every bundle commits
MAX_INJECTED_FAULTS = 3


@dataclass(frozen=True)
class Split:
    at: int  # the runner asks to split just before the bundle reads element ``at`` ...
    fraction: float  # fraction_of_remainder sent in the ProcessBundleSplitRequest
    # ... or, for a splittable DoFn, right after the bundle wrote its ``at``-th output, while the
    # element is in progress, so that the SDK splits the element's restriction
    after_output: bool = False

    def to_json(self) -> dict:
        return {"at": self.at, "fraction": self.fraction, "after_output": self.after_output}

    @classmethod
    def from_json(cls, record: dict | None) -> Split | None:
        return cls(record["at"], record["fraction"], record.get("after_output", False)) if record else None


class ReplayMismatch(ValueError):
    """A replayed trace does not fit the pipeline run: another pipeline, or another schedule."""


class SeededPolicy:
    """Decisions drawn from the knobs' seed (knobs.Knobs: read and checked there, the one place
    knobs are parsed); ``max_bundle_size`` caps every bundle (the Spark backend's seeded bundles)."""

    def __init__(self, knobs: Knobs, max_bundle_size: int | None = None):
        self.bundle_size_knob, self.splits, self.faults = knobs.bundle_size, knobs.splits, knobs.faults
        self.max_bundle_size = max_bundle_size
        # String seeds hash the same way in every process (unlike hash()).
        self._sizes = random.Random(f"{knobs.seed}/sizes")
        self._splits = random.Random(f"{knobs.seed}/splits")
        self._faults = random.Random(f"{knobs.seed}/faults")

    def bundle_size(self, stage: str, pending: int) -> int:
        if self.max_bundle_size is not None:
            pending = min(pending, self.max_bundle_size)
        size = self.bundle_size_knob
        if size == WHOLE:
            return pending
        if size == RANDOM:
            # Small bundles are where bugs hide; keep them likely without starving big inputs.
            return min(pending, self._sizes.choice((1, 2, 3, self._sizes.randint(1, max(1, pending)))))
        return min(size, pending)

    def split(self, stage: str, size: int, splittable: bool = False) -> Split | None:
        if self.splits == NONE or self._splits.random() < 0.5:
            return None
        fraction = round(self._splits.uniform(0.05, 0.95), 3)
        if splittable and self._splits.random() < 0.5:
            return Split(self._splits.randint(1, 4), fraction, after_output=True)
        if size < 2:
            return None
        return Split(self._splits.randrange(1, size), fraction)

    def finish(self) -> None:
        pass

    def fault(self, stage: str, size: int, attempt: int) -> int | None:
        """Where this attempt fails (before reading element N; N == size: after the last), or None."""
        if attempt >= MAX_INJECTED_FAULTS or self._faults.random() >= self.faults:
            return None
        return self._faults.randint(0, size)


class Replay:
    """Decisions read back from a trace, in the order they were made."""

    def __init__(self, path: str):
        with open(path, encoding="utf-8") as f:
            self._records = [json.loads(line) for line in f if line.strip()]
        self._next = 0

    def _record(self, stage: str) -> dict:
        if self._next >= len(self._records):
            raise ReplayMismatch(
                f"the trace has no more bundles, but stage {stage} asks for one: "
                "the pipeline differs from the traced one"
            )
        record = self._records[self._next]
        if record["stage"] != stage:
            raise ReplayMismatch(
                f"trace line {self._next + 1} is for stage {record['stage']}, but the "
                f"runner is scheduling {stage}: the pipeline differs from the traced one"
            )
        return record

    def bundle_size(self, stage: str, pending: int) -> int:
        size = self._record(stage)["elements"]
        if size > pending:
            raise ReplayMismatch(
                f"trace line {self._next + 1} has a bundle of {size} elements, but stage "
                f"{stage} has {pending} pending: the pipeline differs from the traced one"
            )
        return size

    def split(self, stage: str, size: int, splittable: bool = False) -> Split | None:
        return Split.from_json(self._record(stage)["split"])

    def fault(self, stage: str, size: int, attempt: int) -> int | None:
        record = self._record(stage)
        self._next += 1  # the fault is the last decision made for an attempt
        return record["fault_at"]

    def finish(self) -> None:
        if self._next < len(self._records):
            raise ReplayMismatch(
                f"the run ended after {self._next} of the trace's {len(self._records)} "
                "bundle attempts: the pipeline differs from the traced one"
            )


class Trace:
    """One JSON line per bundle attempt: what was decided and what came of it."""

    def __init__(self, path: str | None):
        self._file = open(path, "w", encoding="utf-8") if path else None

    def record(self, **fields) -> None:
        if self._file:
            self._file.write(json.dumps(fields, sort_keys=True) + "\n")

    def close(self) -> None:
        if self._file:
            self._file.close()
