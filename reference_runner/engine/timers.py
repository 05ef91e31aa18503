"""Pending timers of one keyed stage, and the order they fire in.

Event-time timers come due when the input watermark passes them, processing-time timers when
the runner's processing-time clock reaches them.

A timer is identified by (transform, family, encoded key, dynamic tag, encoded window):
setting it again replaces the pending one, clearing removes it. The engine never decodes
a timer; it keeps the encoded form the SDK sent and hands it back when the timer fires.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass

from reference_runner.engine import clock

_NEVER = -(2**63)  # a processing time no timer is due at


@dataclass(frozen=True)
class TimerId:
    transform: str
    family: str
    key: bytes
    tag: str
    window: bytes
    # The runner's own OnWindowExpiration timer: kept apart from user timers of the same family.
    expiry: bool = False


@dataclass(frozen=True)
class TimerUpdate:
    """A timer set (or, with clear, cancelled) by a bundle."""

    id: TimerId
    clear: bool
    fire: int = 0  # event time it fires at (micros)
    hold: int = 0  # output timestamp: holds the stage's output watermark until it fires
    encoded: bytes = b""  # the timer as the SDK encodes it, sent back when it fires
    processing: bool = False  # a processing-time timer (fire is a processing time)
    expiry: int | None = None  # when its window expires (max timestamp + allowed lateness)


@dataclass(frozen=True)
class Timer:
    id: TimerId
    fire: int
    hold: int
    encoded: bytes
    seq: int  # equal fire times fire in the order they were set
    processing: bool = False

    def due(self, watermark: int, now: int) -> bool:
        return self.fire <= now if self.processing else self.fire < watermark


class TimerStore:
    def __init__(self):
        self._pending: dict[TimerId, Timer] = {}
        self._seq = itertools.count()

    def __len__(self) -> int:
        return len(self._pending)

    def apply(self, updates, watermark: int | None = None, now: int | None = None) -> None:
        """A committed bundle's timer changes, in the order the bundle made them.

        ``watermark``: the stage's input watermark, given for a bundle that only fired timers.
        Such a callback cannot set a processing-time timer in a window the watermark has passed
        the expiry of: the window is gone, and a timer re-arming itself there forever would keep
        a bounded pipeline from ever finishing (its processing time is virtual).
        ``now``: the runner's processing time, to read the SDK's processing times against
        (clock.from_harness)."""
        for u in updates:
            if watermark is not None and u.processing and not u.clear and u.expiry is not None and u.expiry < watermark:
                continue
            if u.processing and not u.clear and now is not None:
                u = dataclasses.replace(u, fire=clock.from_harness(u.fire, now))
            if u.clear:
                self._pending.pop(u.id, None)
            else:
                self._pending[u.id] = Timer(u.id, u.fire, u.hold, u.encoded, next(self._seq), u.processing)

    def add_if_absent(self, update: TimerUpdate) -> None:
        if update.id not in self._pending:
            self.apply([update])

    def take_next(self, watermark: int, now: int) -> tuple[list[Timer], int]:
        """Like take_due, but with nothing else left to do: when no timer is due, processing time
        jumps to the next processing-time timer. Returns (timers, processing time then)."""
        due = self.take_due(watermark, now)
        if not due:
            upcoming = self.next_processing_time()
            if upcoming is not None and upcoming > now:
                now = upcoming
                due = self.take_due(watermark, now)
        return due, now

    def has_due(self, watermark: int, now: int = _NEVER) -> bool:
        return any(t.due(watermark, now) for t in self._pending.values())

    def next_processing_time(self) -> int | None:
        """When the earliest pending processing-time timer fires."""
        return min((t.fire for t in self._pending.values() if t.processing), default=None)

    def take_due(self, watermark: int, now: int = _NEVER) -> list[Timer]:
        """Remove and return the earliest due timer of every key.

        One timer per key at a time: its callback may set or clear other timers of the key
        (even earlier ones), so the next one is chosen only after its bundle commits. Due
        event-time timers go before due processing-time ones."""
        earliest: dict[tuple[str, bytes], Timer] = {}
        for t in self._pending.values():
            if not t.due(watermark, now):
                continue
            k = (t.id.transform, t.id.key)
            best = earliest.get(k)
            if best is None or _order(t) < _order(best):
                earliest[k] = t
        taken = sorted(earliest.values(), key=_order)
        for t in taken:
            del self._pending[t.id]
        return taken

    def drop_processing(self, windows: set) -> None:
        """Processing-time timers of expired windows never fire (their state is gone)."""
        for tid in [tid for tid, t in self._pending.items() if t.processing and tid.window in windows]:
            del self._pending[tid]

    def hold(self, default: int) -> int:
        """The earliest output timestamp of a pending timer."""
        return min((t.hold for t in self._pending.values()), default=default)


def _order(t: Timer) -> tuple:
    return (t.processing, t.fire, t.seq)
