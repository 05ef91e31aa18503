"""The capability matrix as one self-contained HTML page (styles and a small script inline).

The page opens on the grid: one cell per matrix row and target, its verdict as a symbol and a
colour (lightness ordered, so it reads in grayscale; Partially shaded by the share of cases that
pass), with a sticky header row and first column. A note above it says which columns are the kit's
own runners. Filters narrow it by target, verdict and capability text. A cell opens its cases,
grouped by capability, with their failure messages; without scripts the cell links to the same list
below the grid. A table of the targets (counts, versions, changes since a previous run) follows.
"""

from __future__ import annotations

import html
from importlib import resources

from conformance import capabilities
from conformance.tools import diff
from conformance.tools.report import own_runners
from conformance.tools.report.matrix import Cell, Column, JavaVrRun, Matrix, counted

SYMBOL = {"Yes": "✓", "Partially": "◐", "No": "✗", "": "–"}
CSS_CLASS = {"Yes": "v-yes", "Partially": "v-partially", "No": "v-no", "": "v-none"}
VERDICT_WORD = {"Yes": "Yes", "Partially": "Partially", "No": "No", "": "not tested"}
# "Partially" is shaded by the share of cases that pass, in steps of a fifth (matrix.css rate-0 to
# rate-4): 31 of 32 then looks nearly Yes and 1 of 15 nearly No, as wpt.fyi shades its results.
RATE_STEPS = 5
# A summary's counts, as the targets table and the Java runs table show them (results.summarize's keys).
COUNTS = (
    ("passed", "passed"),
    ("failed", "failed"),
    ("known failures", "expected-failure"),
    ("unexpected passes", "unexpected-pass"),
    ("errors", "error"),
    ("skipped", "skipped"),
)


def _asset(name: str) -> str:
    return resources.files("conformance.tools.report").joinpath(name).read_text(encoding="utf-8")


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def rate_step(cell: Cell) -> int:
    """The shade of a Partially cell: which fifth its share of passing cases falls in (0 to 4)."""
    return len(cell.passing) * RATE_STEPS // len(cell.ran)


def _rate_label(step: int) -> str:
    low, high = step * 100 // RATE_STEPS, (step + 1) * 100 // RATE_STEPS
    if step == 0:
        return f"<{high}%"
    return f"{low}%+" if step == RATE_STEPS - 1 else f"{low}–{high - 1}%"


def _verdict_class(cell: Cell) -> str:
    css = CSS_CLASS[cell.verdict]
    return f"{css} rate-{rate_step(cell)}" if cell.verdict == "Partially" else css


def _cell_anchor(row: str, index: int) -> str:
    return "cases-" + "".join(ch if ch.isalnum() else "-" for ch in row) + f"--t{index}"


def _count(cell: Cell) -> str:
    return f"{len(cell.passing)}/{len(cell.ran)}" if cell.ran else ""


def _change_badge(changes: list) -> str:
    """A cell's changes since the previous run: ▼ regressions, ▲ fixes."""
    down = sum(1 for c in changes if c.kind == "regressed")
    up = sum(1 for c in changes if c.kind == "fixed")
    parts = []
    if down:
        parts.append(f'<span class="change" title="{down} case(s) regressed since the previous run">▼{down}</span>')
    if up:
        parts.append(f'<span class="change" title="{up} case(s) fixed since the previous run">▲{up}</span>')
    return "".join(parts)


def _change_words(changes: list) -> str:
    if not changes:
        return ""
    kinds = {}
    for c in changes:
        kinds[c.kind] = kinds.get(c.kind, 0) + 1
    return "; since the previous run: " + ", ".join(f"{n} {k}" for k, n in kinds.items())


def _grid_cell(row: str, index: int, col: Column, cell: Cell) -> str:
    changes = col.changed_cases(c["id"] for c in cell.cases)
    verdict = cell.verdict
    label = f"{row} on {col.name}: {VERDICT_WORD[verdict]}, {cell.qualifier}{_change_words(changes)}"
    outcomes = " ".join(sorted({c["outcome"] for c in cell.cases}))
    attrs = (
        f'class="{_verdict_class(cell)}" data-target="t{index}" data-verdict="{(verdict or "untested").lower()}"'
        f' data-outcomes="{outcomes}" data-changed="{"yes" if changes else "no"}"'
        + (f' data-passed="{len(cell.passing)}" data-ran="{len(cell.ran)}"' if cell.ran else "")
    )
    inner = (
        f'<span class="sym" aria-hidden="true">{SYMBOL[verdict]}</span>'
        f'<span class="count" aria-hidden="true">{_e(_count(cell))}</span>{_change_badge(changes)}'
    )
    if not cell.cases:
        return f'<td {attrs}><span class="visually-hidden">{_e(label)}</span>{inner}</td>'
    return (
        f'<td {attrs}><a href="#{_cell_anchor(row, index)}" aria-label="{_e(label)}" title="{_e(label)}">'
        f"{inner}</a></td>"
    )


