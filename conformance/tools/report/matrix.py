"""Results of one or more runs -> the capability matrix (a plain data structure).

Verdicts per (capability or matrix row, target), counted over the cases that ran
(skipped cases do not count; expected failures count as failures, because the
runner does fail them):
  Yes       every case passes
  Partially some pass
  No        none pass
  ''        nothing ran (not tested)

Runs of Beam's Java ValidatesRunner suite (results documents whose ``suite`` is ``java-vr``) are not
columns of the matrix: they make a section of their own (``Matrix.java_vr``), per target its counts,
wall time and the verdicts of its tests per matrix row. Runs of generated pipelines (``suite``
``generated``) make another (``Matrix.generated``): per target the pipelines run and the deviations
by signature, each with the row it counts against.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from conformance import capabilities
from conformance.session import results
from conformance.tools import diff

PASSING = ("passed", "unexpected-pass")
FAILING = ("failed", "expected-failure", "error")
# A case whose every deviation lies in a cross-cutting property (capabilities.CROSS_CUTTING) is
# counted twice, once per row: in its own row as it fares on its own subject ("counted": passed, or
# not-judged when it could not get that far), and in the property's row as failing ("attributed_from").
NOT_JUDGED = "not-judged"


def _cases(n: int) -> str:
    return f"{n} case" if n == 1 else f"{n} cases"


def counted(case: dict) -> str:
    """The outcome a case counts with in the cell that holds it."""
    return case.get("counted", case["outcome"])


@dataclass
class Cell:
    """The outcome of a set of cases on one target."""

    cases: list[dict] = field(default_factory=list)

    @property
    def ran(self) -> list[dict]:
        return [c for c in self.cases if counted(c) in PASSING + FAILING]

    @property
    def passing(self) -> list[dict]:
        return [c for c in self.cases if counted(c) in PASSING]

    @property
    def failing(self) -> list[dict]:
        return [c for c in self.cases if counted(c) in FAILING]

    @property
    def skipped(self) -> list[dict]:
        return [c for c in self.cases if counted(c) == "skipped"]

    @property
    def not_judged(self) -> list[dict]:
        """Cases that could not judge this row's subject (their deviation lies elsewhere)."""
        return [c for c in self.cases if counted(c) == NOT_JUDGED]

    @property
    def attributed(self) -> list[dict]:
        """Failing cases of other rows whose only deviation lies in this row's property."""
        return [c for c in self.cases if c.get("attributed_from")]

    @property
    def deviating_elsewhere(self) -> list[dict]:
        """Cases that pass on this row's subject and deviate only in another row's property."""
        return [c for c in self.cases if c.get("counted") == "passed" and c["outcome"] not in PASSING]

    @property
    def verdict(self) -> str:
        if not self.ran:
            return ""
        if len(self.passing) == len(self.ran):
            return "Yes"
        return "Partially" if self.passing else "No"

    @property
    def qualifier(self) -> str:
        notes = []
        if self.deviating_elsewhere:
            notes.append(f"{_cases(len(self.deviating_elsewhere))} deviating only in another row's property")
        if self.not_judged:
            # the property each could not get past: the runner refuses TestStream, reports no metrics, ...
            props = ", ".join(dict.fromkeys(c.get("cross_cutting") or "?" for c in self.not_judged))
            notes.append(f"{_cases(len(self.not_judged))} not judged ({props})")
        if self.attributed:
            notes.append(f"{_cases(len(self.attributed))} from other rows, deviating only here")
        suffix = f"; {', '.join(notes)}" if notes else ""
        if not self.ran:
            return ("not tested" if not self.skipped else f"{_cases(len(self.skipped))} skipped") + suffix
        if self.verdict == "Yes":
            text = "the only case passes" if len(self.ran) == 1 else f"all {len(self.ran)} cases pass"
            return text + suffix
        return f"{len(self.passing)} of {_cases(len(self.ran))} pass" + suffix

    def note(self) -> str:
        """Why cases fail: known-failure reasons first, else the failing capabilities."""
        reasons = list(dict.fromkeys(c["known_failure"] for c in self.failing if c.get("known_failure")))
        unexplained = [c for c in self.failing if not c.get("known_failure")]
        parts = reasons[:3]
        if len(reasons) > 3:
            parts.append(f"and {len(reasons) - 3} more known limitations")
        if unexplained:
            titles = list(dict.fromkeys(c["capability_title"] for c in unexplained))
            parts.append("failing: " + "; ".join(titles[:4]) + (" ..." if len(titles) > 4 else ""))
        return " | ".join(parts)

    def to_json(self) -> dict:
        return {
            "verdict": self.verdict,
            "qualifier": self.qualifier,
            "note": self.note(),
            "passed": len(self.passing),
            "ran": len(self.ran),
            "skipped": len(self.skipped),
            "failing": [
                {
                    "id": c["id"],
                    "outcome": c["outcome"],
                    "message": c["message"],
                    "known_failure": c.get("known_failure"),
                    **({"attributed_from": c["attributed_from"]} if c.get("attributed_from") else {}),
                }
                for c in self.failing
            ],
            "passing": [c["id"] for c in self.passing],
            "deviating_elsewhere": [
                {"id": c["id"], "outcome": c["outcome"], "cross_cutting": c["cross_cutting"]}
                for c in self.deviating_elsewhere
            ],
            "not_judged": [
                {"id": c["id"], "outcome": c["outcome"], "cross_cutting": c["cross_cutting"]} for c in self.not_judged
            ],
        }


