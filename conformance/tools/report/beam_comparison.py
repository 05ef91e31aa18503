"""Beam's published capability matrix (conformance.tools.report.published) beside the matrix our results
build: for each target of ours that runs what one of Beam's columns describes, the rows where the
two disagree.

A Beam row is compared through its counterpart in our matrix (published.BEAM_TO_OURS) and read
against Beam's first-level verdict for the target's column:
  claimed-but-failing  Beam claims support (Yes or Partially), our verdict is Partially or No
  denied-but-passing   Beam claims none (No), some of our cases pass
  not-stated           Beam's entry is empty, absent or Unverified (our verdict shown for reference)
  consistent           anything else our cases ran for (Yes beside Yes, No beside No, ...)
  not-tested           Beam states a verdict, and none of our cases ran for its counterpart
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from conformance.tools.report import published
from conformance.tools.report.matrix import Cell, Matrix

FORMAT = "beam-conformance-published-comparison/1"
SHOWN_CASES = 5  # case ids per row in the Markdown (the JSON lists them all)
SHOWN_REASONS = 3

KINDS = {
    "claimed_but_failing": "Beam claims support, our cases fail",
    "denied_but_passing": "Beam claims no support, our cases pass",
    "not_stated": "Beam states no verdict",
}


@dataclass
class Entry:
    """One Beam row on one target: Beam's claim and our cases for its counterpart."""

    row: published.BeamRow
    counterpart: published.Counterpart
    claim: str | None
    cell: Cell

    @property
    def ours(self) -> str:
        return describe_counterpart(self.counterpart)


def describe_counterpart(counterpart: published.Counterpart) -> str:
    rows = ", ".join(counterpart.rows)
    return f"{rows} (only {', '.join(counterpart.capabilities)})" if counterpart.capabilities else rows


@dataclass
class TargetComparison:
    target: str
    column: str
    info: dict
    claimed_but_failing: list[Entry] = field(default_factory=list)
    denied_but_passing: list[Entry] = field(default_factory=list)
    not_stated: list[Entry] = field(default_factory=list)
    consistent: list[Entry] = field(default_factory=list)
    not_tested: list[Entry] = field(default_factory=list)


@dataclass
class Comparison:
    targets: list[TargetComparison]
    not_compared: list[str]  # targets in the results that no Beam column describes


def counterpart_cell(matrix: Matrix, counterpart: published.Counterpart, target: str) -> Cell:
    """Our cases for a Beam row on one target: those of its counterpart's capabilities if it names
    some, else those of its rows."""
    if counterpart.capabilities:
        cells = [matrix.capabilities.get(c, {}).get(target, Cell()) for c in counterpart.capabilities]
    else:
        cells = [matrix.rows.get(r, {}).get(target, Cell()) for r in counterpart.rows]
    if len(cells) == 1:
        return cells[0]
    return Cell([case for cell in cells for case in cell.cases])


def classify(claim: str | None, cell: Cell) -> str:
    if claim not in published.SUPPORT + (published.NONE_CLAIMED,):
        return "not_stated"
    if not cell.ran:
        return "not_tested"
    if claim in published.SUPPORT and cell.verdict in ("Partially", "No"):
        return "claimed_but_failing"
    if claim == published.NONE_CLAIMED and cell.passing:
        return "denied_but_passing"
    return "consistent"


def compare(matrix: Matrix) -> Comparison:
    compared, not_compared = [], []
    for col in matrix.columns:
        column = published.TARGET_COLUMN.get(col.name)
        if column is None:
            not_compared.append(col.name)
            continue
        result = TargetComparison(col.name, column, col.info)
        for row in published.BEAM_ROWS:
            counterpart = published.BEAM_TO_OURS.get(row.key)
            if counterpart is None:
                continue
            cell = counterpart_cell(matrix, counterpart, col.name)
            claim = row.claim(column)
            getattr(result, classify(claim, cell)).append(Entry(row, counterpart, claim, cell))
        compared.append(result)
    return Comparison(compared, not_compared)


# --------------------------------------------------------------------------- JSON


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[0][:300]


def _case_json(case: dict) -> dict:
    out = {
        "id": case["id"],
        "capability": case.get("capability"),
        "outcome": case["outcome"],
        "known_failure": case.get("known_failure"),
        "first_line": _first_line(case.get("message") or ""),
    }
    if case.get("attributed_from"):
        out["attributed_from"] = case["attributed_from"]
    return out