def _root_cause_note(case: dict) -> str:
    """Where else a case counts: its only deviation's row, or the row it came from."""
    if case.get("attributed_from"):
        origin = capabilities.BY_ID.get(case["attributed_from"])
        where = f"{origin.title} ({origin.row})" if origin else case["attributed_from"]
        return (
            f'<div class="root-cause">a case of {_e(where)} whose only deviation is '
            f"{_e(case['cross_cutting'])}: counted here as failing, there as "
            f"{'passing' if case.get('judged', True) else 'not judged'}</div>"
        )
    if case.get("counted_under"):
        home = capabilities.BY_ID[case["counted_under"]]
        verdict = "holds" if counted(case) == "passed" else "could not be judged"
        return (
            f'<div class="root-cause">what this case is about {verdict}; its only deviation, '
            f"{_e(case['cross_cutting'])}, is counted under {_e(home.row)} ({_e(home.id)})</div>"
        )
    return ""


def _case_items(cell: Cell, changes: dict) -> str:
    items = []
    for case in cell.failing + cell.passing + cell.not_judged + cell.skipped:
        kind = (
            "failing"
            if case in cell.failing
            else "passing"
            if case in cell.passing
            else "not-judged"
            if case in cell.not_judged
            else "skipped"
        )
        change = changes.get(case["id"])
        note = (
            f' <span class="changed-note">({_e(change.kind)}: was {_e(change.before or "absent")})</span>'
            if change
            else ""
        )
        known = (
            f'<div class="known">known failure: {_e(case["known_failure"])}</div>' if case.get("known_failure") else ""
        )
        message = ""
        if kind == "failing" or case.get("counted_under"):
            message = f'<pre class="message">{_e(case["message"] or "(no message)")}</pre>'
        elif kind == "skipped" and case.get("message"):
            message = f'<div class="skip-reason">{_e(case["message"])}</div>'
        outcome = case["outcome"] if not case.get("counted_under") else f"{case['outcome']}, {counted(case)} here"
        items.append(
            f'<li class="{kind}"><span class="outcome">{_e(outcome)}</span> '
            f"<code>{_e(case['id'])}</code>{note}{_root_cause_note(case)}{known}{message}</li>"
        )
    return "".join(items)


def _cell_cases(matrix: Matrix, row: str, index: int, col: Column) -> str:
    cell = matrix.row_cell(row, col.name)
    changes = {c.id: c for c in col.changed_cases(c["id"] for c in cell.cases)}
    body = []
    for cap in matrix.capabilities_in_row(row):
        cap_cell = matrix.capability_cell(cap.id, col.name)
        if not cap_cell.cases:
            continue
        body.append(
            f'<h3><span class="chip {_verdict_class(cap_cell)}" aria-hidden="true">'
            f"{SYMBOL[cap_cell.verdict]}</span> {_e(cap.title)} <code>{_e(cap.id)}</code> "
            f'<span class="visually-hidden">{VERDICT_WORD[cap_cell.verdict]},</span>'
            f"<small>{_e(cap_cell.qualifier)} · {_e(cap.beam_category)}</small></h3>"
            f'<ul class="cases">{_case_items(cap_cell, changes)}</ul>'
        )
    known_ids = {
        c["id"] for cap in matrix.capabilities_in_row(row) for c in matrix.capability_cell(cap.id, col.name).cases
    }
    others = Cell([c for c in cell.cases if c["id"] not in known_ids])  # from a newer taxonomy
    if others.cases:
        body.append(f'<h3>Other capabilities</h3><ul class="cases">{_case_items(others, changes)}</ul>')
    title = f"{row} on {col.name}: {VERDICT_WORD[cell.verdict]}, {cell.qualifier}"
    return (
        f'<details class="cell-cases" id="{_cell_anchor(row, index)}" data-title="{_e(title)}"><summary>'
        f'<span class="chip {_verdict_class(cell)}" aria-hidden="true">{SYMBOL[cell.verdict]}</span>'
        f"{_e(title)}</summary>"
        f'<div class="cell-body">{"".join(body)}</div></details>'
    )