@dataclass
class Column:
    name: str
    info: dict
    summary: dict
    wall_time_s: float
    # changes since a previous run of this target (None: no previous run given)
    changes: diff.TargetDiff | None = None
    # what left part of the suite out of the run (results.narrowing); empty for a whole run
    narrowed_by: list[str] = field(default_factory=list)

    def changed_cases(self, case_ids) -> list:
        """The changes (since the previous run) among the given cases."""
        if self.changes is None:
            return []
        wanted = set(case_ids)
        return [c for c in self.changes.changes if c.id in wanted]


@dataclass
class JavaVrRun:
    """One target's run of Beam's Java ValidatesRunner suite."""

    name: str
    info: dict  # the target's description
    summary: dict
    wall_time_s: float
    selection: dict  # the results' selection.java_vr: Beam version, profile, its source, time cap
    rows: dict[str, Cell]  # matrix row -> the tests placed in it
    cases: list[dict]

    @property
    def failing(self) -> list[dict]:
        return sorted((c for c in self.cases if c["outcome"] in FAILING), key=lambda c: c["id"])

    @property
    def unexpected(self) -> list[dict]:
        return [c for c in self.cases if c["outcome"] in ("failed", "error", "unexpected-pass")]

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "info": self.info,
            "summary": self.summary,
            "wall_time_s": self.wall_time_s,
            "selection": self.selection,
            "rows": {row: cell.to_json() for row, cell in self.rows.items() if cell.cases},
        }


@dataclass(frozen=True)
class Deviation:
    """One signature of a generated run: how many pipelines showed it, and the row it counts against
    (its minimal program's capability)."""

    signature: str
    capability: str
    row: str
    pipelines: int
    first: str  # the first pipeline's case id
    known: str | None  # the expectations entry covering it, if any

    def to_json(self) -> dict:
        return {k: getattr(self, k) for k in ("signature", "capability", "row", "pipelines", "first", "known")}


@dataclass
class GeneratedRun:
    """One target's run of generated pipelines (``-m generated``), judged by the kit's model."""

    name: str
    info: dict
    summary: dict
    wall_time_s: float
    drawn: dict  # the results' selection.generated: seed, examples, capabilities, minutes
    deviations: list[Deviation]

    @property
    def ran(self) -> int:
        return sum(n for k, n in self.summary.items() if k != "skipped")

    @property
    def drawn_text(self) -> str:
        d = self.drawn
        narrowed = f", touching {', '.join(d['capabilities'])}" if d.get("capabilities") else ""
        budget = f", within {d['minutes']:g} min" if d.get("minutes") else ""
        return f"seed {d.get('seed', '?')}, {d.get('examples', '?')} drawn{narrowed}{budget}"

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "info": self.info,
            "summary": self.summary,
            "wall_time_s": self.wall_time_s,
            "drawn": self.drawn,
            "pipelines_run": self.ran,
            "deviations": [d.to_json() for d in self.deviations],
        }


@dataclass
class Matrix:
    columns: list[Column]
    # (row name or capability id) -> target name -> Cell
    rows: dict[str, dict[str, Cell]]
    capabilities: dict[str, dict[str, Cell]]
    # runs of Beam's Java ValidatesRunner suite, one per target (a section of their own)
    java_vr: list[JavaVrRun] = field(default_factory=list)
    # runs of generated pipelines, one per target (a section of their own)
    generated: list[GeneratedRun] = field(default_factory=list)

    def java_vr_rows(self) -> list[str]:
        """The matrix rows any Java run placed a test in, in the matrix's order."""
        used = {row for run in self.java_vr for row, cell in run.rows.items() if cell.cases}
        ordered = [r.name for r in capabilities.ROWS if r.name in used]
        return ordered + sorted(used - set(ordered))

    def row_cell(self, row: str, target: str) -> Cell:
        return self.rows[row][target]

    def capability_cell(self, cap_id: str, target: str) -> Cell:
        return self.capabilities[cap_id][target]

    def rows_in_section(self, anchor: str) -> list[capabilities.Row]:
        return [r for r in capabilities.ROWS if r.section == anchor and self._tested_anywhere(r.name)]

    def capabilities_in_row(self, row: str) -> list[capabilities.Capability]:
        return [
            c
            for c in capabilities.CAPABILITIES
            if c.row == row and any(self.capabilities[c.id][t.name].cases for t in self.columns)
        ]

    def _tested_anywhere(self, row: str) -> bool:
        return any(self.rows[row][t.name].cases for t in self.columns)