def _entry_json(entry: Entry, cases: str | None = None) -> dict:
    out = {
        "beam_row": entry.row.name,
        "beam_category": entry.row.category,
        "beam_claim": entry.claim,
        "our_rows": list(entry.counterpart.rows),
        "our_capabilities": list(entry.counterpart.capabilities),
        "our_verdict": entry.cell.verdict,
        "passed": len(entry.cell.passing),
        "ran": len(entry.cell.ran),
    }
    if cases == "failing":
        out["failing"] = [_case_json(c) for c in sorted(entry.cell.failing, key=lambda c: c["id"])]
    elif cases == "passing":
        out["passing"] = sorted(c["id"] for c in entry.cell.passing)
    return out


def _source_json() -> dict:
    return {**published.SOURCE, "url": published.SOURCE_URL, "kept": "row names, column classes, l1 verdicts"}


def to_json(comparison: Comparison) -> dict:
    return {
        "format": FORMAT,
        "source": _source_json(),
        "targets": [
            {
                "target": t.target,
                "beam_column": t.column,
                "info": t.info,
                "claimed_but_failing": [_entry_json(e, "failing") for e in t.claimed_but_failing],
                "denied_but_passing": [_entry_json(e, "passing") for e in t.denied_but_passing],
                "not_stated": [_entry_json(e) for e in t.not_stated],
                "consistent": [_entry_json(e) for e in t.consistent],
                "not_tested": [_entry_json(e) for e in t.not_tested],
            }
            for t in comparison.targets
        ],
        "not_compared": comparison.not_compared,
        "beam_rows_without_counterpart": dict(published.NO_COUNTERPART),
        "our_rows_without_beam_row": list(published.OURS_ONLY),
        "columns": {
            column: {"targets": list(c.targets), "note": c.note} for column, c in published.COLUMN_TARGETS.items()
        },
    }


def render_json(matrix: Matrix) -> str:
    comparison = compare(matrix)
    document = to_json(comparison)
    if not comparison.targets:
        document["note"] = _nothing_to_compare(comparison)
    return json.dumps(document, indent=1) + "\n"


# --------------------------------------------------------------------------- Markdown


