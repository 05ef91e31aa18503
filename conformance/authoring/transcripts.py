"""Scripted trigger scenarios (fixtures/transcripts/*.yaml): a windowing strategy, then steps
(element batches, watermark and processing-time advances) and the exact panes each step makes
the GroupByKey emit. conformance/cases/test_transcripts.py runs every file through TestStream.

    about: what the scenario pins down
    capability: triggers.count              # the capability it is reported under
    window_fn: FixedWindows(10)             # FixedWindows, SlidingWindows, Sessions, GlobalWindows
    trigger: Repeatedly(AfterCount(2))      # Beam's Python trigger classes, by name
    accumulation: discarding                # or accumulating
    allowed_lateness: 0                     # seconds (default 0)
    timestamp_combiner: end_of_window       # or earliest, latest (default end_of_window)
    steps:
      - elements: [1, 2]                    # event times in seconds; each value is its event time
        key: k                              # optional (default k)
        expect:                             # the panes this step fires
          - {window: [0, 10], values: [1, 2], timestamp: 9.999, timing: EARLY, index: 0, nonspec: -1, last: false}
      - processing_time: 5                  # advance processing time by 5 s
      - watermark: 10                       # advance the watermark to 10 s; the last step is `watermark: inf`

Panes are exact: key (default k), window [start, end) in seconds or `global`, the sorted
values, the timestamp (seconds, or `end_of_global_window`) and every PaneInfo field (is_first
is index == 0).
"""

from __future__ import annotations

import ast
import glob
import os
from dataclasses import dataclass, field

import yaml
from apache_beam.transforms import trigger, window
from apache_beam.utils.timestamp import Timestamp

from conformance.authoring.elements import END_OF_GLOBAL_WINDOW_MS, GLOBAL, W, el, pane

_WINDOW_FNS = {
    "FixedWindows": window.FixedWindows,
    "SlidingWindows": window.SlidingWindows,
    "Sessions": window.Sessions,
    "GlobalWindows": window.GlobalWindows,
}
_TRIGGERS = {
    "AfterWatermark": trigger.AfterWatermark,
    "AfterCount": trigger.AfterCount,
    "AfterProcessingTime": trigger.AfterProcessingTime,
    "AfterAny": trigger.AfterAny,
    "AfterAll": trigger.AfterAll,
    "AfterEach": trigger.AfterEach,
    "Repeatedly": trigger.Repeatedly,
    "OrFinally": trigger.OrFinally,
    "Never": trigger._Never,
    "Always": trigger.Always,
    "Default": trigger.DefaultTrigger,
    "DefaultTrigger": trigger.DefaultTrigger,
}
_COMBINERS = {
    "end_of_window": window.TimestampCombiner.OUTPUT_AT_EOW,
    "earliest": window.TimestampCombiner.OUTPUT_AT_EARLIEST,
    "latest": window.TimestampCombiner.OUTPUT_AT_LATEST,
}
END_OF_GLOBAL_WINDOW = Timestamp(micros=END_OF_GLOBAL_WINDOW_MS * 1000)
_TOP_KEYS = {
    "about",
    "capability",
    "window_fn",
    "trigger",
    "accumulation",
    "allowed_lateness",
    "timestamp_combiner",
    "steps",
}
_PANE_KEYS = {"key", "window", "values", "timestamp", "timing", "index", "nonspec", "last"}


class TranscriptError(ValueError):
    """A transcript file that does not follow the format (the message names file and place)."""


@dataclass
class Step:
    kind: str  # elements, watermark or processing_time
    value: object  # event times, a watermark (float or "inf") or a delay in seconds
    key: str = "k"
    expect: list = field(default_factory=list)  # conformance.authoring.elements.Elem


@dataclass
class Transcript:
    name: str
    about: str
    capability: str
    window_fn: object
    trigger: object
    accumulating: bool
    allowed_lateness: float
    timestamp_combiner: object
    steps: list[Step]

    def expected(self) -> list:
        return [e for step in self.steps for e in step.expect]


def directory() -> str | None:
    """$BEAM_CONFORMANCE_TRANSCRIPTS, else fixtures/transcripts of this checkout, else the copy an
    installed wheel carries (conformance/transcript_files, a link to fixtures/transcripts in the
    checkout)."""
    configured = os.environ.get("BEAM_CONFORMANCE_TRANSCRIPTS")
    if configured:
        return configured
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # conformance/
    for here in (
        os.path.join(os.path.dirname(package), "fixtures", "transcripts"),
        os.path.join(package, "transcript_files"),
    ):
        if os.path.isdir(here):
            return here
    return None


def load_all(path: str | None = None) -> list[Transcript]:
    path = path or directory()
    if path is None:
        return []
    return [load(f) for f in sorted(glob.glob(os.path.join(path, "*.yaml")))]