def _search_text(matrix: Matrix, row: capabilities.Row) -> str:
    words = [row.name, row.description]
    for cap in matrix.capabilities_in_row(row.name):
        words += [cap.id, cap.title, cap.beam_category]
    return " ".join(words).lower()


def _setup_facts(col: Column) -> list[tuple[str, str]]:
    facts = []
    for key, label in (
        ("runner_version", "runner"),
        ("version_skew", "version skew"),
        ("apache_beam", "Beam SDK"),
        ("python", "Python"),
        ("spec", "target"),
        ("endpoint", "endpoint"),
        ("environment_type", "environment"),
    ):
        if col.info.get(key):
            facts.append((label, col.info[key]))
    if col.changes is not None:
        facts.append(("since previous", diff.summary_line(col.changes)))
    return facts


def _own_mark(col: Column) -> str:
    mark = ""
    if own_runners.is_own(col.info):
        mark += '<abbr class="own-mark" title="the kit\'s own runner (see the note above the grid)">*</abbr>'
    if col.narrowed_by:
        mark += (
            '<abbr class="own-mark" title="a selection, not the whole suite: '
            + _e("; ".join(col.narrowed_by))
            + '">&dagger;</abbr>'
        )
    return mark


def _narrowed_note(cols: list[Column]) -> str:
    """Which columns ran only part of the suite, and what chose it: their verdicts say nothing of the rest."""
    narrowed = [c for c in cols if c.narrowed_by]
    if not narrowed:
        return ""
    items = "".join(f"<li><strong>{_e(c.name)}</strong>: {_e('; '.join(c.narrowed_by))}</li>" for c in narrowed)
    return (
        '<div class="selection-note" id="selection-note"><p><span class="own-mark" aria-hidden="true">&dagger;</span> '
        "ran a selection, not the whole suite (a row's verdict counts only the cases that ran):</p>"
        f"<ul>{items}</ul></div>"
    )


def _target_rows(index: int, col: Column) -> str:
    """One target in the targets table: its counts on a row, its runner and setup on a row below (across
    the whole table, so a phone's narrow columns need not hold it)."""
    facts = _setup_facts(col)
    head = f"target-t{index}"
    counts = "".join(
        f'<td class="{"zero" if not col.summary.get(key, 0) else "n"}">{_e(col.summary.get(key, 0))}</td>'
        for _, key in COUNTS
    )
    setup = (
        f'<tr class="setup"><td colspan="{len(COUNTS) + 2}" headers="{head}"><dl>'
        + "".join(f"<div><dt>{_e(k)}</dt><dd>{_e(v)}</dd></div>" for k, v in facts)
        + "</dl></td></tr>"
        if facts
        else ""
    )
    return (
        f'<tbody data-name="{_e(col.name)}"><tr><th scope="rowgroup" id="{head}">{_e(col.name)}{_own_mark(col)}</th>'
        f'{counts}<td class="n">{_e(f"{col.wall_time_s:g}")} s</td></tr>{setup}</tbody>'
    )


def _targets_table(cols: list[Column]) -> str:
    heads = [label for label, _ in COUNTS] + ["wall time"]
    return (
        '<h2 id="targets-heading">Targets</h2>'
        '<div class="targets-wrap" role="region" aria-labelledby="targets-heading" tabindex="0">'
        '<table class="targets" id="summary"><caption class="visually-hidden">Cases per outcome, wall time, '
        "runner and setup of each target</caption>"
        '<thead><tr><th scope="col" class="name">target</th>'
        + "".join(f'<th scope="col"><span>{_e(h)}</span></th>' for h in heads)
        + "</tr></thead>"
        + "".join(_target_rows(i, c) for i, c in enumerate(cols))
        + "</table></div>"
    )


