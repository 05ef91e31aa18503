"""Pending event-time timers of one keyed stage, and the order they fire in.

A timer is identified by (transform, family, encoded key, dynamic tag, encoded window):
setting it again replaces the pending one, clearing removes it. The engine never decodes
a timer; it keeps the encoded form the SDK sent and hands it back when the timer fires.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass


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
    fire: int = 0          # event time it fires at (micros)
    hold: int = 0          # output timestamp: holds the stage's output watermark until it fires
    encoded: bytes = b""   # the timer as the SDK encodes it, sent back when it fires


@dataclass(frozen=True)
class Timer:
    id: TimerId
    fire: int
    hold: int
    encoded: bytes
    seq: int               # equal fire times fire in the order they were set


class TimerStore:
    def __init__(self):
        self._pending: dict[TimerId, Timer] = {}
        self._seq = itertools.count()

    def __len__(self) -> int:
        return len(self._pending)

    def apply(self, updates) -> None:
        """A committed bundle's timer changes, in the order the bundle made them."""
        for u in updates:
            if u.clear:
                self._pending.pop(u.id, None)
            else:
                self._pending[u.id] = Timer(u.id, u.fire, u.hold, u.encoded, next(self._seq))

    def add_if_absent(self, update: TimerUpdate) -> None:
        if update.id not in self._pending:
            self.apply([update])

    def has_due(self, watermark: int) -> bool:
        return any(t.fire < watermark for t in self._pending.values())

    def take_due(self, watermark: int) -> list[Timer]:
        """Remove and return the earliest due timer of every key.

        One timer per key at a time: its callback may set or clear other timers of the key
        (even earlier ones), so the next one is chosen only after its bundle commits."""
        earliest: dict[tuple[str, bytes], Timer] = {}
        for t in self._pending.values():
            if t.fire >= watermark:
                continue
            k = (t.id.transform, t.id.key)
            best = earliest.get(k)
            if best is None or (t.fire, t.seq) < (best.fire, best.seq):
                earliest[k] = t
        taken = sorted(earliest.values(), key=lambda t: (t.fire, t.seq))
        for t in taken:
            del self._pending[t.id]
        return taken

    def restore(self, timers) -> None:
        """Timers of a failed bundle are pending again (unless something replaced them)."""
        for t in timers:
            self._pending.setdefault(t.id, t)

    def hold(self, default: int) -> int:
        """The earliest output timestamp of a pending timer."""
        return min((t.hold for t in self._pending.values()), default=default)
