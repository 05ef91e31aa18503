"""What a case expects, what a runner produced, and the difference between them.

Pure Python and no Beam imports beyond constants, so the comparison logic runs
(and is unit tested) anywhere, including inside the SDK worker that checks a
pipeline's output.

Times in expectations are in seconds, as everywhere in Beam Python. They are
compared at millisecond precision, the precision of the wire format. The end of
the global window is compared with a 1 ms tolerance: Python's
``GlobalWindow().max_timestamp()`` lies 1 us below Java's and so encodes 1 ms
lower (see conformance/SEMANTICS.md, section 1).
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance.authoring.case_errors import MalformedExpectation
from conformance.capabilities import PANE_METADATA
from conformance.model.time import END_OF_GLOBAL_WINDOW_MS, MAX_TIMESTAMP_MS, MIN_TIMESTAMP_MS

_TIMINGS = ("EARLY", "ON_TIME", "LATE", "UNKNOWN")


class _Any:
    """Marks an unchecked field; pickles by reference so it stays the one ANY in workers."""

    def __repr__(self) -> str:
        return "ANY"

    def __reduce__(self):
        return "ANY"


ANY = _Any()


# ---------------------------------------------------------------------------
# Normalised forms: everything reduced to hashable tuples of ints and strings.


def to_ms(seconds_or_ms: Any, *, unit: str = "s") -> int:
    """Seconds (int, float or Beam Timestamp) to whole milliseconds, floored."""
    micros = getattr(seconds_or_ms, "micros", None)
    if micros is None:
        micros = round(seconds_or_ms * (1_000_000 if unit == "s" else 1_000))
    ms = micros // 1000
    # Python's global-window end is 1 us below Java's: treat both as the same instant.
    if END_OF_GLOBAL_WINDOW_MS - 1 <= ms <= END_OF_GLOBAL_WINDOW_MS:
        return END_OF_GLOBAL_WINDOW_MS
    return ms


def canon(value: Any) -> Any:
    """A hashable form of a value in which equal values compare equal."""
    if isinstance(value, (str, bytes, int, float, bool, type(None))):
        return value
    if isinstance(value, dict):
        return ("<dict>", tuple(sorted((canon(k), canon(v)) for k, v in value.items())))
    if isinstance(value, (set, frozenset)):
        return ("<set>", tuple(sorted(canon(v) for v in value)))
    if isinstance(value, (list, tuple)):
        return tuple(canon(v) for v in value)
    try:
        hash(value)
        return value
    except TypeError:
        return ("<repr>", repr(value))


@dataclass(frozen=True)
class Window:
    """A window in expectations: ``W(0, 10)`` is [0 s, 10 s); ``GLOBAL`` the global window."""

    start_ms: int | None = None
    end_ms: int | None = None

    @property
    def is_global(self) -> bool:
        return self.start_ms is None

    def key(self) -> tuple:
        return ("global",) if self.is_global else ("interval", self.start_ms, self.end_ms)

    def __repr__(self) -> str:
        if self.is_global:
            return "GLOBAL"
        return f"[{_fmt_ms(self.start_ms)}, {_fmt_ms(self.end_ms)})"


GLOBAL = Window()


def W(start: float, end: float) -> Window:  # noqa: N802 - reads like the notation
    return Window(to_ms(start), to_ms(end))


@dataclass(frozen=True)
class Pane:
    """A (possibly partial) PaneInfo: fields left as None are not checked."""

    first: bool | None = None
    last: bool | None = None
    timing: str | None = None
    index: int | None = None
    nonspec: int | None = None

    def __post_init__(self):
        if self.timing is not None and self.timing not in _TIMINGS:
            raise ValueError(f"pane timing must be one of {_TIMINGS}, not {self.timing!r}")

    def checked_fields(self) -> tuple[str, ...]:
        return tuple(f for f in ("first", "last", "timing", "index", "nonspec") if getattr(self, f) is not None)

    def project(self, fields: Sequence[str]) -> tuple:
        return tuple(getattr(self, f) for f in fields)

    def __repr__(self) -> str:
        parts = []
        if self.timing is not None:
            parts.append(self.timing)
        if self.first is not None:
            parts.append("first" if self.first else "not-first")
        if self.last is not None:
            parts.append("last" if self.last else "not-last")
        if self.index is not None:
            parts.append(f"index={self.index}")
        if self.nonspec is not None:
            parts.append(f"nonspec={self.nonspec}")
        return "pane(" + " ".join(parts) + ")"


def pane(first=None, last=None, timing=None, index=None, nonspec=None) -> Pane:
    return Pane(first, last, timing, index, nonspec)


# The single pane of a batch GroupByKey, and the pane of elements no trigger produced.
ON_TIME_ONLY = Pane(True, True, "ON_TIME", 0, 0)
NO_FIRING = Pane(True, True, "UNKNOWN", 0, 0)


@dataclass(frozen=True)
class Record:
    """One element as a runner produced it, in one window."""

    value: Any
    timestamp_ms: int
    window: Window
    pane: Pane

    @property
    def timestamp(self) -> float:
        """Seconds, for predicates written the way Beam Python writes times."""
        return self.timestamp_ms / 1000.0

    def __repr__(self) -> str:
        return f"{self.value!r} @ {_fmt_ms(self.timestamp_ms)} in {self.window!r} {self.pane!r}"


@dataclass(frozen=True)
class Elem:
    """An expected element; fields left as ANY are not checked."""

    value: Any
    timestamp: Any = ANY
    window: Any = ANY
    pane: Any = ANY

    def __post_init__(self):
        # Catch authoring slips (a window passed as the timestamp) before the pipeline runs.
        if not isinstance(self.timestamp, (_Any, int, float)) and not hasattr(self.timestamp, "micros"):
            raise TypeError(f"el(): timestamp must be seconds or a Beam Timestamp, not {self.timestamp!r}")
        if not isinstance(self.window, (_Any, Window)):
            raise TypeError(f"el(): window must be W(start, end) or GLOBAL, not {self.window!r}")
        if not isinstance(self.pane, (_Any, Pane)):
            raise TypeError(f"el(): pane must be pane(...), ON_TIME_ONLY or NO_FIRING, not {self.pane!r}")

    def fields(self) -> tuple:
        out = ["value"]
        if not isinstance(self.timestamp, _Any):
            out.append("timestamp")
        if not isinstance(self.window, _Any):
            out.append("window")
        if not isinstance(self.pane, _Any):
            out.append(("pane",) + self.pane.checked_fields())
        return tuple(out)

    def key(self, fields) -> tuple:
        parts = []
        for f in fields:
            if f == "value":
                parts.append(canon(self.value))
            elif f == "timestamp":
                parts.append(to_ms(self.timestamp))
            elif f == "window":
                parts.append(self.window.key())
            else:
                parts.append(self.pane.project(f[1:]))
        return tuple(parts)

    def __repr__(self) -> str:
        text = repr(self.value)
        if not isinstance(self.timestamp, _Any):
            text += f" @ {_fmt_ms(to_ms(self.timestamp))}"
        if not isinstance(self.window, _Any):
            text += f" in {self.window!r}"
        if not isinstance(self.pane, _Any):
            text += f" {self.pane!r}"
        return text


def el(value, timestamp=ANY, window=ANY, pane=ANY) -> Elem:  # noqa: A002 - mirrors Beam names
    return Elem(value, timestamp, window, pane)


def record_key(record: Record, fields) -> tuple:
    parts = []
    for f in fields:
        if f == "value":
            parts.append(canon(record.value))
        elif f == "timestamp":
            parts.append(record.timestamp_ms)
        elif f == "window":
            parts.append(record.window.key())
        else:
            parts.append(record.pane.project(f[1:]))
    return tuple(parts)


# ---------------------------------------------------------------------------
# Expectations other than "exactly these elements".


@dataclass(frozen=True)
class OneOf:
    """Any of several outcomes is correct (e.g. pane contents that depend on bundling)."""

    alternatives: tuple


def one_of(*alternatives: Iterable) -> OneOf:
    return OneOf(tuple(tuple(a) for a in alternatives))


@dataclass(frozen=True)
class Satisfies:
    """A predicate over every produced Record; it returns False or raises AssertionError to fail."""

    predicate: Callable[[list], Any]
    description: str


def satisfies(predicate: Callable[[list], Any], description: str) -> Satisfies:
    return Satisfies(predicate, description)


# ---------------------------------------------------------------------------
# Comparison.


@dataclass
class Verdict:
    ok: bool
    text: str = ""
    missing: list = field(default_factory=list)
    unexpected: list = field(default_factory=list)
    # The only property in which produced and expected differ, when there is one (PANE_METADATA):
    # with it left unchecked, the output would match.
    only_in: str | None = None


def _as_elems(expected: Iterable) -> list[Elem]:
    return [e if isinstance(e, Elem) else Elem(e) for e in expected]


def compared_fields(elems: list[Elem]) -> tuple:
    """The fields one exact expectation compares; every element must give the same ones."""
    field_sets = {e.fields() for e in elems}
    if len(field_sets) > 1:
        by_fields: dict[tuple, Elem] = {}
        for e in elems:
            by_fields.setdefault(e.fields(), e)
        examples = "; ".join(f"{_field_names(f)}, e.g. {e!r}" for f, e in by_fields.items())
        raise MalformedExpectation(
            "every expected element of one check must give the same fields (value, timestamp, window, "
            f"pane and the same pane fields), so that each produced element is compared alike; this "
            f"expectation mixes: {examples}"
        )
    return field_sets.pop() if field_sets else ("value",)


def _field_names(fields: tuple) -> str:
    return "+".join(f if isinstance(f, str) else "pane(" + ",".join(f[1:]) + ")" for f in fields)


def validate(expected: Any) -> None:
    """Refuse, as the case's own error, an expectation no output could be compared with: called
    when the check is built, before any runner runs the pipeline."""
    if isinstance(expected, Satisfies):
        if not callable(expected.predicate):
            raise MalformedExpectation(f"satisfies(): the predicate must be callable, not {expected.predicate!r}")
        return
    if isinstance(expected, OneOf):
        if not expected.alternatives:
            raise MalformedExpectation("one_of() needs at least one allowed outcome")
        for alternative in expected.alternatives:
            compared_fields(_as_elems(alternative))
        return
    if isinstance(expected, (str, bytes, dict)) or not isinstance(expected, Iterable):
        raise MalformedExpectation(
            f"a check's expectation is a list of elements, one_of(...) or satisfies(...), not {expected!r}"
        )
    compared_fields(_as_elems(expected))


def compare_exact(expected: Iterable, actual: list[Record]) -> Verdict:
    elems = _as_elems(expected)
    fields = compared_fields(elems)
    want = collections.Counter(e.key(fields) for e in elems)
    got = collections.Counter(record_key(r, fields) for r in actual)
    if want == got:
        return Verdict(True, f"{len(actual)} element(s) as expected")
    missing_keys = want - got
    unexpected_keys = got - want
    missing = [e for e in elems if _take(missing_keys, e.key(fields))]
    unexpected = [r for r in actual if _take(unexpected_keys, record_key(r, fields))]
    text = _diff_text(fields, missing, unexpected, len(elems), actual)
    without_pane = tuple(f for f in fields if isinstance(f, str))
    if without_pane != fields and _counts(elems, without_pane) == _counts(actual, without_pane):
        differing = _differing_pane_fields(missing, unexpected, without_pane)
        text += f"\n  only the pane metadata differs ({', '.join(differing)}); values, timestamps and windows match"
        return Verdict(False, text, missing, unexpected, only_in=PANE_METADATA)
    return Verdict(False, text, missing, unexpected)


def _counts(items, fields) -> collections.Counter:
    return collections.Counter(e.key(fields) if isinstance(e, Elem) else record_key(e, fields) for e in items)


def _differing_pane_fields(missing: list, unexpected: list, fields) -> list[str]:
    """Which pane fields differ between expected and produced elements that otherwise match."""
    produced: dict[tuple, list] = collections.defaultdict(list)
    for r in unexpected:
        produced[record_key(r, fields)].append(r.pane)
    differing: set[str] = set()
    for e in missing:
        for pane in produced.get(e.key(fields), []):
            differing.update(f for f in e.pane.checked_fields() if getattr(e.pane, f) != getattr(pane, f))
    order = ("first", "last", "timing", "index", "nonspec")
    return [f for f in order if f in differing] or ["pane"]


def _take(counter: collections.Counter, key) -> bool:
    if counter[key] > 0:
        counter[key] -= 1
        return True
    return False


def compare(expected: Any, actual: list[Record]) -> Verdict:
    """Compare produced Records with an expectation (a list, OneOf or Satisfies)."""
    if isinstance(expected, Satisfies):
        try:
            result = expected.predicate(list(actual))
        except AssertionError as e:
            return Verdict(False, f"predicate failed: {expected.description}: {e}\n" + _listing("produced", actual))
        if result is False:
            return Verdict(False, f"predicate failed: {expected.description}\n" + _listing("produced", actual))
        return Verdict(True, expected.description)
    if isinstance(expected, OneOf):
        verdicts = [compare_exact(alt, actual) for alt in expected.alternatives]
        if any(v.ok for v in verdicts):
            return Verdict(True, "matched one of the allowed outcomes")
        # an outcome that differs only in pane metadata is the closest there is
        best = min(verdicts, key=lambda v: (v.only_in is None, len(v.missing) + len(v.unexpected)))
        return Verdict(
            False, f"none of {len(verdicts)} allowed outcomes matched; closest:\n" + best.text, only_in=best.only_in
        )
    return compare_exact(expected, actual)


# ---------------------------------------------------------------------------
# Text.


def _fmt_ms(ms: int | None) -> str:
    if ms is None:
        return "?"
    if ms == END_OF_GLOBAL_WINDOW_MS:
        return "END_OF_GLOBAL_WINDOW"
    if ms <= MIN_TIMESTAMP_MS:
        return "MIN_TIMESTAMP"
    if ms >= MAX_TIMESTAMP_MS:
        return "MAX_TIMESTAMP"
    return f"{ms / 1000:g}s"


def _listing(title: str, items: Sequence, limit: int = 50) -> str:
    lines = [f"  {title} ({len(items)}):"]
    lines += [f"    {item!r}" for item in list(items)[:limit]]
    if len(items) > limit:
        lines.append(f"    ... and {len(items) - limit} more")
    return "\n".join(lines)


def _diff_text(fields, missing, unexpected, n_expected, actual) -> str:
    checked = ", ".join(f if isinstance(f, str) else "pane" for f in fields)
    head = (
        f"expected {n_expected} element(s), runner produced {len(actual)}; "
        f"{len(missing)} missing, {len(unexpected)} unexpected (checked: {checked})"
    )
    parts = [head]
    if missing:
        parts.append(_listing("missing (expected, not produced)", missing))
    if unexpected:
        parts.append(_listing("unexpected (produced, not expected)", unexpected))
    return "\n".join(parts)