def build(documents: list[dict], previous: dict[str, dict] | None = None) -> Matrix:
    """Merge results documents (one per target; a later run of the same target replaces an earlier one).
    ``previous`` (target -> an earlier results document) adds each column's changes since then."""
    by_target: dict[str, dict] = {}
    java: dict[str, dict] = {}
    generated: dict[str, dict] = {}
    for doc in documents:
        {"java-vr": java, "generated": generated}.get(results.suite_of(doc), by_target)[doc["target"]] = doc
    columns = [
        Column(
            name,
            doc.get("target_info", {}),
            doc.get("summary", {}),
            doc.get("wall_time_s", 0.0),
            diff.compare(previous[name], doc) if previous and name in previous else None,
            results.narrowing(doc),
        )
        for name, doc in by_target.items()
    ]
    rows = {r.name: {c.name: Cell() for c in columns} for r in capabilities.ROWS}
    caps = {c.id: {col.name: Cell() for col in columns} for c in capabilities.CAPABILITIES}
    for name, doc in by_target.items():
        for case in doc["cases"]:
            cap = capabilities.BY_ID.get(case["capability"])
            if cap is None:  # results from a newer taxonomy: keep them visible under their row
                rows.setdefault(case.get("matrix_row", "Other"), {c.name: Cell() for c in columns})
                rows[case.get("matrix_row", "Other")][name].cases.append(case)
                continue
            for holder, entry in _placements(cap, case):
                caps[holder.id][name].cases.append(entry)
                rows[holder.row][name].cases.append(entry)
    return Matrix(
        columns,
        rows,
        caps,
        [_java_vr_run(doc) for doc in java.values()],
        [_generated_run(doc) for doc in generated.values()],
    )


def _generated_run(doc: dict) -> GeneratedRun:
    deviations = []
    for signature, failing in results.deviations_by_signature(doc["cases"]).items():
        cap_id = failing[0].get("counts_against", failing[0]["capability"])
        deviations.append(
            Deviation(
                signature,
                cap_id,
                _row_of(cap_id, failing[0]),
                len(failing),
                failing[0]["id"],
                failing[0].get("known_failure"),
            )
        )
    return GeneratedRun(
        doc["target"],
        doc.get("target_info", {}),
        doc.get("summary", {}),
        doc.get("wall_time_s", 0.0),
        doc.get("selection", {}).get("generated", {}),
        deviations,
    )


def _row_of(cap_id: str, case: dict) -> str:
    """The matrix row a capability belongs to; for one of a newer taxonomy, the row its record names."""
    cap = capabilities.BY_ID.get(cap_id)
    return cap.row if cap is not None else case.get("matrix_row", "Other")


def _java_vr_run(doc: dict) -> JavaVrRun:
    rows: dict[str, Cell] = {}
    for case in doc["cases"]:
        rows.setdefault(_row_of(case["capability"], case), Cell()).cases.append(case)
    return JavaVrRun(
        doc["target"],
        doc.get("target_info", {}),
        doc.get("summary", {}),
        doc.get("wall_time_s", 0.0),
        doc.get("selection", {}).get("java_vr", {}),
        rows,
        doc["cases"],
    )


def _placements(cap: capabilities.Capability, case: dict) -> list[tuple[capabilities.Capability, dict]]:
    """Where a case counts: its own capability, and, when every deviation lies in a cross-cutting
    property that is not its own subject, that property's capability too (as a failure there)."""
    prop = case.get("cross_cutting")
    home = capabilities.counts_elsewhere(cap, prop) if prop and case["outcome"] in FAILING else None
    if home is None:
        return [(cap, case)]
    own = {**case, "counted": "passed" if case.get("judged", True) else NOT_JUDGED, "counted_under": home.id}
    return [(cap, own), (home, {**case, "attributed_from": cap.id})]


def to_json(matrix: Matrix) -> dict:
    return {
        "format": "beam-conformance-matrix/1",
        "targets": [
            {
                "name": c.name,
                "info": c.info,
                "summary": c.summary,
                "wall_time_s": c.wall_time_s,
                **({"since_previous": c.changes.to_json()} if c.changes is not None else {}),
                # a selection, not the whole suite: what narrowed it (empty: the whole suite ran)
                "selection": {"whole_suite": not c.narrowed_by, "narrowed_by": c.narrowed_by},
            }
            for c in matrix.columns
        ],
        "sections": [
            {
                "anchor": s.anchor,
                "description": s.description,
                "rows": [
                    {
                        "name": r.name,
                        "description": r.description,
                        "values": {t.name: matrix.row_cell(r.name, t.name).to_json() for t in matrix.columns},
                        "capabilities": [
                            {
                                "id": c.id,
                                "title": c.title,
                                "beam_category": c.beam_category,
                                "streaming": c.streaming,
                                "values": {
                                    t.name: matrix.capability_cell(c.id, t.name).to_json() for t in matrix.columns
                                },
                            }
                            for c in matrix.capabilities_in_row(r.name)
                        ],
                    }
                    for r in matrix.rows_in_section(s.anchor)
                ],
            }
            for s in capabilities.SECTIONS
        ],
        # Beam's Java ValidatesRunner suite, per target (not columns of the matrix above)
        "java_vr": [run.to_json() for run in matrix.java_vr],
        # generated pipelines judged by the kit's model, per target (not columns of the matrix above)
        "generated": [run.to_json() for run in matrix.generated],
    }
