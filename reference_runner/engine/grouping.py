"""GroupByKey: values gathered per (encoded key, window), merged windows, output timestamps.

GroupBuffer groups as in batch (one pane per key and window, when the watermark passes its
end); TriggeredBuffer (engine/panes.py) fires panes by a trigger. Both are a ``Buffer``, so
the engine drives a GroupByKey the same way whichever it has.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from reference_runner.engine.windows import END_OF_WINDOW, MIN_TIMESTAMP, combine_timestamps, merge_windows


@dataclass(frozen=True)
class Pane:
    is_first: bool
    is_last: bool
    timing: str  # EARLY, ON_TIME, LATE
    index: int
    nonspeculative_index: int


ON_TIME_ONLY = Pane(True, True, "ON_TIME", 0, 0)


@dataclass
class Grouping:
    """How one GroupByKey groups; ``codec`` (supplied by the executor) reads and writes elements.

    codec.split(element) -> (key_bytes, key, value, timestamp, windows)
    codec.build(key, values, timestamp, window, pane) -> element
    """

    codec: Any
    merging: bool = False
    # Custom merging (a user WindowFn): windows -> {window: window it merges into}; sessions
    # (merge_fn None) are merged here by overlap.
    merge_fn: Any = None
    timestamp_combiner: str = END_OF_WINDOW
    allowed_lateness: int = 0
    # Streaming: the trigger (engine.triggers) and accumulation mode; None groups as in batch,
    # one pane per key and window when the watermark passes its end.
    trigger: Any = None
    accumulating: bool = False
    # Whether a pane with nothing new since the last one is still emitted when it is the on-time
    # pane (the windowing strategy's OnTimeBehavior) or the final one (its ClosingBehavior).
    empty_on_time: bool = True
    empty_final: bool = True


class Buffer(Protocol):
    """The buffered input of one GroupByKey. Every method but ``hold``, ``next_deadline`` and
    ``len`` returns the grouped elements (panes) it fired, in a fixed order."""

    def __len__(self) -> int: ...

    def add(self, elements: list, watermark: int, now: int) -> list: ...

    def on_watermark(self, watermark: int, now: int) -> list: ...

    def on_processing_time(self, watermark: int, now: int) -> list: ...

    def hold(self, watermark: int, default: int) -> int:
        """The output watermark hold given the input ``watermark`` (``default``: none)."""
        ...

    def next_deadline(self) -> int | None:
        """The earliest processing time it waits for (None: it does not wait for one)."""
        ...

    def idle(self) -> bool:
        """Nothing buffered, no window's trigger state kept (a closed window waits for GC)."""
        ...


@dataclass
class _Group:
    key: Any
    values: list = field(default_factory=list)
    timestamps: list = field(default_factory=list)


class GroupBuffer:
    """The buffered input of one GroupByKey until its windows close."""

    def __init__(self, grouping: Grouping):
        self.grouping = grouping
        # key bytes -> window -> group
        self._by_key: dict[bytes, dict[Any, _Group]] = {}
        # keys with windows added since they were last merged (merging again would change nothing,
        # and a custom merge is a call into the SDK)
        self._unmerged: set[bytes] = set()

    def __len__(self) -> int:
        return sum(len(ws) for ws in self._by_key.values())

    def add(self, elements: list, watermark: int | None = None, now: int | None = None) -> list:
        """Buffer the elements; nothing fires before the watermark passes a window's end."""
        split = self.grouping.codec.split
        for element in elements:
            key_bytes, key, value, timestamp, windows = split(element)
            per_window = self._by_key.setdefault(key_bytes, {})
            if self.grouping.merging:
                self._unmerged.add(key_bytes)
            for w in windows:
                group = per_window.get(w)
                if group is None:
                    group = per_window[w] = _Group(key)
                group.values.append(value)
                group.timestamps.append(timestamp)
        return []

    def on_watermark(self, watermark: int, now: int) -> list:
        return self.fire(watermark)

    def on_processing_time(self, watermark: int, now: int) -> list:
        return []  # no trigger: processing time fires nothing

    def hold(self, watermark: int, default: int) -> int:
        # A group's output timestamp may be any of its elements': nothing passes while one waits.
        return MIN_TIMESTAMP if any(self._by_key.values()) else default

    def next_deadline(self) -> int | None:
        return None

    def idle(self) -> bool:
        return not self._by_key

    def fire(self, watermark: int) -> list:
        """Emit every group whose window's end the watermark has passed, in a fixed order."""
        build = self.grouping.codec.build
        out = []
        for key_bytes in sorted(self._by_key):
            per_window = self._by_key[key_bytes]
            if self.grouping.merging and key_bytes in self._unmerged:
                per_window = self._merge(per_window)
                self._by_key[key_bytes] = per_window
                self._unmerged.discard(key_bytes)
            for w in sorted(per_window, key=_window_order):
                if w.max_timestamp < watermark:
                    group = per_window.pop(w)
                    ts = combine_timestamps(self.grouping.timestamp_combiner, group.timestamps, w)
                    out.append(build(group.key, group.values, ts, w, ON_TIME_ONLY))
            if not per_window:
                del self._by_key[key_bytes]
        return out

    def _merge(self, per_window: dict) -> dict:
        merged: dict = {}
        for target, parts in merge_windows(list(per_window), self.grouping.merge_fn).items():
            groups = [per_window[w] for w in parts]
            merged[target] = _Group(
                groups[0].key, [v for g in groups for v in g.values], [t for g in groups for t in g.timestamps]
            )
        return merged


def _window_order(w) -> tuple:
    return (w.max_timestamp, getattr(w, "start", 0), getattr(w, "encoded", b""))