def _own_note(cols: list[Column]) -> str:
    """Which columns are the kit's own runners, and why their passes prove little."""
    own = [c.name for c in cols if own_runners.is_own(c.info)]
    if not own:
        return ""
    names = " and ".join(filter(None, [", ".join(own[:-1]), own[-1]]))
    others = " The other columns are runners the kit did not write." if len(own) < len(cols) else ""
    return (
        f'<p class="own-note" id="own-note"><span class="own-mark" aria-hidden="true">*</span> '
        f"<strong>{_e(names)}</strong> {'is' if len(own) == 1 else 'are'} the kit's own "
        f"runner{'' if len(own) == 1 else 's'}, the ones the suite was written with: their full passes are "
        f"expected, not evidence that the cases are right.{others}</p>"
    )


def _legend_item(verdict: str, text: str) -> str:
    return f'<li><span class="chip {CSS_CLASS[verdict]}" aria-hidden="true">{SYMBOL[verdict]}</span>{text}</li>'


def _legend_partially() -> str:
    """Partially, with the scale of its shades (rate_step's fifths)."""
    swatches = "".join(
        f'<span class="chip v-partially rate-{i}">{_e(_rate_label(i))}</span>' for i in range(RATE_STEPS)
    )
    return (
        f'<li><span class="chip v-partially" aria-hidden="true">{SYMBOL["Partially"]}</span>Partially: some pass, '
        f'shaded by how many <span class="scale">{swatches}</span></li>'
    )


def render(matrix: Matrix) -> str:
    cols = matrix.columns
    has_changes = any(c.changes is not None for c in cols)
    out = [
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>Beam runner capability matrix</title>",
        f"<style>{_asset('matrix.css')}</style></head><body><main>",
        "<h1>Beam runner capability matrix</h1>",
        '<p class="intro">One cell per capability row and target: cases passing of cases run (known '
        "failures count as failures). Open a cell for its cases and failure messages.</p>",
        '<ul class="legend" aria-label="Legend">'
        + _legend_item("Yes", "Yes: every case passes")
        + _legend_partially()
        + _legend_item("No", "No: none pass")
        + _legend_item("", "not tested")
        + (
            '<li><span class="change" aria-hidden="true">▼1</span> regressed / '
            '<span class="change" aria-hidden="true">▲1</span> fixed since the previous run</li>'
            if has_changes
            else ""
        )
        + "</ul>",
        _own_note(cols),
        _narrowed_note(cols),
    ]
    # filters: shown by the script (they need it)
    out.append(
        '<form id="filters" class="filters" hidden aria-label="Filter the matrix">'
        '<label for="f-text">Capability<input id="f-text" type="search" '
        'placeholder="e.g. sessions, state.bag" autocomplete="off"></label>'
        '<label for="f-verdict">Rows with a cell that<select id="f-verdict">'
        '<option value="">(any)</option><optgroup label="is">'
        '<option value="failing">failing (No or Partially)</option>'
        '<option value="no">No</option><option value="partially">Partially</option>'
        '<option value="yes">Yes</option><option value="untested">not tested</option>'
        + ('<option value="changed">changed since the previous run</option>' if has_changes else "")
        + '</optgroup><optgroup label="has a case that">'
        + "".join(
            f'<option value="outcome:{o}">{text}</option>'
            for o, text in (
                ("failed", "failed (not a known failure)"),
                ("expected-failure", "failed as known"),
                ("unexpected-pass", "passed unexpectedly"),
                ("error", "errored"),
                ("skipped", "was skipped"),
            )
        )
        + "</optgroup></select></label><fieldset><legend>Targets</legend>"
        + "".join(
            f'<label><input type="checkbox" checked data-target="t{i}">{_e(c.name)}</label>' for i, c in enumerate(cols)
        )
        + '</fieldset><output id="f-count" for="f-text f-verdict"></output></form>'
    )
    # the grid
    out.append(
        '<div class="grid-wrap" role="region" aria-labelledby="grid-caption" tabindex="0">'
        '<table id="matrix" class="grid"><caption id="grid-caption" class="visually-hidden">'
        "Verdict per capability row (rows) and target (columns)</caption>"
        '<colgroup><col class="first">' + "<col>" * len(cols) + "</colgroup>"
        '<thead><tr><th scope="col" class="corner">Capability</th>'
        + "".join(
            f'<th scope="col" class="target" data-target="t{i}" title="{_e(c.name)}">'
            f"<span>{_e(c.name)}{_own_mark(c)}</span></th>"
            for i, c in enumerate(cols)
        )
        + "</tr></thead><tbody>"
    )
    details = []
    for section in capabilities.SECTIONS:
        rows = matrix.rows_in_section(section.anchor)
        if not rows:
            continue
        out.append(
            f'<tr class="section"><th scope="colgroup" colspan="{len(cols) + 1}" id="{_e(section.anchor)}">'
            f"<span>{_e(section.description)}</span></th></tr>"
        )
        for row in rows:
            n_caps = len(matrix.capabilities_in_row(row.name))
            out.append(
                f'<tr class="row" data-search="{_e(_search_text(matrix, row))}">'
                f'<th scope="row" title="{_e(row.description)}">{_e(row.name)}'
                f'<span class="caps">{n_caps} capabilit{"y" if n_caps == 1 else "ies"}</span></th>'
                + "".join(_grid_cell(row.name, i, c, matrix.row_cell(row.name, c.name)) for i, c in enumerate(cols))
                + "</tr>"
            )
            details += [
                _cell_cases(matrix, row.name, i, c)
                for i, c in enumerate(cols)
                if matrix.row_cell(row.name, c.name).cases
            ]
    out.append("</tbody></table></div>")
    out.append(
        '<p class="intro">Generated by <code>beam-conformance report</code> from the suite\'s results. '
        "Yes: every case that ran passes; Partially: some do; No: none do; not tested: no case ran "
        "(skipped cases do not count).</p>"
    )
    out.append(_targets_table(cols))
    out += _java_vr_section(matrix)
    out += _generated_section(matrix)
    out.append(
        '<h2 id="cases-heading">Cases per cell</h2><section id="cases" aria-labelledby="cases-heading">'
        + "".join(details)
        + "</section>"
    )
    out.append(
        '<dialog id="cases-dialog" aria-labelledby="cases-dialog-title"><div class="dialog-head">'
        '<h2 id="cases-dialog-title">Cases</h2><button type="button" class="close" aria-label="Close">×</button>'
        '</div><div class="dialog-body"></div></dialog>'
    )
    out.append(f"</main><script>{_asset('matrix.js')}</script></body></html>")
    return "\n".join(out) + "\n"


