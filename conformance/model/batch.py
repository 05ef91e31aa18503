"""On-time (batch) data through the primitives (SEMANTICS 3, 4, 6, 8 and 10): every element is in
by the time anything groups, so each GroupByKey fires one pane per key and window, first, last and
ON_TIME. An element is ``Elem(value, timestamp_ms, window, pane)``; a key-value element has
``value == (key, v)``; an element in k windows is k Elems."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import NamedTuple

from conformance.model.windows import GLOBAL, FixedWindows, Global, GlobalWindows, Interval, Sessions, SlidingWindows

END_OF_WINDOW, EARLIEST, LATEST = "END_OF_WINDOW", "EARLIEST", "LATEST"


class Pane(NamedTuple):
    """A PaneInfo: is_first, is_last, timing, index, nonspeculative index (SEMANTICS 5)."""

    first: bool
    last: bool
    timing: str
    index: int
    nonspec: int


# the pane of an element no trigger fired (SEMANTICS 1), and of a batch group (SEMANTICS 5)
NO_FIRING = Pane(True, True, "UNKNOWN", 0, 0)
ON_TIME_ONLY = Pane(True, True, "ON_TIME", 0, 0)


class Elem(NamedTuple):
    """One element in one window. ``pane`` None: the model does not fix it at this point (after a
    WindowInto or a TimestampedValue, which SDKs give the "no firing" pane or keep the input's)."""

    value: object
    timestamp: int
    window: object = GLOBAL
    pane: Pane | None = NO_FIRING


__all__ = [
    "EARLIEST",
    "END_OF_WINDOW",
    "GLOBAL",
    "LATEST",
    "NO_FIRING",
    "ON_TIME_ONLY",
    "Elem",
    "FixedWindows",
    "Global",
    "GlobalWindows",
    "Interval",
    "Pane",
    "Sessions",
    "SlidingWindows",
]


def window_into(elems: Iterable[Elem], windowfn) -> list[Elem]:
    """WindowInto reassigns by timestamp. An element in several windows is several elements:
    each copy is reassigned on its own (so re-windowing sliding output duplicates values)."""
    return [Elem(e.value, e.timestamp, w, None) for e in elems for w in windowfn.assign(e.timestamp)]


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
    if timestamp_combiner == END_OF_WINDOW or not timestamps:
        return window.max_timestamp
    return min(timestamps) if timestamp_combiner == EARLIEST else max(timestamps)


def groups(elems: Iterable[Elem], windowfn) -> list[tuple]:
    """(key, window, [(value, timestamp)]) per encoded key and window, windows merged per key
    for a merging WindowFn, in first-seen order."""
    by_key: dict = {}
    for e in elems:
        key, value = e.value
        by_key.setdefault(key_identity(key), (key, []))[1].append((value, e.timestamp, e.window))
    out = []
    for key, entries in by_key.values():
        merged = windowfn.merge(w for _, _, w in entries) if getattr(windowfn, "merging", False) else {}
        per_window: dict = {}
        for value, t, w in entries:
            per_window.setdefault(merged.get(w, w), []).append((value, t))
        out.extend((key, w, members) for w, members in per_window.items())
    return out


def group_by_key(elems: Iterable[Elem], windowfn, timestamp_combiner: str = END_OF_WINDOW) -> list[Elem]:
    """One output per (encoded key, window) after merging: Elem((key, sorted values), ts, window),
    in the one pane of a batch group."""
    out = []
    for key, w, members in groups(elems, windowfn):
        ts = combine_timestamps([t for _, t in members], w, timestamp_combiner)
        out.append(Elem((key, sorted(v for v, _ in members)), ts, w, ON_TIME_ONLY))
    return out


def combine_per_key(
    elems: Iterable[Elem], windowfn, fn: Callable[[list], object], timestamp_combiner: str = END_OF_WINDOW
) -> list[Elem]:
    """GroupByKey then ``fn`` over each group's values: same keys, windows, timestamps and pane."""
    return [
        Elem((g.value[0], fn(g.value[1])), g.timestamp, g.window, g.pane)
        for g in group_by_key(elems, windowfn, timestamp_combiner)
    ]


def combine_globally(
    elems: Iterable[Elem], windowfn, fn: Callable[[list], object], timestamp_combiner: str = END_OF_WINDOW
) -> list[Elem]:
    """``CombineGlobally(fn).without_defaults()``: one value per window that has input (merged
    windows for a merging WindowFn), stamped and paned like a group (SEMANTICS 4 and 8)."""
    keyed = [Elem((None, e.value), e.timestamp, e.window, e.pane) for e in elems]
    return [
        Elem(g.value[1], g.timestamp, g.window, g.pane)
        for g in combine_per_key(keyed, windowfn, fn, timestamp_combiner)
    ]


def co_group_by_key(tagged: dict[str, list[Elem]], windowfn, timestamp_combiner: str = END_OF_WINDOW) -> list[Elem]:
    """CoGroupByKey: per key and window, each tag's sorted values: Elem((key, {tag: [...]}), ...)."""
    flat = [Elem((e.value[0], (tag, e.value[1])), e.timestamp, e.window) for tag, pc in tagged.items() for e in pc]
    out = []
    for g in group_by_key(flat, windowfn, timestamp_combiner):
        key, pairs = g.value
        per_tag = {tag: sorted(v for t, v in pairs if t == tag) for tag in tagged}
        out.append(Elem((key, per_tag), g.timestamp, g.window, g.pane))
    return out


def flatten(*pcollections: Iterable[Elem]) -> list[Elem]:
    """Multiset union: every element of every input (an input listed twice counts twice),
    with its timestamp, window and pane unchanged."""
    return [e for pc in pcollections for e in pc]
