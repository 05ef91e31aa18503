"""An expectations file from a run's failures (``beam-conformance baseline``).

A new runner fails many cases on its first run; this turns that run into a gate. Each
failing case becomes a known failure whose reason is its failure message, condensed to one
line (edit it). Cases whose every deviation lies in one cross-cutting property the kit detects
(their records name it: ``cross_cutting``, e.g. pane metadata) become one property entry, when
there are at least two: it covers every case that fails that way, in this run and later ones. A
capability whose cases all fail becomes one capability entry, when the run
was not narrowed (no ``-k``/``-m`` deselection, every case module collected: results record
that) and the capability has at least two cases. ``update`` merges a newer run into an existing file: entries
whose cases now pass go, entries that still fail stay as written (reason, issue, skip, flaky),
and a glob or capability entry with some cases passing is narrowed to the cases still failing.
A run of generated pipelines gives one signature entry per deviation signature.
"""

from __future__ import annotations

import datetime
import re

import yaml

from conformance import capabilities
from conformance.session import results
from conformance.session.expectations import Expectations, KnownFailure, detected_property, parse

PASSING = ("passed", "unexpected-pass")
FAILING = ("failed", "expected-failure", "error")
REASON_LIMIT = 240
_CHECK_LINE = re.compile(r"^check '[^']*': (.*)$", re.M)


def reason_of(record: dict) -> str:
    """One editable line saying why a case failed, from its results record."""
    if record.get("outcome") == "expected-failure" and record.get("known_failure"):
        return record["known_failure"]
    message = (record.get("message") or "").strip()
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    if not lines:
        return f"{record.get('outcome', 'failed')} without a message"
    deviation = next((line for line in lines if "model deviation [" in line), None)
    if record.get("signature") and deviation is not None:
        # a generated pipeline's: the rule broken and where, as the model's judge said it
        text = deviation[deviation.index("model deviation [") :]
    elif lines[0].startswith("output differs from the Beam model"):
        checks = _CHECK_LINE.findall(message)
        text = "output differs from the Beam model: " + (checks[0] if checks else lines[-1])
    elif lines[0].startswith("the job failed on"):
        # The runner's traceback follows; its last line names the error.
        text = "the job failed: " + lines[-1]
    else:
        text = results.first_line(message)
        if str(record.get("id", "")).startswith("java_vr/"):
            text = results.innermost_cause(text)
    return text if len(text) <= REASON_LIMIT else text[: REASON_LIMIT - 3] + "..."


def _case_entry(record: dict, template: dict | None = None) -> dict:
    """A case entry; ``template`` (an existing entry) lends its reason, issue and flags."""
    if template is None:
        return {"case": record["id"], "reason": reason_of(record)}
    entry = {"case": record["id"]}
    entry.update({k: v for k, v in template.items() if k not in ("case", "capability")})
    return entry


def _property_entries(failing: list[dict]) -> tuple[list[dict], list[dict]]:
    """One property entry per property in which at least two failing cases deviate, and the
    failing records left for case and capability entries."""
    by_prop: dict[str, list[dict]] = {}
    for r in failing:
        prop = detected_property(r)
        if prop is not None:
            by_prop.setdefault(prop, []).append(r)
    entries = []
    taken: set[str] = set()
    for prop, deviating in sorted(by_prop.items()):
        if len(deviating) < 2:
            continue
        reasons = list(dict.fromkeys(reason_of(r) for r in deviating))
        reason = (
            reasons[0]
            if len(reasons) == 1
            else f"{len(deviating)} cases deviate only in {prop} "
            f"({capabilities.CROSS_CUTTING[prop].description}); first: {reasons[0]}"
        )
        entries.append({"property": prop, "reason": reason})
        taken |= {r["id"] for r in deviating}
    return entries, [r for r in failing if r["id"] not in taken]


def _signature_entries(failing: list[dict]) -> tuple[list[dict], list[dict]]:
    """Generated pipelines: one signature entry per deviation signature (a thousand pipelines of
    one bug are one entry), and the failing records that carry none."""
    grouped = results.deviations_by_signature(failing)
    entries = [{"signature": sig, "reason": reason_of(records[0])} for sig, records in grouped.items()]
    return entries, [r for r in failing if not r.get("signature")]


def _collapse(new_failing: list[dict], records: list[dict], narrowed: bool) -> list[dict]:
    """One signature entry per deviation signature of generated pipelines, one property entry per
    property two or more cases deviate in alone, case entries for the rest of ``new_failing``, one
    capability entry where all of a capability's cases in the run fail (and the run was the whole
    suite)."""
    by_signature, new_failing = _signature_entries(new_failing)
    entries, new_failing = _property_entries(new_failing)
    entries = by_signature + entries
    by_cap: dict[str, list[dict]] = {}
    for r in new_failing:
        by_cap.setdefault(r["capability"], []).append(r)
    order = {c.id: i for i, c in enumerate(capabilities.CAPABILITIES)}
    for cap_id, failing in sorted(by_cap.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])):
        failing = sorted(failing, key=lambda r: r["id"])
        of_cap = [r for r in records if r["capability"] == cap_id]
        collapse = not narrowed and cap_id in capabilities.BY_ID and len(failing) >= 2 and len(failing) == len(of_cap)
        if not collapse:
            entries += [_case_entry(r) for r in failing]
            continue
        reasons = list(dict.fromkeys(reason_of(r) for r in failing))
        reason = reasons[0] if len(reasons) == 1 else f"all {len(failing)} cases fail; first: {reasons[0]}"
        entries.append({"capability": cap_id, "reason": reason})
    return entries


