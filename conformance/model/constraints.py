"""What every allowed output of a triggered GroupByKey meets where the runner chose how to bundle
(SEMANTICS 5): the model does not pick one runner's panes, it states the properties every correct
set of panes has, and names the one broken.

``check_window`` judges the panes a runner emitted for one key and non-merging window;
``check_sessions`` those of one key under a merging WindowFn. A pane is ``(values, timestamp,
Pane)`` with its values sorted; what the model knows of the window is a streaming.WindowFacts.
"""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple

from conformance.model.batch import END_OF_WINDOW
from conformance.model.streaming import Strategy, WindowFacts
from conformance.model.triggers import AfterCount, AfterWatermark, Repeatedly


class Broken(NamedTuple):
    rule: str  # the property broken: part of a deviation's signature
    detail: str


def _threshold(trigger, timing: str) -> int | None:
    """The count a pane of this timing must add, when a count trigger is what fires it."""
    if isinstance(trigger, AfterWatermark):
        part = trigger.early if timing == "EARLY" else trigger.late if timing == "LATE" else None
        return part.count if isinstance(part, AfterCount) else None
    if isinstance(trigger, Repeatedly) and isinstance(trigger.child, AfterCount):
        return trigger.child.count
    return None


def check_window(facts: WindowFacts, strategy: Strategy, panes: list) -> list[Broken]:
    broken: list[Broken] = []
    panes = sorted(panes, key=lambda p: p[2].index)
    indices = [p[2].index for p in panes]
    if indices != list(range(len(panes))):
        broken.append(Broken("pane indices", f"indices {indices}: each firing of a window takes the next one from 0"))
    for _, _, pane in panes:
        if pane.first != (pane.index == 0):
            broken.append(Broken("pane is_first", f"pane {pane.index} has is_first={pane.first}"))
    order = {"EARLY": 0, "ON_TIME": 1, "LATE": 2}
    timings = [p[2].timing for p in panes]
    ranks = [order.get(t, 9) for t in timings]
    if ranks != sorted(ranks) or timings.count("ON_TIME") > 1 or 9 in ranks:
        broken.append(Broken("pane timing order", f"timings {timings}: EARLY*, at most one ON_TIME, then LATE*"))
    nonspec = [p[2].nonspec for p in panes if p[2].timing != "EARLY"]
    if nonspec != list(range(len(nonspec))) or any(p[2].nonspec != -1 for p in panes if p[2].timing == "EARLY"):
        broken.append(Broken("pane nonspeculative index", f"nonspeculative indices {[p[2].nonspec for p in panes]}"))
    lasts = [p[2].index for p in panes if p[2].last]
    if panes and lasts != [panes[-1][2].index]:
        broken.append(Broken("final pane", f"is_last on panes {lasts} of {len(panes)}: exactly the last one is final"))
    if strategy.timestamp_combiner == END_OF_WINDOW:
        wrong = [p[1] for p in panes if p[1] != facts.window.max_timestamp]
        if wrong:
            broken.append(Broken("pane timestamp", f"timestamps {wrong}, not the window's max timestamp"))
    contents = [Counter(p[0]) for p in panes]
    possible = facts.kept + facts.after_finish  # what some bundling lets reach the window
    dropped = [v for c in contents for v in c if v in facts.dropped and v not in possible]
    if dropped:
        broken.append(Broken("dropped data emitted", f"values {sorted(dropped)} were behind the lateness horizon"))
    new_counts = []
    if strategy.accumulating:
        for i in range(1, len(contents)):
            if contents[i - 1] - contents[i]:
                broken.append(
                    Broken(
                        "accumulating panes nest",
                        f"pane {i} lacks {sorted((contents[i - 1] - contents[i]).elements())} of pane {i - 1}",
                    )
                )
                break
        extra = [sorted((c - possible).elements()) for c in contents if c - possible]
        if extra:
            broken.append(Broken("contents within the window's data", f"values {extra[0]} never reached the window"))
        previous: Counter = Counter()
        for c in contents:
            new_counts.append(sum((c - previous).values()))
            previous = c
        everything = contents[-1] if contents else Counter()
    else:
        everything = sum(contents, Counter())
        if everything - possible:
            broken.append(
                Broken(
                    "discarding panes are disjoint",
                    f"values {sorted((everything - possible).elements())} more often than they arrived",
                )
            )
        new_counts = [sum(c.values()) for c in contents]
    if not strategy.trigger.can_finish and everything != facts.kept:
        missing = sorted((facts.kept - everything).elements())
        if missing:
            broken.append(
                Broken("nothing within the lateness is lost", f"values {missing} arrived in time and never fired")
            )
    early = Counter()
    for c, (_, _, pane) in zip(contents, panes, strict=True):
        if pane.timing == "EARLY":
            early = c if strategy.accumulating else early + c
    if early - facts.on_time:
        broken.append(
            Broken("early panes hold on-time data", f"values {sorted((early - facts.on_time).elements())} arrived late")
        )
    if strategy.trigger.fires_on_time and facts.on_time and not facts.after_finish:
        on_time = [c for c, p in zip(contents, panes, strict=True) if p[2].timing == "ON_TIME"]
        if len(on_time) != 1:
            broken.append(Broken("one ON_TIME pane", f"{len(on_time)} ON_TIME panes for a window with on-time data"))
        else:
            seen = on_time[0] if strategy.accumulating else early + on_time[0]
            if seen != facts.on_time:
                broken.append(
                    Broken(
                        "ON_TIME pane contents",
                        f"ON_TIME covers {sorted(seen.elements())}, on-time data is {sorted(facts.on_time.elements())}",
                    )
                )
    for n, (_, _, pane) in zip(new_counts, panes, strict=True):
        needed = _threshold(strategy.trigger, pane.timing)
        # AfterWatermark's first non-EARLY pane is its watermark part's (a window born late fires so)
        first_after_end = isinstance(strategy.trigger, AfterWatermark) and pane.timing != "EARLY" and pane.nonspec == 0
        if needed is not None and not pane.last and not first_after_end and n < needed:
            broken.append(
                Broken(
                    "count trigger threshold",
                    f"pane {pane.index} ({pane.timing}) adds {n} elements, fewer than {needed}",
                )
            )
            break
    return broken


