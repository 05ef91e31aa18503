"""Windows and the standard WindowFns (SEMANTICS 4), and which side window a main window reads
(SEMANTICS 6). Times are integer milliseconds (any integer unit works: the transcripts' vectors
count whole seconds)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from conformance.model.time import END_OF_GLOBAL_WINDOW_MS


@dataclass(frozen=True, order=True)
class Interval:
    """The window [start, end). Its max timestamp, the latest instant inside it, is end - 1 ms
    (records are ms-precise), before the epoch as after it."""

    start: int
    end: int

    @property
    def max_timestamp(self) -> int:
        return self.end - 1

    def __repr__(self) -> str:
        return f"[{self.start}, {self.end})"


@dataclass(frozen=True)
class Global:
    """The single global window; its max timestamp is END_OF_GLOBAL_WINDOW (MAX - 1 day)."""

    max_timestamp: int = END_OF_GLOBAL_WINDOW_MS

    def __repr__(self) -> str:
        return "GLOBAL"


GLOBAL = Global()


class GlobalWindows:
    """Every timestamp belongs to the global window."""

    merging = False

    def assign(self, t: int) -> list:
        return [GLOBAL]


class FixedWindows:
    """t belongs to [N*size + offset, (N+1)*size + offset); the offset is normalised into [0, size)."""

    merging = False

    def __init__(self, size: int, offset: int = 0):
        self.size, self.offset = size, offset % size

    def assign(self, t: int) -> list:
        start = t - (t - self.offset) % self.size
        return [Interval(start, start + self.size)]


class SlidingWindows:
    """t belongs to every [s, s + size) with s on the grid offset + N*period and t - size < s <= t.

    The latest start is t - ((t - offset) mod period); windows are listed latest start first."""

    merging = False

    def __init__(self, size: int, period: int, offset: int = 0):
        self.size, self.period, self.offset = size, period, offset % period

    def assign(self, t: int) -> list:
        last_start = t - (t - self.offset) % self.period
        return [Interval(s, s + self.size) for s in range(last_start, t - self.size, -self.period)]


class Sessions:
    """t gets the proto-window [t, t + gap); per key, windows that strictly overlap
    (a.end > b.start) merge into their span, transitively; touching windows do not merge."""

    merging = True

    def __init__(self, gap: int):
        self.gap = gap

    def assign(self, t: int) -> list:
        return [Interval(t, t + self.gap)]

    @staticmethod
    def merge(windows: Iterable[Interval]) -> dict:
        """Maps every window to the merged window that contains it."""
        result: dict = {}
        group: list = []
        end = None
        for w in sorted(set(windows)):
            if group and end is not None and w.start < end:
                group.append(w)
                end = max(end, w.end)
                continue
            if group:
                result.update({g: Interval(group[0].start, end) for g in group})
            group, end = [w], w.end
        if group:
            result.update({g: Interval(group[0].start, end) for g in group})
        return result


WINDOW_FNS = {
    "FixedWindows": FixedWindows,
    "SlidingWindows": SlidingWindows,
    "Sessions": Sessions,
    "GlobalWindows": GlobalWindows,
}


def by_name(name: str, args: list[int]):
    """A WindowFn by Beam's Python class name and its parameters (in the model's time unit)."""
    if name not in WINDOW_FNS:
        raise ValueError(f"not a standard WindowFn the model knows: {name!r} (known: {', '.join(WINDOW_FNS)})")
    return WINDOW_FNS[name](*args)


def side_window(side_windowfn, main_window):
    """The side window a main-input element in ``main_window`` reads: the one the side input's
    WindowFn assigns to the main window's max timestamp, the earliest-starting one for sliding
    windows; a globally windowed side input is read whole from every main window (SEMANTICS 6)."""
    assigned = side_windowfn.assign(main_window.max_timestamp)
    return min(assigned, key=lambda w: getattr(w, "start", 0))
