"""Machine-readable results of one run: ``results-<target>.json`` for the kit's cases,
``results-<target>.java-vr.json`` for Beam's Java ValidatesRunner tests (``--suite java-vr``) and
``results-<target>.generated.json`` for generated pipelines (``-m generated``); the document's
``suite`` says which, and a run of several writes each."""

from __future__ import annotations

import datetime
import json
import os
import platform
import re
import sys
import tempfile
import time

from conformance import capabilities
from conformance.peers.artifacts import cache_dir

FORMAT = "beam-conformance-results/1"
# the kit's cases, Beam's Java ValidatesRunner tests, and the pipelines the kit generates (-m generated)
SUITES = ("cases", "java-vr", "generated")
OUTCOMES = ("passed", "failed", "expected-failure", "unexpected-pass", "skipped", "error")


def case_record(nodeid: str, props: dict, duration_s: float) -> dict:
    cap = capabilities.get(props["capability"])
    record = {
        "id": props["case_id"],
        "suite": props.get("suite", "cases"),
        "nodeid": nodeid,
        "capability": cap.id,
        "capability_title": cap.title,
        "matrix_row": cap.row,
        "beam_category": props.get("beam_category", cap.beam_category),
        "streaming": bool(props.get("streaming", cap.streaming)),
        "outcome": props["conformance_outcome"],
        "duration_s": round(duration_s, 3),
        "message": portable_paths(props.get("conformance_message", "")),
        "known_failure": props.get("known_failure"),
    }
    if props.get("java_categories") is not None:
        # one of Beam's Java ValidatesRunner tests: its own categories (the capability is placed from them)
        record["java_categories"] = list(props["java_categories"])
    if props.get("signature"):
        # a generated pipeline's deviation: its signature, and the capability its minimal program counts under
        record["signature"] = props["signature"]
        record["counts_against"] = props.get("counts_against", cap.id)
    if props.get("batch"):
        # the shared job it ran in (--batch-size), or why it ran alone after its batch
        record["batch"] = props["batch"]
        if props.get("batch_failure"):
            record["batch_failure"] = portable_paths(props["batch_failure"])
    if props.get("cross_cutting"):
        # every deviation lies in this property: the matrix counts it there (capabilities.CROSS_CUTTING),
        # and in the case's own row as passed (judged) or as not judged
        record["cross_cutting"] = props["cross_cutting"]
        record["judged"] = bool(props.get("judged", True))
    return record


_SITE_PACKAGES = re.compile(r"/[^\s\"']*/site-packages/")
# The kit's own modules, by their path from the checkout (or installation) that holds them
_KIT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep


def portable_paths(text: str) -> str:
    """Tracebacks and tool output name installed modules from site-packages on, the kit's own
    modules from the kit's root, what the kit built from <cache>/, files the run wrote under the
    temporary directory from <tmp>/, the rest of the home directory (a runner's Go module cache, a
    Maven repository) from ~/ and this interpreter as ``python``: not by this machine's paths."""
    text = _SITE_PACKAGES.sub("<site-packages>/", text.replace(sys.executable, "python"))
    text = text.replace(str(cache_dir()) + os.sep, "<cache>/").replace(_KIT_ROOT, "")
    text = text.replace(tempfile.gettempdir() + os.sep, "<tmp>/")
    return text.replace(os.path.expanduser("~") + os.sep, "~/")


def portable_info(info: dict) -> dict:
    """A target's description with its texts (a job-server command, a path) made portable."""
    return {k: portable_paths(v) if isinstance(v, str) else v for k, v in info.items()}


def first_line(message: str) -> str:
    """A failure message's first line, with the next one when the first only introduces it (ends
    with a colon, as a JVM's "The Runner experienced the following error during execution:" does)."""
    lines = [line.strip() for line in (message or "").splitlines() if line.strip()]
    if not lines:
        return ""
    if lines[0].endswith(":") and len(lines) > 1:
        return f"{lines[0]} {lines[1]}"
    return lines[0]


# a JVM exception's class and the start of its message, e.g. "java.lang.IllegalStateException: "
_JVM_EXCEPTION = re.compile(r"(?:[a-z_][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error): ")


