"""Judging a generated pipeline's output against the model, inside the SDK worker that gathers it
(a predicate of conformance.authoring.checks, so it works for every runner, remote workers too).

A deviation names the rule it breaks (``[rule] detail``, first in the failure's text), which with
the program's transforms makes its signature (conformance/generated/signatures.py). Exact outputs
break "elements", "windows", "timestamps" or "panes"; a triggered GroupByKey's panes break a pane
rule (exact panes) or a constraint of conformance/model/constraints.py.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict

from conformance.model import constraints
from conformance.model.batch import Pane, key_identity
from conformance.model.windows import GLOBAL, Interval

MARK = "model deviation"
RULE = re.compile(MARK + r" \[([^\]\n]+)\]")
LISTED = 12


class Deviation(AssertionError):
    def __init__(self, rule: str, detail: str):
        super().__init__(f"{MARK} [{rule}] {detail}")
        self.rule = rule


def rule_of(text: str) -> str | None:
    """The rule a failure's text names (the first ``[rule]``), if any."""
    match = RULE.search(text)
    return match.group(1) if match else None


def _window(w):
    return GLOBAL if w.start_ms is None else Interval(w.start_ms, w.end_ms)


def _pane(p) -> Pane:
    return Pane(p.first, p.last, p.timing, p.index, p.nonspec)


def _listing(title: str, items) -> str:
    items = list(items)
    shown = "".join(f"\n    {i}" for i in items[:LISTED])
    more = f"\n    ... and {len(items) - LISTED} more" if len(items) > LISTED else ""
    return f"\n  {title} ({len(items)}):{shown}{more}"


def _fmt(value, ts, window, pane) -> str:
    text = f"{value!r} @ {ts}ms in {window!r}"
    return (
        text
        if pane is None
        else f"{text} {pane.timing} first={pane.first} last={pane.last} index={pane.index} nonspec={pane.nonspec}"
    )


class ExactJudge:
    """Every element exactly: value, window, timestamp and (where the model fixes it) pane."""

    def __init__(self, expected: tuple):
        self.expected = [(e.value, e.timestamp, e.window, e.pane) for e in expected]

    def __call__(self, records) -> bool:
        with_panes = all(p is not None for *_, p in self.expected)
        produced = [(_value(r.value), r.timestamp_ms, _window(r.window), _pane(r.pane)) for r in records]
        for rule, fields in (
            ("elements", (0,)),
            ("windows", (0, 2)),
            ("timestamps", (0, 1, 2)),
            ("panes", (0, 1, 2, 3)),
        ):
            if rule == "panes" and not with_panes:
                break
            want = Counter(tuple(e[i] for i in fields) for e in self.expected)
            got = Counter(tuple(p[i] for i in fields) for p in produced)
            if want != got:
                missing = [e for e in self.expected if _take(want - got, tuple(e[i] for i in fields))]
                unexpected = [p for p in produced if _take(got - want, tuple(p[i] for i in fields))]
                raise Deviation(
                    rule,
                    f"expected {len(self.expected)} element(s), the runner produced {len(produced)}"
                    + _listing("missing (the model's, not produced)", (_fmt(*m) for m in missing))
                    + _listing("unexpected (produced, not the model's)", (_fmt(*u) for u in unexpected)),
                )
        return True


def _value(v):
    return tuple(v) if isinstance(v, list) else v


def _take(counter: Counter, key) -> bool:
    if counter[key] > 0:
        counter[key] -= 1
        return True
    return False


class ReplayJudge:
    """A triggered GroupByKey's panes: exactly where the replay fixes a key's window, by the
    constraints where the runner chose the bundling."""

    def __init__(self, replay):
        self.replay = replay

    def __call__(self, records) -> bool:
        strategy = self.replay.strategy
        merging = getattr(strategy.windowfn, "merging", False)
        produced: dict = defaultdict(list)
        keys: dict = {}
        for r in records:
            key, values = r.value
            kid = key_identity(key)
            keys[kid] = key
            produced[(kid, None if merging else _window(r.window))].append(
                (_window(r.window), tuple(sorted(values)), r.timestamp_ms, _pane(r.pane))
            )
        facts_by_key: dict = defaultdict(list)
        for (kid, _), facts in self.replay.facts.items():
            facts_by_key[kid].append(facts)
        expected: dict = defaultdict(list)
        for f in self.replay.firings:
            kid = key_identity(f.key)
            expected[(kid, None if merging else f.window)].append((f.window, f.values, f.timestamp, f.pane))
        for unit in sorted(set(produced) | set(expected), key=repr):
            kid, window = unit
            facts = [f for f in facts_by_key.get(kid, []) if window is None or f.window == window]
            if any(f.open for f in facts):
                got = produced.get(unit, [])
                if merging:
                    broken = constraints.check_sessions(facts, strategy, got)
                else:
                    broken = constraints.check_window(facts[0], strategy, [(v, t, p) for _, v, t, p in got])
                if broken:
                    where = f"key {keys.get(kid, kid)!r}" + ("" if window is None else f", window {window!r}")
                    b = broken[0]
                    others = "".join(f"\n  also [{x.rule}] {x.detail}" for x in broken[1:])
                    raise Deviation(
                        b.rule,
                        f"{where} (the runner chose the bundling here: judged by constraints): {b.detail}{others}"
                        + _listing("produced panes", (_fmt_pane(*g) for g in sorted(got, key=_by_index))),
                    )
                continue
            want, got = expected.get(unit, []), produced.get(unit, [])
            if Counter(want) != Counter(got):
                raise Deviation(_pane_rule(want, got), _pane_diff(keys.get(kid, kid), window, want, got))
        return True


def _by_index(g):
    return (g[3].index, repr(g[0]))


def _fmt_pane(window, values, ts, pane) -> str:
    return _fmt(list(values), ts, window, pane)


def _pane_rule(want: list, got: list) -> str:
    """Which property of the panes differs first: which panes exist and hold what, then their
    timestamps, then each PaneInfo field."""
    for rule, project in (
        ("pane contents", lambda g: (g[0], g[1])),
        ("pane timestamp", lambda g: (g[0], g[1], g[2])),
        ("pane timing", lambda g: (g[0], g[1], g[2], g[3].timing)),
        ("pane index", lambda g: (g[0], g[1], g[2], g[3].timing, g[3].index, g[3].nonspec)),
        ("pane is_last", lambda g: (g[0], g[1], g[2], g[3].timing, g[3].index, g[3].nonspec, g[3].last)),
    ):
        if Counter(map(project, want)) != Counter(map(project, got)):
            return rule
    return "pane is_first"


def _pane_diff(key, window, want: list, got: list) -> str:
    where = f"key {key!r}" + ("" if window is None else f", window {window!r}")
    missing = list((Counter(want) - Counter(got)).elements())
    unexpected = list((Counter(got) - Counter(want)).elements())
    return (
        f"{where}: the model fixes {len(want)} pane(s) here, the runner emitted {len(got)}"
        + _listing("missing (the model's, not produced)", (_fmt_pane(*m) for m in sorted(missing, key=_by_index)))
        + _listing("unexpected (produced, not the model's)", (_fmt_pane(*u) for u in sorted(unexpected, key=_by_index)))
    )


def judge_for(expectation):
    """The predicate that judges a program's output, from its model expectation."""
    from conformance.generated.programs import Exact

    return ExactJudge(expectation.elems) if isinstance(expectation, Exact) else ReplayJudge(expectation.replay)
