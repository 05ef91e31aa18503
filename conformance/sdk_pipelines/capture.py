"""The elements an SDK program captured (programs.py's JSON lines), as the kit's Records."""

from __future__ import annotations

import json
from pathlib import Path

from apache_beam.utils.timestamp import MIN_TIMESTAMP

from conformance.authoring.elements import (
    END_OF_GLOBAL_WINDOW_MS,
    GLOBAL,
    MIN_TIMESTAMP_MS,
    Pane,
    Record,
    Window,
    to_ms,
)

# The SDKs write Beam's extreme instants a millisecond apart from one another (each rounds the
# microsecond constants its own way); compared here as the one instant each stands for.
_MIN_MS = to_ms(MIN_TIMESTAMP)


def _instant(ms: int) -> int:
    if ms <= MIN_TIMESTAMP_MS:
        return _MIN_MS
    if abs(ms - END_OF_GLOBAL_WINDOW_MS) <= 1:
        return END_OF_GLOBAL_WINDOW_MS
    return ms


def read(path: Path) -> list[Record]:
    """Every captured element; a line that is not a capture record raises ValueError naming it."""
    records = []
    if not path.exists():
        return records
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            window = GLOBAL if raw["window"] is None else Window(*(int(x) for x in raw["window"]))
            p = raw["pane"]
            pane = Pane(bool(p["first"]), bool(p["last"]), str(p["timing"]), int(p["index"]), int(p["nonspec"]))
            records.append(Record(raw["value"], _instant(int(raw["timestamp_ms"])), window, pane))
        except (ValueError, KeyError, TypeError) as e:
            raise ValueError(f"{path.name}, line {number}: not a capture record ({e}): {line[:200]}") from None
    return records
