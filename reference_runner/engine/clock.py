"""The processing-time clock the ElementManager reads (micros).

VirtualClock (the default): time moves only when the runner moves it, and when nothing else
can progress it jumps straight to the next processing-time timer, trigger deadline or
TestStream step, so a run does not depend on how fast the machine is.
WallClock: processing time is real time; the runner waits for it instead of jumping.
"""

from __future__ import annotations

import threading
import time

VIRTUAL, WALL = "virtual", "wall"

#: When this process started, on the wall clock (micros since the epoch).
_WALL_STARTED = time.time_ns() // 1000


def from_harness(t: int, now: int) -> int:
    """The processing time an SDK set a timer for -> the runner's processing time, ``now`` being
    the runner's processing time as the timer arrives.

    The Fn API tells an SDK harness no processing time, so it reads its own wall clock: Java's
    Timer.setRelative sets its wall clock's now + the offset ("This should use an injected clock
    when using TestStream", FnApiDoFnRunner), Python's users Timestamp.now() + a delay. On a
    virtual clock (far behind the wall clock) such a time - one not before this process started -
    is taken for what it means, a distance from now: it fires that long after the virtual now
    (as Prism rebases them). Earlier times (Python's absolute processing times, on a TestStream's
    clock that starts at 0) are the runner's own, and on a wall clock every time is kept."""
    if t < _WALL_STARTED or now >= _WALL_STARTED:
        return t
    return now + t - time.time_ns() // 1000


class VirtualClock:
    ticks = False  # time never passes on its own

    def __init__(self, start: int = 0):
        self._now = start

    def now(self) -> int:
        return self._now

    def advance_to(self, t: int) -> None:
        self._now = max(self._now, t)

    def interrupt(self) -> None:
        pass


class WallClock:
    """Real time (micros since the epoch, as Beam's processing time). ``advance_to`` waits for
    it; ``interrupt`` (cancel, drain) ends every wait for good: from then on the clock jumps,
    so that a draining job finishes its remaining processing-time work without waiting."""

    ticks = True  # time passes while bundles run: the manager looks again before each bundle

    def __init__(self):
        self._woken = threading.Event()
        self._ahead = 0  # where jumps made after an interrupt have taken the clock

    def now(self) -> int:
        return max(time.time_ns() // 1000, self._ahead)

    def advance_to(self, t: int) -> None:
        while not self._woken.is_set():
            left = t - self.now()
            if left <= 0:
                return
            self._woken.wait(left / 1e6)
        self._ahead = max(self._ahead, t)

    def interrupt(self) -> None:
        self._woken.set()


def make(kind: str):
    if kind == VIRTUAL:
        return VirtualClock()
    if kind == WALL:
        return WallClock()
    raise ValueError(f"clock must be {VIRTUAL!r} or {WALL!r}, not {kind!r}")


__all__ = ["VIRTUAL", "WALL", "VirtualClock", "WallClock", "make"]