def _java_vr_cell(cell: Cell | None) -> str:
    if cell is None or not cell.cases:
        return '<td class="v-none"><span class="visually-hidden">no test</span>–</td>'
    skipped = f", {len(cell.skipped)} skipped" if cell.skipped else ""
    if not cell.ran:
        return f'<td class="v-none">–<span class="jv-note">{len(cell.skipped)} skipped</span></td>'
    return (
        f'<td class="{_verdict_class(cell)}"><span class="sym" aria-hidden="true">{SYMBOL[cell.verdict]}</span> '
        f'<span class="visually-hidden">{VERDICT_WORD[cell.verdict]}: </span>{len(cell.passing)}/{len(cell.ran)}'
        f'<span class="jv-note">{_e(skipped.lstrip(", "))}</span></td>'
    )


def _java_vr_failures(index: int, run: JavaVrRun) -> str:
    failing = run.failing
    if not failing:
        return ""
    items = []
    for case in failing:
        known = (
            f'<div class="known">known failure: {_e(case["known_failure"])}</div>' if case.get("known_failure") else ""
        )
        message = "\n".join(case["message"].strip().splitlines()[:12]) or "(no message)"
        items.append(
            f'<li class="failing"><span class="outcome">{_e(case["outcome"])}</span> '
            f"<code>{_e(case['id'].removeprefix('java_vr/'))}</code>{known}"
            f'<pre class="message">{_e(message)}</pre></li>'
        )
    return (
        f'<details class="cell-cases" id="java-vr-failing-{index}"><summary>Failing Java tests on '
        f"{_e(run.name)} ({len(failing)})</summary>"
        f'<ul class="cases">{"".join(items)}</ul></details>'
    )


