"""Stages headed by a stateful ParDo: timers, time-sorted input, window expiry.

Each element entering such a stage is decoded once (KeyedSpec.key_of, supplied by the
executor) into a KeyedElement, which carries its key, timestamp and windows (with their
expiry) to where they are needed: the time-sorted buffer, dropping expired input and arming
OnWindowExpiration when its bundle commits. Elements are decoded only in a stage that needs
one of these; elsewhere the stage queues them as they are.

The stage runs at most one bundle at a time, elements first, then the due timers (the
earliest per key, again and again, since a callback may set earlier ones). A pending timer
holds the stage's output watermark at its output timestamp; a due one keeps the stage busy.
In streaming, once the watermark passes a window's expiry, the window's state is to be dropped
(reported through the manager's take_expired) and its processing-time timers never fire.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import NamedTuple

from reference_runner.engine.spec import Bundle, KeyedSpec, StageSpec
from reference_runner.engine.stages import SdkStage
from reference_runner.engine.timers import TimerId, TimerStore, TimerUpdate
from reference_runner.engine.windows import MIN_TIMESTAMP, PLUS_INFINITY


class KeyedElement(NamedTuple):
    """An encoded element with the facts a keyed stage needs of it."""

    element: bytes
    key: bytes
    timestamp: int
    windows: list[tuple[bytes, int]]  # (encoded window, its expiry time)


def decode(spec: KeyedSpec, elements: Iterable[bytes]) -> list[KeyedElement]:
    key_of = spec.key_of
    if key_of is None:
        raise ValueError(f"stateful transform {spec.transform}: the engine needs key_of to read its input")
    return [KeyedElement(e, *key_of(e)) for e in elements]


def arm_expiry(spec: KeyedSpec, store: TimerStore, elements: Iterable[KeyedElement]) -> None:
    """OnWindowExpiration: one runner timer per key and window the elements reached, set unless
    one is already pending; it fires at the window's expiry."""
    family, encode = spec.expiry_family, spec.expiry_timer
    if family is None or encode is None:
        raise ValueError(f"stateful transform {spec.transform} has no OnWindowExpiration timer family")
    for e in elements:
        for window, expiry in e.windows:
            tid = TimerId(spec.transform, family, e.key, "", window, expiry=True)
            store.add_if_absent(TimerUpdate(tid, False, expiry, expiry, encode(e.key, window, expiry)))


