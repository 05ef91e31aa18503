"""Windows as the engine sees them, and the time constants (all times in microseconds)."""

from __future__ import annotations

from dataclasses import dataclass

MIN_TIMESTAMP = -(2**63) // 1000 * 1000  # Beam's minimum, rounded to whole milliseconds
MAX_TIMESTAMP = (2**63 - 1) // 1000 * 1000
PLUS_INFINITY = MAX_TIMESTAMP + 1  # past every timestamp, as the watermark of finished input
#: The global window ends one day before the maximum timestamp (Beam's convention).
END_OF_GLOBAL_WINDOW = MAX_TIMESTAMP - 24 * 60 * 60 * 1_000_000


@dataclass(frozen=True, order=True)
class Interval:
    """[start, end); its latest instant is end - 1 ms."""

    start: int
    end: int

    @property
    def max_timestamp(self) -> int:
        return self.end - 1000

    def span(self, other: Interval) -> Interval:
        return Interval(min(self.start, other.start), max(self.end, other.end))


@dataclass(frozen=True)
class GlobalWindow:
    @property
    def max_timestamp(self) -> int:
        return END_OF_GLOBAL_WINDOW

    def __reduce__(self) -> str:
        return "GLOBAL"  # unpickled as the one instance (codecs compare it by identity)


GLOBAL = GlobalWindow()


@dataclass(frozen=True)
class OpaqueWindow:
    """A window of a user WindowFn: compared by its encoding, timed by its max timestamp."""

    encoded: bytes
    max_timestamp: int


def merge_overlapping(windows) -> dict:
    """Session-style merging: windows that overlap merge into their span, transitively.

    Returns {window: merged window} for every window given."""
    ordered = sorted(set(windows))
    result: dict = {}
    group: list = []
    current = None
    for w in ordered:
        if current is not None and w.start < current.end:
            current = current.span(w)
            group.append(w)
            continue
        for g in group:
            result[g] = current
        current, group = w, [w]
    for g in group:
        result[g] = current
    return result


def merge_windows(windows: list, merge_fn=None) -> dict:
    """The one window-merge rule of a GroupByKey: {merged window: the windows it holds}, in the
    order ``windows`` are given. ``merge_fn`` (a user WindowFn's merge, run by the SDK) decides
    when there is one; without it, overlapping intervals merge (sessions). A window that merges
    with nothing stands for itself."""
    if merge_fn is not None:
        mapping = merge_fn(windows)
    else:
        mapping = merge_overlapping(w for w in windows if isinstance(w, Interval))
    merged: dict = {}
    for w in windows:
        merged.setdefault(mapping.get(w, w), []).append(w)
    return merged


#: How a pane's output timestamp is chosen (the windowing strategy's OutputTime).
END_OF_WINDOW, EARLIEST, LATEST = "END_OF_WINDOW", "EARLIEST", "LATEST"


def combine_timestamps(combiner: str, timestamps: list, window) -> int:
    """The one timestamp-combine rule: a pane's output timestamp from its elements' timestamps
    (or holds). With none, or END_OF_WINDOW, it is the window's max timestamp."""
    if combiner == EARLIEST and timestamps:
        return min(timestamps)
    if combiner == LATEST and timestamps:
        return max(timestamps)
    return window.max_timestamp
