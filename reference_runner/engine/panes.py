"""A triggered GroupByKey: panes per key and window, as the watermark, the processing-time
clock and the elements arrive (conformance/SEMANTICS.md, sections 4 and 5).

Each element is handled on its own, in arrival order (so panes do not depend on how the
runner bundled the input): dropped if its window is past garbage collection (max timestamp +
allowed lateness < input watermark) or closed (its trigger finished), else added to its window
(merged first, for sessions) and the trigger evaluated. A window is evaluated again when the
watermark passes its end and when a processing-time deadline of its trigger comes due. When
the watermark passes its garbage-collection time, a window still open emits its final pane.
A pane with nothing new since the previous one is emitted only if it is the on-time pane and
the windowing strategy's OnTimeBehavior is FIRE_ALWAYS, or the final pane and its
ClosingBehavior is EMIT_ALWAYS (the Python SDK declares both; Java's default closing behavior
and the Go SDK's strategies ask for non-empty panes only). An on-time firing left out for
being empty still ends the window's on-time phase: panes after it are LATE, as in Java's
PaneInfoTracker, where the output watermark has passed the window by then.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from reference_runner.engine import triggers
from reference_runner.engine.grouping import Grouping, Pane, _window_order
from reference_runner.engine.windows import EARLIEST, LATEST, MAX_TIMESTAMP, combine_timestamps, merge_windows


@dataclass
class _Window:
    key: Any
    window: Any
    state: triggers.Node
    born_late: bool  # created after the watermark passed its end: no ON_TIME pane
    values: list = field(default_factory=list)  # the next pane's values (all so far if accumulating)
    holds: list = field(default_factory=list)  # output-time holds of elements since the last pane
    # timestamps of the elements since the last pane that could hold the watermark: the pane's
    # output time combines these alone (none: the window's end), SEMANTICS 4
    stamps: list = field(default_factory=list)
    new: int = 0  # elements since the last pane
    panes: int = 0  # panes emitted
    nonspeculative: int = 0  # non-early panes emitted
    on_time_done: bool = False  # a non-early firing happened (its pane emitted, or left out empty)
    end_seen: bool = False  # the watermark passed the window's end (evaluated once then)
    closed: bool = False  # the trigger finished: kept until GC only to drop late data


class TriggeredBuffer:
    """The windows of one triggered GroupByKey. Every method returns the panes it fired."""

    def __init__(self, grouping: Grouping):
        self.grouping = grouping
        self.trigger: triggers.Trigger = grouping.trigger
        self._by_key: dict[bytes, dict[Any, _Window]] = {}
        self._watermark_seen: int | None = None  # on_watermark has nothing new to do at it ...
        self._created = False  # ... unless windows were created since
        self.dropped = 0  # elements dropped as late or for a closed window

    def __len__(self) -> int:
        return sum(1 for ws in self._by_key.values() for w in ws.values() if not w.closed)

    def idle(self) -> bool:
        return not any(self._by_key.values())

    # -- events ------------------------------------------------------------------------------
    def add(self, elements, watermark: int, now: int) -> list:
        out = []
        split = self.grouping.codec.split
        for element in elements:
            key_bytes, key, value, timestamp, windows = split(element)
            for w in windows:
                if self._gc_time(w) < watermark:
                    self.dropped += 1
                    continue
                win = self._window_for(key_bytes, key, w, watermark, now)
                if win is None or win.closed:
                    self.dropped += 1
                    continue
                win.values.append(value)
                stamp = self._stamp(timestamp, watermark)
                win.holds.append(win.window.max_timestamp if stamp is None else stamp)
                if stamp is not None:
                    win.stamps.append(stamp)
                win.new += 1
                ctx = self._ctx(win, watermark, now)
                self.trigger.on_element(win.state, ctx)
                out += self._evaluate(key_bytes, win, ctx)
        return out

    def on_watermark(self, watermark: int, now: int) -> list:
        """The end-of-window and garbage-collection firings the watermark reached."""
        if watermark == self._watermark_seen and not self._created:
            return []
        self._watermark_seen, self._created = watermark, False
        out = []
        for key_bytes in sorted(self._by_key):
            per_window = self._by_key[key_bytes]
            for w in sorted(per_window, key=_window_order):
                win = per_window[w]
                if self._gc_time(w) < watermark:
                    if not win.closed:
                        out += self._emit(key_bytes, win, self._ctx(win, watermark, now), final=True)
                    del per_window[w]
                elif not win.end_seen and w.max_timestamp < watermark:
                    win.end_seen = True
                    if not win.closed:
                        out += self._evaluate(key_bytes, win, self._ctx(win, watermark, now))
            if not per_window:
                del self._by_key[key_bytes]
        return out

    def on_processing_time(self, watermark: int, now: int) -> list:
        """Evaluate the windows whose trigger waits for a processing time the clock has reached."""
        out = []
        for key_bytes in sorted(self._by_key):
            per_window = self._by_key[key_bytes]
            for w in sorted(per_window, key=_window_order):
                win = per_window[w]
                deadline = None if win.closed else self.trigger.deadline(win.state)
                if deadline is not None and deadline <= now:
                    out += self._evaluate(key_bytes, win, self._ctx(win, watermark, now))
        return out

    def next_deadline(self) -> int | None:
        """The earliest processing time some open window waits for."""
        deadlines = [
            self.trigger.deadline(win.state) for ws in self._by_key.values() for win in ws.values() if not win.closed
        ]
        return min((d for d in deadlines if d is not None), default=None)

    def hold(self, watermark: int, default: int) -> int:
        """The output watermark hold: pending element holds, and the end of every open window
        the watermark has not passed (its on-time pane is still to come)."""
        hold = default
        for ws in self._by_key.values():
            for win in ws.values():
                if win.closed:
                    continue
                if win.holds:
                    hold = min(hold, min(win.holds))
                if win.window.max_timestamp >= watermark:
                    hold = min(hold, win.window.max_timestamp)
        return hold

    # -- windows -----------------------------------------------------------------------------
    def _window_for(self, key_bytes: bytes, key, w, watermark: int, now: int) -> _Window | None:
        per_window = self._by_key.setdefault(key_bytes, {})
        win = per_window.get(w)
        if win is None:
            win = per_window[w] = _Window(key, w, self.trigger.new(), born_late=w.max_timestamp < watermark)
            self._created = True
            if self.grouping.merging:
                return self._merge(per_window, w, watermark, now)
        return win

    def _merge(self, per_window: dict, added, watermark: int, now: int) -> _Window | None:
        """Merge the key's open windows (a new one was added); return the one ``added`` went into."""
        live = [w for w, win in per_window.items() if not win.closed]
        groups = merge_windows(live, self.grouping.merge_fn)
        for target, parts in groups.items():
            if parts == [target]:
                continue
            wins = [per_window.pop(w) for w in parts]
            # A window merged into one of its parts keeps that part's panes; a new window starts
            # its own (pane state is not carried across a merge, as in Beam's trigger drivers).
            keep = next((win for win in wins if win.window == target), None)
            merged = _Window(
                wins[0].key,
                target,
                self.trigger.merge([win.state for win in wins]),
                born_late=all(win.born_late for win in wins),
            )
            if keep is not None:
                for name in ("panes", "nonspeculative", "on_time_done", "end_seen", "born_late"):
                    setattr(merged, name, getattr(keep, name))
            for win in wins:
                merged.values += win.values
                merged.holds += win.holds
                merged.stamps += win.stamps
                merged.new += win.new
            per_window[target] = merged
        return per_window.get(next((t for t, parts in groups.items() if added in parts), added))

    def _gc_time(self, w) -> int:
        return min(w.max_timestamp + self.grouping.allowed_lateness, MAX_TIMESTAMP)

    def _stamp(self, timestamp: int, watermark: int) -> int | None:
        """The element's own hold under EARLIEST or LATEST; None for an element behind the
        watermark, which cannot hold it (it holds at the end of the window) and leaves its pane's
        output time to the others: Java's WatermarkHold takes the earlier of the element holds and
        the end-of-window hold, Python's trigger driver adds no hold for it."""
        if self.grouping.timestamp_combiner in (EARLIEST, LATEST) and timestamp >= watermark:
            return timestamp
        return None

    @staticmethod
    def _ctx(win: _Window, watermark: int, now: int) -> triggers.Context:
        return triggers.Context(watermark, now, win.window.max_timestamp)

    # -- firing ------------------------------------------------------------------------------
    def _evaluate(self, key_bytes: bytes, win: _Window, ctx: triggers.Context) -> list:
        if win.closed or not self.trigger.should_fire(win.state, ctx):
            return []
        self.trigger.on_fire(win.state, ctx)
        return self._emit(key_bytes, win, ctx, final=win.state.finished)

    def _emit(self, key_bytes: bytes, win: _Window, ctx: triggers.Context, final: bool) -> list:
        if win.born_late or win.on_time_done:
            timing = "LATE"
        elif not ctx.past_end:
            timing = "EARLY"
        else:
            timing = "ON_TIME"
        out = []
        grouping = self.grouping
        if win.new or (final and grouping.empty_final) or (timing == "ON_TIME" and grouping.empty_on_time):
            nonspec = -1 if timing == "EARLY" else win.nonspeculative
            pane = Pane(win.panes == 0, final, timing, win.panes, nonspec)
            # Holds of elements since the last pane: none left, the pane is at the window's end.
            timestamp = combine_timestamps(grouping.timestamp_combiner, win.stamps, win.window)
            out.append(grouping.codec.build(win.key, list(win.values), timestamp, win.window, pane))
            win.panes += 1
            if timing != "EARLY":
                win.nonspeculative += 1
        if timing != "EARLY":
            win.on_time_done = True
        if not self.grouping.accumulating:
            win.values = []
        win.holds, win.stamps, win.new = [], [], 0
        if final:
            win.closed = True
            win.values = []
        return out
