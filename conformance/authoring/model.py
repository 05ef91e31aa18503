"""The Beam model, as a short executable statement (conformance/SEMANTICS.md, sections 3 and 4).

Property-based cases compute their expected output here and compare it with what a
runner produced. Everything is pure Python over integer milliseconds: an element is
``Elem(value, timestamp_ms, window)`` and a key-value element has ``value == (key, v)``.
All input is on time (batch): no triggers, lateness or watermark holds are modelled.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import NamedTuple

from conformance.authoring.elements import END_OF_GLOBAL_WINDOW_MS

END_OF_WINDOW, EARLIEST, LATEST = "END_OF_WINDOW", "EARLIEST", "LATEST"


@dataclass(frozen=True, order=True)
class Interval:
    """The window [start, end) in ms. Its max timestamp, the latest instant inside it, is end - 1 ms
    (our records are ms-precise), before the epoch as after it."""

    start: int
    end: int

    @property
    def max_timestamp(self) -> int:
        return self.end - 1


@dataclass(frozen=True)
class Global:
    """The single global window; its max timestamp is END_OF_GLOBAL_WINDOW (MAX - 1 day)."""

    max_timestamp: int = END_OF_GLOBAL_WINDOW_MS


GLOBAL = Global()


class Elem(NamedTuple):
    """One element in one window (an element in k windows is k Elems)."""

    value: object
    timestamp: int
    window: object = GLOBAL


class GlobalWindows:
    """Every timestamp belongs to the global window."""

    def assign(self, t: int) -> list:
        return [GLOBAL]


class FixedWindows:
    """t belongs to [N*size + offset, (N+1)*size + offset); the offset is normalised into [0, size)."""

    def __init__(self, size: int, offset: int = 0):
        self.size, self.offset = size, offset % size

    def assign(self, t: int) -> list:
        start = t - (t - self.offset) % self.size
        return [Interval(start, start + self.size)]


class SlidingWindows:
    """t belongs to every [s, s + size) with s on the grid offset + N*period and t - size < s <= t.

    The latest start is t - ((t - offset) mod period); windows are listed latest start first."""

    def __init__(self, size: int, period: int, offset: int = 0):
        self.size, self.period, self.offset = size, period, offset % period

    def assign(self, t: int) -> list:
        last_start = t - (t - self.offset) % self.period
        return [Interval(s, s + self.size) for s in range(last_start, t - self.size, -self.period)]


class Sessions:
    """t gets the proto-window [t, t + gap); per key, windows that strictly overlap
    (a.end > b.start) merge into their span, transitively; touching windows do not merge."""

    def __init__(self, gap: int):
        self.gap = gap

    def assign(self, t: int) -> list:
        return [Interval(t, t + self.gap)]

    @staticmethod
    def merge(windows: Iterable[Interval]) -> dict:
        """Maps every window to the merged window that contains it."""
        result, group, end = {}, [], None
        for w in sorted(set(windows)):
            if group and w.start < end:
                group.append(w)
                end = max(end, w.end)
                continue
            result.update({g: Interval(group[0].start, end) for g in group})
            group, end = [w], w.end
        result.update({g: Interval(group[0].start, end) for g in group})
        return result


def window_into(elems: Iterable[Elem], windowfn) -> list[Elem]:
    """WindowInto reassigns by timestamp. An element in several windows is several elements:
    each copy is reassigned on its own (so re-windowing sliding output duplicates values)."""
    return [Elem(e.value, e.timestamp, w) for e in elems for w in windowfn.assign(e.timestamp)]


def create(values_with_timestamps: Iterable[tuple], windowfn=None) -> list[Elem]:
    """Timestamped values, assigned to windows by ``windowfn`` (default: the global window)."""
    return window_into([Elem(v, t) for v, t in values_with_timestamps], windowfn or GlobalWindows())


def key_identity(key) -> tuple:
    """GroupByKey compares keys by their encoding. For the primitive keys our cases use
    (str, int, bytes, tuples of those) encodings are equal iff type and value are equal."""
    if isinstance(key, tuple):
        return ("tuple",) + tuple(key_identity(k) for k in key)
    return (type(key).__name__, key)


def combine_timestamps(timestamps: list[int], window, timestamp_combiner: str) -> int:
    """The output timestamp of a pane: END_OF_WINDOW -> the window's max timestamp,
    EARLIEST -> the minimum input timestamp, LATEST -> the maximum (no shifting, BEAM-12011)."""
    return {END_OF_WINDOW: window.max_timestamp, EARLIEST: min(timestamps), LATEST: max(timestamps)}[timestamp_combiner]


def group_by_key(elems: Iterable[Elem], windowfn, timestamp_combiner: str = END_OF_WINDOW) -> list[Elem]:
    """One output per (encoded key, window) after merging: Elem((key, sorted values), ts, window).

    Merging window functions merge per key. An on-time batch group is one pane (first, last, ON_TIME)."""
    by_key: dict = {}
    for e in elems:
        key, value = e.value
        by_key.setdefault(key_identity(key), (key, []))[1].append((value, e.timestamp, e.window))
    out = []
    for key, entries in by_key.values():
        merge = getattr(windowfn, "merge", None)  # only merging window functions have one
        merged = merge(w for _, _, w in entries) if merge else {}
        groups: dict = {}
        for value, t, w in entries:
            groups.setdefault(merged.get(w, w), []).append((value, t))
        for w, members in groups.items():
            ts = combine_timestamps([t for _, t in members], w, timestamp_combiner)
            out.append(Elem((key, sorted(v for v, _ in members)), ts, w))
    return out


def combine_per_key(
    elems: Iterable[Elem], windowfn, fn: Callable[[list], object], timestamp_combiner: str = END_OF_WINDOW
) -> list[Elem]:
    """GroupByKey then ``fn`` over each group's values: same keys, windows and timestamps."""
    return [
        Elem((g.value[0], fn(g.value[1])), g.timestamp, g.window)
        for g in group_by_key(elems, windowfn, timestamp_combiner)
    ]


def flatten(*pcollections: Iterable[Elem]) -> list[Elem]:
    """Multiset union: every element of every input (an input listed twice counts twice),
    with its timestamp and window unchanged."""
    return [e for pc in pcollections for e in pc]