def check_sessions(key_facts: list[WindowFacts], strategy: Strategy, records: list) -> list[Broken]:
    """One key's panes under Sessions, where the runner chose bundles: every pane lies within one
    of the sessions the key's kept data makes, holds only that session's data, and (for a trigger
    that cannot finish) the session's data all fires. ``records`` are (window, values, timestamp, Pane)."""
    broken: list[Broken] = []
    sessions = {f.window: f for f in key_facts if f.kept or f.after_finish}
    inside: dict = {w: [] for w in sessions}
    for window, values, _ts, pane in records:
        home = [w for w in sessions if w.start <= window.start and window.end <= w.end]
        if not home:
            broken.append(
                Broken("session windows", f"pane window {window!r} lies in none of the sessions {sorted(sessions)}")
            )
            continue
        inside[home[0]].append((window, Counter(values), pane))
    for w, members in inside.items():
        kept = sessions[w].kept
        possible = kept + sessions[w].after_finish
        if strategy.accumulating:
            over = [c for _, c, _ in members if c - possible]
            if over:
                broken.append(
                    Broken("contents within the window's data", f"a pane of {w!r} holds values it never received")
                )
            if not strategy.trigger.can_finish and not any(win == w and c == kept for win, c, _ in members):
                broken.append(
                    Broken(
                        "nothing within the lateness is lost",
                        f"no pane of {w!r} holds all of {sorted(kept.elements())}",
                    )
                )
        else:
            total = sum((c for _, c, _ in members), Counter())
            if total - possible:
                broken.append(
                    Broken(
                        "discarding panes are disjoint",
                        f"values {sorted((total - possible).elements())} of {w!r} fired more often than they arrived",
                    )
                )
            if not strategy.trigger.can_finish and kept - total:
                broken.append(
                    Broken(
                        "nothing within the lateness is lost",
                        f"values {sorted((kept - total).elements())} of {w!r} never fired",
                    )
                )
    return broken