def load(path: str) -> Transcript:
    name = os.path.splitext(os.path.basename(path))[0]
    where = f"transcript {path}"
    with open(path) as f:
        try:
            doc = yaml.safe_load(f)
        except yaml.YAMLError as e:
            raise TranscriptError(f"{where}: not valid YAML: {e}") from None
    if not isinstance(doc, dict):
        raise TranscriptError(f"{where}: expected a mapping at the top")
    unknown = set(doc) - _TOP_KEYS
    if unknown:
        raise TranscriptError(f"{where}: unknown keys {sorted(unknown)} (known: {sorted(_TOP_KEYS)})")
    for required in ("about", "capability", "window_fn", "trigger", "accumulation", "steps"):
        if required not in doc:
            raise TranscriptError(f"{where}: missing {required!r}")
    if doc["accumulation"] not in ("accumulating", "discarding"):
        raise TranscriptError(f"{where}: accumulation must be accumulating or discarding")
    combiner = doc.get("timestamp_combiner", "end_of_window")
    if combiner not in _COMBINERS:
        raise TranscriptError(f"{where}: timestamp_combiner must be one of {sorted(_COMBINERS)}")
    steps = [_step(f"{where}, step {i + 1}", s) for i, s in enumerate(doc["steps"] or [])]
    if not steps or steps[-1].kind != "watermark" or steps[-1].value != "inf":
        raise TranscriptError(f"{where}: the last step must be `watermark: inf` (every window then expires)")
    return Transcript(
        name,
        doc["about"],
        doc["capability"],
        _construct(where, doc["window_fn"], _WINDOW_FNS),
        _construct(where, doc["trigger"], _TRIGGERS),
        doc["accumulation"] == "accumulating",
        float(doc.get("allowed_lateness", 0)),
        _COMBINERS[combiner],
        steps,
    )


def _step(where: str, raw) -> Step:
    if not isinstance(raw, dict):
        raise TranscriptError(f"{where}: expected a mapping")
    kinds = [k for k in ("elements", "watermark", "processing_time") if k in raw]
    if len(kinds) != 1:
        raise TranscriptError(f"{where}: needs exactly one of elements, watermark, processing_time")
    unknown = set(raw) - {kinds[0], "key", "expect"}
    if unknown:
        raise TranscriptError(f"{where}: unknown keys {sorted(unknown)}")
    kind, value = kinds[0], raw[kinds[0]]
    if kind == "elements" and not (isinstance(value, list) and all(isinstance(v, (int, float)) for v in value)):
        raise TranscriptError(f"{where}: elements must be a list of event times in seconds")
    if kind == "watermark" and value != "inf" and not isinstance(value, (int, float)):
        raise TranscriptError(f"{where}: watermark must be a time in seconds or inf")
    if kind == "processing_time" and not (isinstance(value, (int, float)) and value > 0):
        raise TranscriptError(f"{where}: processing_time must be a positive number of seconds")
    return Step(kind, value, str(raw.get("key", "k")), [_pane(f"{where}, expect", p) for p in raw.get("expect") or []])


def _pane(where: str, raw):
    if not isinstance(raw, dict) or set(raw) - _PANE_KEYS or _PANE_KEYS - {"key"} - set(raw):
        raise TranscriptError(f"{where}: a pane has exactly {sorted(_PANE_KEYS)} (key optional), got {raw}")
    if raw["timing"] not in ("EARLY", "ON_TIME", "LATE"):
        raise TranscriptError(f"{where}: timing must be EARLY, ON_TIME or LATE")
    if raw["window"] == "global":
        win = GLOBAL
    else:
        start, end = raw["window"]
        win = W(start, end)
    at = END_OF_GLOBAL_WINDOW if raw["timestamp"] == "end_of_global_window" else raw["timestamp"]
    info = pane(
        first=raw["index"] == 0,
        last=bool(raw["last"]),
        timing=raw["timing"],
        index=raw["index"],
        nonspec=raw["nonspec"],
    )
    return el((str(raw.get("key", "k")), sorted(raw["values"])), at, win, info)


def _construct(where: str, text: str, names: dict):
    """Build ``text`` (a call expression over ``names``, numbers and keywords) without eval."""
    try:
        tree = ast.parse(str(text), mode="eval").body
        return _build(tree, names)
    except (SyntaxError, ValueError, TypeError) as e:
        raise TranscriptError(f"{where}: cannot build {text!r}: {e}") from None


def _build(node, names: dict):
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_build(node.operand, names)
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]()
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names:
        args = [_build(a, names) for a in node.args]
        kwargs = {k.arg: _build(k.value, names) for k in node.keywords}
        return names[node.func.id](*args, **kwargs)
    raise ValueError(f"only calls of {sorted(names)} with numbers are allowed, not {ast.dump(node)[:60]}")
