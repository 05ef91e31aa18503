"""What changed between two runs (``beam-conformance diff OLD NEW``).

Runs are paired by target name. A case's outcome is read as passing (passed, unexpected
pass), failing (failed, expected failure, error) or skipped; a change of that reading is
what a reviewer needs: a *regression* (passing before, failing now) fails the diff.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field

from conformance import capabilities
from conformance.session import results

FORMAT = "beam-conformance-diff/1"
MARKER = "<!-- beam-conformance-diff -->"  # lets CI find and replace its own PR comment

# kind -> (title in reports, does it fail the diff)
KINDS = {
    "regressed": ("Regressions: passed before, fail now", True),
    "new-failing": ("New cases that fail", False),
    "fixed": ("Fixed: failed before, pass now", False),
    "changed": ("Other outcome changes", False),
    "now-skipped": ("Ran before, skipped now", False),
    "now-run": ("Skipped before, run now", False),
    "new-passing": ("New cases that pass", False),
    "removed": ("Cases no longer in the run", False),
}


def _reading(outcome: str | None) -> str:
    if outcome is None:
        return "absent"
    if outcome in ("passed", "unexpected-pass"):
        return "passing"
    return "skipped" if outcome == "skipped" else "failing"


def kind_of(before: str | None, after: str | None) -> str | None:
    """The kind of change from one outcome to another (None: no change worth showing)."""
    if before == after:
        return None
    b, a = _reading(before), _reading(after)
    if a == "absent":
        return "removed"
    if b == "absent":
        return {"passing": "new-passing", "failing": "new-failing"}.get(a, "now-skipped")
    if b == "passing" and a == "failing":
        return "regressed"
    if b == "failing" and a == "passing":
        return "fixed"
    if a == "skipped":
        return "now-skipped"
    if b == "skipped":
        return "now-run"
    return "changed"  # e.g. failed -> expected-failure: the expectations changed, not the runner


@dataclass
class Change:
    id: str
    capability: str
    kind: str
    before: str | None
    after: str | None
    message: str = ""

    def to_json(self) -> dict:
        cap = capabilities.BY_ID.get(self.capability)
        return {
            "id": self.id,
            "capability": self.capability,
            "capability_title": cap.title if cap else self.capability,
            "matrix_row": cap.row if cap else "Other",
            "kind": self.kind,
            "before": self.before,
            "after": self.after,
            "message": self.message,
        }


@dataclass
class TargetDiff:
    target: str
    old: dict | None
    new: dict | None
    changes: list[Change] = field(default_factory=list)

    @property
    def regressions(self) -> list[Change]:
        return [c for c in self.changes if KINDS[c.kind][1]]

    def of_kind(self, kind: str) -> list[Change]:
        return [c for c in self.changes if c.kind == kind]

    def passing(self, doc: dict | None) -> str:
        if doc is None:
            return "-"
        s = doc.get("summary", {})
        ran = sum(s.get(k, 0) for k in ("passed", "unexpected-pass", "failed", "expected-failure", "error"))
        return f"{s.get('passed', 0) + s.get('unexpected-pass', 0)}/{ran}"

    def to_json(self) -> dict:
        return {
            "target": self.target,
            "old": self.passing(self.old),
            "new": self.passing(self.new),
            "only_in": None if self.old and self.new else ("new" if self.new else "old"),
            "regressions": len(self.regressions),
            "counts": {k: len(self.of_kind(k)) for k in KINDS if self.of_kind(k)},
            "changes": [c.to_json() for c in self.changes],
        }


def compare(old: dict | None, new: dict | None) -> TargetDiff:
    """The changes between two results documents of one target."""
    target = results.run_key(new or old)
    before = {c["id"]: c for c in (old or {}).get("cases", [])}
    after = {c["id"]: c for c in (new or {}).get("cases", [])}
    changes = []
    if old is not None and new is not None:
        for case_id in sorted(set(before) | set(after)):
            b, a = before.get(case_id), after.get(case_id)
            kind = kind_of(b and b["outcome"], a and a["outcome"])
            if kind is None:
                continue
            record = a or b
            message = (a or {}).get("message", "") if kind != "removed" else ""
            changes.append(Change(case_id, record["capability"], kind, b and b["outcome"], a and a["outcome"], message))
    return TargetDiff(target, old, new, changes)


def load_runs(path: str) -> dict[str, dict]:
    """Results documents by target, from a results file or a directory of results-*.json."""
    if os.path.isdir(path):
        paths = sorted(glob.glob(os.path.join(path, "results-*.json")))
        if not paths:
            raise ValueError(f"{path} holds no results-*.json")
    elif os.path.exists(path):
        paths = [path]
    else:
        raise ValueError(f"{path} does not exist")
    runs = {}
    for p in paths:
        doc = results.load(p)
        runs[results.run_key(doc)] = doc  # a target's Java VR run is a run of its own
    return runs


def compare_runs(old: dict[str, dict], new: dict[str, dict]) -> list[TargetDiff]:
    names = list(new) + [n for n in old if n not in new]
    return [compare(old.get(n), new.get(n)) for n in names]


def to_json(diffs: list[TargetDiff]) -> dict:
    return {
        "format": FORMAT,
        "regressions": sum(len(d.regressions) for d in diffs),
        "targets": [d.to_json() for d in diffs],
    }


# --------------------------------------------------------------------------- Markdown


def _esc(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ").replace("<", "&lt;")


def _first_line(message: str, limit: int = 160) -> str:
    lines = [line.strip() for line in (message or "").splitlines() if line.strip()]
    if not lines:
        return ""
    # a failed job's first line only says so; its last names the error
    text = (
        lines[-1]
        if lines[0].startswith("the job failed on")
        else (lines[1] if lines[0].startswith("output differs") and len(lines) > 1 else lines[0])
    )
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _table(changes: list[Change]) -> list[str]:
    out = ["| capability | case | before | now | message |", "|---|---|---|---|---|"]
    ordered = sorted(
        changes,
        key=lambda c: (
            capabilities.BY_ID[c.capability].row if c.capability in capabilities.BY_ID else "~",
            c.capability,
            c.id,
        ),
    )
    last = None
    for c in ordered:
        cap = capabilities.BY_ID.get(c.capability)
        label = f"{cap.row}: {cap.title} `{c.capability}`" if cap else f"`{c.capability}`"
        shown = _esc(label) if c.capability != last else ""
        last = c.capability
        out.append(f"| {shown} | `{c.id}` | {c.before or '-'} | {c.after or '-'} | {_esc(_first_line(c.message))} |")
    return out


def summary_line(d: TargetDiff) -> str:
    """'1 regressed, 2 fixed' (or 'no changes')."""
    return ", ".join(f"{len(d.of_kind(k))} {k}" for k in KINDS if d.of_kind(k)) or "no changes"


def to_markdown(
    diffs: list[TargetDiff], title: str = "Beam conformance: changes since the previous run", marker: bool = True
) -> str:
    out = ([MARKER] if marker else []) + [f"## {title}", ""]
    total = sum(len(d.regressions) for d in diffs)
    out.append(f"**{total} regression{'' if total == 1 else 's'}**" if total else "**No regressions.**")
    out.append("")
    for d in diffs:
        if d.old is None or d.new is None:
            where = "the new run" if d.new else "the previous run"
            out += [f"### {d.target}", "", f"Only in {where}: nothing to compare.", ""]
            continue
        out += [
            f"### {d.target}",
            "",
            f"Passing {d.passing(d.old)} before, {d.passing(d.new)} now; {summary_line(d)}.",
            "",
        ]
        for kind, (heading, fails) in KINDS.items():
            changes = d.of_kind(kind)
            if not changes:
                continue
            if fails or kind in ("new-failing", "fixed"):
                out += [f"#### {heading} ({len(changes)})", ""] + _table(changes) + [""]
            else:  # the rest folded, so the comment stays short
                out += (
                    [f"<details><summary>{heading} ({len(changes)})</summary>", ""]
                    + _table(changes)
                    + ["", "</details>", ""]
                )
    return "\n".join(out).rstrip() + "\n"