class KeyedSdkStage(SdkStage):
    def __init__(self, spec: StageSpec, keyed: KeyedSpec, test_stream_driven: bool, expired: list[tuple[str, bytes]]):
        """``expired``: where to report (transform, encoded window) whose state is to be dropped."""
        super().__init__(spec, test_stream_driven)
        self.keyed = keyed
        self.timers = TimerStore()
        self._decoding = test_stream_driven or keyed.time_sorted or keyed.expiry_family is not None
        #: streaming: encoded window -> expiry, for the windows the input reached
        self.windows_seen: dict[bytes, int] | None = {} if test_stream_driven else None
        self._expired = expired
        #: time-sorted input: (timestamp, arrival, item) waiting for the watermark to pass timestamp
        #: + allowed lateness
        self.unsorted: list[tuple[int, int, KeyedElement]] | None = [] if keyed.time_sorted else None
        self._arrivals = itertools.count()
        self._running: list = []  # the items of the bundle in flight (there is at most one)

    # -- items -------------------------------------------------------------------------------
    def _admit(self, elements: list) -> list:
        return decode(self.keyed, elements) if self._decoding else elements

    def _elements(self, items: list) -> list:
        return [i.element for i in items] if self._decoding else items

    def _readmit(self, residuals: list) -> list:
        if not self._decoding:
            return list(residuals)
        # Inputs the bundle left unread come back as the very objects it was given.
        known = {id(i.element): i for i in self._running}
        return [known.get(id(e)) or decode(self.keyed, [e])[0] for e in residuals]

    # -- input -------------------------------------------------------------------------------
    def accept(self, pcollection: str, elements: list, now: int) -> list:
        items = self._admit(elements)
        if self.windows_seen is not None:
            items = self._drop_expired(items)
        if self.unsorted is not None:
            # Time-sorted input later than the allowed lateness can no longer be put in order: it
            # is dropped (DoFn.RequiresTimeSortedInput's contract).
            lateness, watermark = self.keyed.allowed_lateness, self.input_watermark
            self.unsorted.extend(
                (i.timestamp, next(self._arrivals), i) for i in items if i.timestamp + lateness >= watermark
            )
        else:
            self._enqueue(items)
        return []

    def _drop_expired(self, items: list[KeyedElement]) -> list[KeyedElement]:
        """Streaming: drop what arrives for windows whose expiry the watermark has passed (their
        state is gone; Beam drops such droppable data), note the windows of the rest.

        Lateness is judged per window: an element in several windows is one element per window,
        so its copies in expired windows are dropped and it goes on in its live ones (as Beam's
        StatefulDoFnRunner judges each window of an element on its own)."""
        seen, watermark = self.windows_seen, self.input_watermark
        assert seen is not None
        kept = []
        for i in items:
            live = [w for w in i.windows if w[1] >= watermark]
            if len(live) < len(i.windows):
                if not live:
                    continue
                i = i._replace(element=self._in_windows(i.element, [w for w, _ in live]), windows=live)
            seen.update(live)
            kept.append(i)
        return kept

    def _in_windows(self, element: bytes, windows: list[bytes]) -> bytes:
        in_windows = self.keyed.in_windows
        if in_windows is None:
            raise ValueError(
                f"stateful transform {self.keyed.transform}: the engine needs in_windows to drop expired windows"
            )
        return in_windows(element, windows)

    # -- bundles -----------------------------------------------------------------------------
    def busy(self) -> bool:
        return self.in_flight > 0  # its state writes and timers commit first

    def take(self, policy, now: int) -> tuple[list, list] | None:
        if self.in_flight:
            return None
        if not self.pending:
            due = self.timers.take_due(self.input_watermark, now)
            return ([], due) if due else None
        return super().take(policy, now)

    def start(self, items: list) -> list:
        self._running = items
        return super().start(items)

    def commit(self, bundle: Bundle, residuals: list, timers: list, deferred: list, draining: bool, now: int) -> None:
        # A bundle that only fired timers cannot set processing-time timers in expired windows.
        self.timers.apply(timers, None if bundle.inputs else self.input_watermark, now)
        if self.keyed.expiry_family is not None:
            arm_expiry(self.keyed, self.timers, self._running)
        super().commit(bundle, residuals, timers, deferred, draining, now)
        self._running = []

    # -- watermarks --------------------------------------------------------------------------
    def _hold(self, now: int) -> int:
        unsorted = self.unsorted
        if unsorted:
            # Release, in timestamp order, the elements whose timestamp + allowed lateness the
            # watermark has passed: until then, data late by no more than the allowed lateness may
            # still arrive before them (DoFn.RequiresTimeSortedInput).
            released_before = self.input_watermark - self.keyed.allowed_lateness
            ready = sorted(u for u in unsorted if u[0] < released_before)
            self._enqueue([i for _, _, i in ready])
            unsorted[:] = [u for u in unsorted if u[0] >= released_before]
        if self._has_work():
            return MIN_TIMESTAMP
        hold = self._deferred_hold()
        if unsorted:
            hold = min(hold, min(u[0] for u in unsorted))
        if self.timers.has_due(self.input_watermark, now):
            return MIN_TIMESTAMP
        self._expire()
        return min(hold, self.timers.hold(PLUS_INFINITY))

    def _expire(self) -> None:
        """Idle (every due timer fired, OnWindowExpiration included): drop what belongs to the
        windows the watermark has passed the expiry of."""
        seen, watermark = self.windows_seen, self.input_watermark
        if not seen:
            return
        gone = {w for w, expiry in seen.items() if expiry < watermark}
        if gone:
            for w in sorted(gone):
                del seen[w]
                self._expired.append((self.keyed.transform, w))
            self.timers.drop_processing(gone)

    def deadlines(self) -> list[int | None]:
        return [self.timers.next_processing_time(), *super().deadlines()]

    def counts(self) -> tuple[int, int, int, int, int]:
        pending, deferred, in_flight, to_truncate, _ = super().counts()
        return pending, deferred, in_flight, to_truncate, len(self.timers)