def innermost_cause(text: str) -> str:
    """From a JVM failure's line, the last exception named in it with its message (the runner's
    and the harness's wrappers come first): the line itself when it names one or none."""
    found = list(_JVM_EXCEPTION.finditer(text))
    return text[found[-1].start() :] if len(found) > 1 else text


def _relative(path: str) -> str:
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def summarize(records: list[dict]) -> dict[str, int]:
    counts = {k: 0 for k in OUTCOMES}
    for r in records:
        counts[r["outcome"]] += 1
    return counts


def slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "target"


def write(
    results_dir: str,
    target: dict,
    expectations_path: str | None,
    records: list[dict],
    started: float,
    selection: dict | None = None,
    suite: str = "cases",
) -> str:
    os.makedirs(results_dir, exist_ok=True)
    finished = time.time()
    records = sorted(records, key=lambda r: r["id"])
    document = {
        "format": FORMAT,
        "suite": suite,
        "target": target["name"],
        "target_info": portable_info(target),
        "host": {"platform": platform.platform(), "cpus": os.cpu_count()},
        # relative to the working directory when inside it, so committed results name no machine
        "expectations": expectations_path and _relative(expectations_path),
        "started": _iso(started),
        "finished": _iso(finished),
        "wall_time_s": round(finished - started, 1),
        "summary": summarize(records),
        # how the run was narrowed (-k/-m, case modules left out): it says nothing about those cases
        "selection": selection or {"deselected": 0, "case_modules_not_collected": []},
        "cases": records,
    }
    path = os.path.join(results_dir, results_file_name(target["name"], suite))
    dump(document, path)
    return path


def dump(document: dict, path: str) -> None:
    """Write a results document to ``path`` as the session writes it (replacing it at once)."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(document, f, indent=1, sort_keys=False)
        f.write("\n")
    os.replace(tmp, path)


def results_file_name(target: str, suite: str = "cases") -> str:
    return f"results-{slug(target)}.json" if suite == "cases" else f"results-{slug(target)}.{suite}.json"


def junit_file_name(target: str, suite: str = "cases") -> str:
    """The JUnit XML beside a run's results: a Java-only run has its own, a run of both suites one."""
    return f"junit-{slug(target)}.java-vr.xml" if suite == "java-vr" else f"junit-{slug(target)}.xml"


def deviations_by_signature(records: list[dict]) -> dict[str, list[dict]]:
    """A generated run's deviations (failing cases, known or not) grouped by signature, the
    commonest first: a thousand failing pipelines of one bug are one entry."""
    grouped: dict[str, list[dict]] = {}
    for record in records:
        if record.get("signature") and record["outcome"] in ("failed", "expected-failure"):
            grouped.setdefault(record["signature"], []).append(record)
    return dict(sorted(grouped.items(), key=lambda kv: (-len(kv[1]), kv[0])))


def suite_of(document: dict) -> str:
    """Which suite a results document holds (documents before the field existed: the cases)."""
    return document.get("suite", "cases")


def run_key(document: dict) -> str:
    """How runs are told apart when paired or merged: the target, and the suite unless it is the cases."""
    suite = suite_of(document)
    return document["target"] if suite == "cases" else f"{document['target']} [{suite}]"


def narrowing(document: dict) -> list[str]:
    """What left part of the packaged suite out of the run: the options that narrowed it (``-k``,
    ``-m``, ``--per-capability``, paths, ``--deselect``) and the case modules not collected; empty
    for a whole run. Results written before ``narrowed_by`` existed say only how many were left out."""
    selection = document.get("selection")
    if selection is None:
        return []  # written before the kit recorded it: narrowed() assumes the worst
    said = list(selection.get("narrowed_by", []))
    if "narrowed_by" not in selection and selection.get("deselected"):
        said.append(f"{selection['deselected']} cases deselected")
    modules = selection.get("case_modules_not_collected") or []
    if modules:
        said.append("case modules not collected: " + ", ".join(modules))
    return said


def narrowed(document: dict) -> bool:
    """Did the run leave part of the packaged suite out? (Results without the record: assume so.)"""
    return document.get("selection") is None or bool(narrowing(document))


def load(path: str) -> dict:
    with open(path) as f:
        document = json.load(f)
    if document.get("format") != FORMAT:
        raise ValueError(f"{path} is not a beam-conformance results file (format {document.get('format')!r})")
    return document


def _iso(t: float) -> str:
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).isoformat(timespec="seconds")