def _java_vr_section(matrix: Matrix) -> list[str]:
    """Beam's Java ValidatesRunner suite: counts per target, verdicts per matrix row, failing tests."""
    runs = matrix.java_vr
    if not runs:
        return []
    head = "".join(
        f'<th scope="col">{h}</th>' for h in ("target", "Beam", "profile", *(label for label, _ in COUNTS), "wall time")
    )
    target_rows = []
    for run in runs:
        s, sel = run.summary, run.selection
        profile = sel.get("profile", "?") + (" (all)" if sel.get("selection") == "all" else "")
        cells = [
            sel.get("beam_java", "?"),
            profile,
            *(s.get(key, 0) for _, key in COUNTS),
            f"{run.wall_time_s:g} s",
        ]
        target_rows.append(
            f'<tr><th scope="row" title="{_e(sel.get("profile_source", ""))}">{_e(run.name)}</th>'
            + "".join(f"<td>{_e(c)}</td>" for c in cells)
            + "</tr>"
        )
    row_rows = []
    for row in matrix.java_vr_rows():
        cells = "".join(_java_vr_cell(r.rows.get(row)) for r in runs)
        row_rows.append(f'<tr><th scope="row">{_e(row)}</th>{cells}</tr>')
    sources = "".join(f"<li><b>{_e(r.name)}</b>: {_e(r.selection.get('profile_source', ''))}</li>" for r in runs)
    return [
        '<h2 id="java-vr-heading">Beam\'s Java ValidatesRunner suite</h2>'
        '<section class="java-vr" aria-labelledby="java-vr-heading">'
        "<p class=\"intro\">The ValidatesRunner JUnit tests of Beam's Java SDK core, run with Beam's "
        "<code>TestUniversalRunner</code> against each target's Job API endpoint (<code>--suite java-vr</code>). "
        "A target runs what Beam's own Gradle task runs for its kind of runner (its profile); the other tests "
        "are skipped. Known failures come from the target's expectations file. Each test counts in the row "
        "its Beam categories, else its class, place it in.</p>"
        '<div class="jv-wrap" role="region" aria-labelledby="java-vr-runs" tabindex="0">'
        '<table class="jv"><caption id="java-vr-runs">Java ValidatesRunner runs per target</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(target_rows)}</tbody></table></div>"
        f'<ul class="jv-sources">{sources}</ul>'
        '<div class="jv-wrap" role="region" aria-labelledby="java-vr-rows" tabindex="0">'
        '<table class="jv"><caption id="java-vr-rows">Java tests passing of tests run, per matrix row</caption>'
        '<thead><tr><th scope="col">matrix row</th>'
        + "".join(f'<th scope="col">{_e(r.name)}</th>' for r in runs)
        + f"</tr></thead><tbody>{''.join(row_rows)}</tbody></table></div>"
        + "".join(_java_vr_failures(i, r) for i, r in enumerate(runs))
        + "</section>"
    ]


def _generated_section(matrix: Matrix) -> list[str]:
    """Generated pipelines: per target the pipelines run, and its deviations by signature."""
    runs = matrix.generated
    if not runs:
        return []
    head = "".join(
        f'<th scope="col">{h}</th>'
        for h in ("target", "drawn", "run", *(label for label, _ in COUNTS), "signatures", "wall time")
    )
    target_rows = "".join(
        f'<tr><th scope="row">{_e(run.name)}</th>'
        + "".join(
            f"<td>{_e(c)}</td>"
            for c in (
                run.drawn_text,
                run.ran,
                *(run.summary.get(key, 0) for _, key in COUNTS),
                len(run.deviations),
                f"{run.wall_time_s:g} s",
            )
        )
        + "</tr>"
        for run in runs
    )
    deviations = []
    for run in runs:
        if not run.deviations:
            continue
        items = "".join(
            f'<li class="failing"><code>{_e(d.signature)}</code>: {d.pipelines} pipeline(s), first '
            f"<code>{_e(d.first)}</code>; counts against <b>{_e(d.row)}</b> (<code>{_e(d.capability)}</code>)"
            + (f'<div class="known">known: {_e(d.known)}</div>' if d.known else "")
            + "</li>"
            for d in run.deviations
        )
        deviations.append(
            f'<details class="cell-cases"><summary>Deviations on {_e(run.name)} ({len(run.deviations)} '
            f'signatures)</summary><ul class="cases">{items}</ul></details>'
        )
    return [
        '<h2 id="generated-heading">Generated pipelines</h2>'
        '<section class="java-vr" aria-labelledby="generated-heading">'
        '<p class="intro">Pipelines the kit generated from a seed (<code>beam-conformance generate</code>) and '
        "judged against its executable model of Beam. Deviations are grouped by signature, the rule broken and "
        "the transforms of the minimal program; each counts against the row of its minimal program's "
        "capability.</p>"
        '<div class="jv-wrap" role="region" aria-labelledby="generated-runs" tabindex="0">'
        '<table class="jv"><caption id="generated-runs">Generated pipelines per target</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{target_rows}</tbody></table></div>" + "".join(deviations) + "</section>"
    ]