def _coverage(entries: list[KnownFailure], records: list[dict]) -> dict[int, list[dict]]:
    """Entry index -> the records it decides (case entries win, as in Expectations.lookup)."""
    covered: dict[int, list[dict]] = {}
    expectations = Expectations(entries)
    index = {id(e): i for i, e in enumerate(entries)}
    for r in records:
        known = expectations.lookup(r["id"], r["capability"])
        # the plugin's own verdict: a property entry decides a failure no other entry covers
        entry = expectations.judge(known, r["outcome"] in FAILING, detected_property(r), r.get("signature")).entry
        if entry is not None:
            covered.setdefault(index[id(entry)], []).append(r)
    return covered


def _no_capability_entries(run: dict) -> bool:
    """Capability entries only from a whole run of the kit's cases: Java ValidatesRunner tests are
    matched by their java_vr/ ids alone (conformance/session/expectations.py)."""
    return results.narrowed(run) or results.suite_of(run) != "cases"


def build(run: dict, source: str = "") -> dict:
    """A fresh expectations document from one results document."""
    records = run["cases"]
    failing = [r for r in records if r["outcome"] in FAILING]
    entries = _collapse(sorted(failing, key=lambda r: r["id"]), records, _no_capability_entries(run))
    document = {"target": run["target"], "description": _description(run, source)}
    if _runner_version(run):
        document["runner_version"] = _runner_version(run)
    return {**document, "known_failures": entries}


def _runner_version(run: dict) -> str | None:
    """The runner's release as the target reported it (the file then says what it was written for)."""
    return (run.get("target_info") or {}).get("runner_version")


def update(existing: dict, run: dict, included: list[KnownFailure] = ()) -> tuple[dict, list[str]]:
    """Merge a newer run into an existing expectations document. Returns the new document and
    notes on what changed (for the user)."""
    raw = list(existing.get("known_failures") or [])
    own = parse({"known_failures": raw})
    entries = own + list(included)
    records = run["cases"]
    covered = _coverage(entries, records)
    notes: list[str] = []
    kept: list[dict] = []
    for i, (item, entry) in enumerate(zip(raw, own, strict=True)):
        decided = covered.get(i, [])
        passing = [r for r in decided if r["outcome"] in PASSING]
        still = [r for r in decided if r["outcome"] not in PASSING]  # failing, or skipped by it
        label = entry.case or (f"signature {entry.signature}" if entry.signature else f"capability {entry.capability}")
        if entry.property_name is not None:
            if decided or results.narrowed(run):
                kept.append(item)
            else:
                notes.append(f"dropped property {entry.property_name}: no case deviates only in it now")
            continue
        if not passing or entry.flaky:
            kept.append(item)
        elif not still:
            notes.append(f"dropped {label}: its {_n(len(passing))} now pass")
        else:
            kept += [_case_entry(r, item) for r in still]
            notes.append(f"narrowed {label} to the {_n(len(still))} still failing ({len(passing)} now pass)")
    for j in range(len(own), len(entries)):
        if any(r["outcome"] in PASSING for r in covered.get(j, [])) and not entries[j].flaky:
            notes.append(
                f"{entries[j].label()} in the included file "
                f"{entries[j].source} covers cases that now pass; edit that file"
            )
    covered_ids = {r["id"] for rs in covered.values() for r in rs}
    new_failing = sorted(
        (r for r in records if r["outcome"] in FAILING and r["id"] not in covered_ids), key=lambda r: r["id"]
    )
    added = _collapse(new_failing, records, _no_capability_entries(run))
    for entry in added:
        named = entry.get("case") or next(
            f"{k} {entry[k]}" for k in ("signature", "property", "capability") if k in entry
        )
        notes.append(f"added {named}: {entry['reason']}")
    document = {k: v for k, v in existing.items() if k != "known_failures"}
    document.setdefault("target", run["target"])
    version = _runner_version(run)
    if version and document.get("runner_version") != version:
        notes.append(f"runner_version: {document.get('runner_version')} -> {version} (the run's)")
        document["runner_version"] = version
    document["known_failures"] = kept + added
    return document, notes


def _n(count: int) -> str:
    return f"{count} case" if count == 1 else f"{count} cases"


def _description(run: dict, source: str) -> str:
    when = run.get("finished") or datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return (
        f"Generated by beam-conformance baseline from {source or 'a results file'} ({when}). "
        "Each reason is the case's failure message: replace it with the cause, add issue links."
    )


def dump(document: dict) -> str:
    header = (
        "# Known failures of a runner for the Beam conformance suite\n"
        "# (format: docs/testing-your-runner.md, 'Known failures').\n"
        "# `beam-conformance baseline RESULTS.json -o THIS_FILE --update` merges a newer run.\n"
    )
    return header + yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)