def _esc(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _claim(claim: str | None) -> str:
    if claim is None:
        return "no entry"
    return claim or "empty"


def _verdict(cell: Cell) -> str:
    return cell.verdict or "not tested"


def _ids(cases: list[dict]) -> str:
    ids = []
    for case in sorted(cases, key=lambda c: c["id"])[:SHOWN_CASES]:
        text = f"`{case['id']}`"
        if case.get("attributed_from"):
            text += f" (from {case['attributed_from']})"
        ids.append(text)
    more = len(cases) - SHOWN_CASES
    return ", ".join(ids) + (f" and {more} more" if more > 0 else "")


def _reasons(failing: list[dict]) -> str:
    reasons = list(dict.fromkeys(c["known_failure"] for c in failing if c.get("known_failure")))
    parts = [_esc(r if len(r) <= 160 else r[:157] + "...") for r in reasons[:SHOWN_REASONS]]
    if len(reasons) > SHOWN_REASONS:
        parts.append(f"and {len(reasons) - SHOWN_REASONS} more")
    unexplained = sum(1 for c in failing if not c.get("known_failure"))
    if unexplained:
        parts.append(f"{unexplained} without a known-failure reason")
    return "; ".join(parts)


def _counts(cell: Cell) -> str:
    return f"{len(cell.passing)} of {len(cell.ran)}" if cell.ran else "none ran"


def _nothing_to_compare(comparison: Comparison) -> str:
    named = ", ".join(comparison.not_compared) or "none"
    known = ", ".join(sorted(published.TARGET_COLUMN))
    return (
        f"None of the targets in these results ({named}) runs a runner Beam's published matrix has a column "
        f"for, so there is nothing to compare. Targets that would be compared: {known}."
    )


def _target_section(t: TargetComparison) -> list[str]:
    out = [f"## {t.target} (Beam's column `{t.column}`)", ""]
    versions = [t.info[k] for k in ("runner_version",) if t.info.get(k)]
    if t.info.get("apache_beam"):
        versions.append(f"Python SDK {t.info['apache_beam']}")
    note = published.COLUMN_TARGETS[t.column].note
    out += [f"{note}." + (f" Ran: {'; '.join(versions)}." if versions else ""), ""]
    out += [
        f"{len(t.claimed_but_failing)} row(s) where Beam claims support and our cases fail, "
        f"{len(t.denied_but_passing)} where Beam claims none and our cases pass; "
        f"{len(t.consistent)} consistent, {len(t.not_tested)} not tested by these results, "
        f"{len(t.not_stated)} without a verdict from Beam.",
        "",
    ]
    if t.claimed_but_failing:
        out += [
            f"### {KINDS['claimed_but_failing']}",
            "",
            "| Beam row | Beam's claim | our row | our verdict | passing | failing cases | known-failure reasons |",
            "|---|---|---|---|---|---|---|",
        ]
        for e in t.claimed_but_failing:
            failing = e.cell.failing
            out.append(
                f"| {_esc(e.row.label)} | {_claim(e.claim)} | {_esc(e.ours)} | {_verdict(e.cell)} "
                f"| {_counts(e.cell)} | {len(failing)}: {_ids(failing)} | {_reasons(failing)} |"
            )
        out.append("")
    if t.denied_but_passing:
        out += [
            f"### {KINDS['denied_but_passing']}",
            "",
            "| Beam row | Beam's claim | our row | our verdict | passing | passing cases |",
            "|---|---|---|---|---|---|",
        ]
        for e in t.denied_but_passing:
            out.append(
                f"| {_esc(e.row.label)} | {_claim(e.claim)} | {_esc(e.ours)} | {_verdict(e.cell)} "
                f"| {_counts(e.cell)} | {_ids(e.cell.passing)} |"
            )
        out.append("")
    if t.not_stated:
        out += [
            f"### {KINDS['not_stated']}",
            "",
            "| Beam row | Beam's entry | our row | our verdict | passing |",
            "|---|---|---|---|---|",
        ]
        for e in t.not_stated:
            out.append(
                f"| {_esc(e.row.label)} | {_claim(e.claim)} | {_esc(e.ours)} | {_verdict(e.cell)} | {_counts(e.cell)} |"
            )
        out.append("")
    if t.consistent:
        listed = ", ".join(f"{e.row.label} ({_claim(e.claim)} / {_verdict(e.cell)})" for e in t.consistent)
        out += [f"Consistent (Beam / ours): {_esc(listed)}.", ""]
    if t.not_tested:
        out += [f"Not tested by these results: {_esc(', '.join(e.row.label for e in t.not_tested))}.", ""]
    return out


def _source_line() -> str:
    return (
        f"Beam's matrix: [`{published.SOURCE['path']}`]({published.SOURCE_URL}) in {published.SOURCE['repository']} "
        f"at commit `{published.SOURCE['commit'][:12]}`, transcribed into `conformance/tools/report/published.py` "
        "(row names, column classes and first-level verdicts only; Beam's qualifiers and notes are at the source)."
    )


def render_markdown(matrix: Matrix) -> str:
    comparison = compare(matrix)
    out = ["# Beam's published capability matrix beside ours", "", _source_line(), ""]
    if not comparison.targets:
        return "\n".join(out + [_nothing_to_compare(comparison)]) + "\n"
    out += [
        "Each Beam row is compared with its counterpart in our matrix on the targets that run what Beam's "
        "column describes. Our verdict counts the cases that ran: Yes all pass, Partially some, No none; known "
        "failures count as failures. Beam's verdicts name no release and speak for a runner whatever the SDK, "
        "while our cases are Python pipelines run on the versions given under each target, so a disagreement "
        "is a lead to follow up, not a judgement on either matrix.",
        "",
    ]
    if comparison.not_compared:
        out += [f"Not compared (no Beam column): {', '.join(comparison.not_compared)}.", ""]
    for t in comparison.targets:
        out += _target_section(t)
    out += ["## How Beam's rows map onto ours", ""]
    out += [
        "Beam rows with a counterpart map onto our rows of the same name, except:",
        "",
        *(
            f"- {_esc(published.BEAM_ROWS_BY_KEY[key].label)} → {_esc(describe_counterpart(c))}"
            + (f": {_esc(c.note)}" if c.note else "")
            for key, c in published.BEAM_TO_OURS.items()
            if c.rows != (published.BEAM_ROWS_BY_KEY[key].name,) or c.capabilities or c.note
        ),
        "",
    ]
    out += ["## Beam rows with no counterpart in our suite", ""]
    out += [
        f"- {_esc(published.BEAM_ROWS_BY_KEY[key].label)}: {_esc(why)}" for key, why in published.NO_COUNTERPART.items()
    ]
    out += ["", f"Our rows Beam's matrix has no row for: {', '.join(published.OURS_ONLY)}.", ""]
    out += ["## Beam's columns and our targets", "", "| Beam column | our targets | |", "|---|---|---|"]
    for column, c in published.COLUMN_TARGETS.items():
        out.append(f"| `{column}` | {', '.join(c.targets) or '—'} | {_esc(c.note)} |")
    return "\n".join(out) + "\n"
