"""The model's trigger rules replay every trigger transcript, step by step: the kit's own
(fixtures/transcripts, exact panes) and the Python SDK's (apache_beam/testing/data/
trigger_transcripts.yaml, partial panes, windows written [start, max_timestamp]). The model is
written from SEMANTICS 5, not from any runner, so these are its evidence."""

from __future__ import annotations

import glob
import os
import re

import apache_beam
import pytest
import yaml

from conformance.model import streaming, triggers, windows
from conformance.model.batch import EARLIEST, END_OF_WINDOW, LATEST
from conformance.model.time import END_OF_GLOBAL_WINDOW_MS

KIT = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "fixtures", "transcripts", "*.yaml")))
BEAM = os.path.join(os.path.dirname(apache_beam.__file__), "testing", "data", "trigger_transcripts.yaml")
COMBINERS = {
    "end_of_window": END_OF_WINDOW,
    "earliest": EARLIEST,
    "latest": LATEST,
    "OUTPUT_AT_EOW": END_OF_WINDOW,
    "OUTPUT_AT_EARLIEST": EARLIEST,
    "OUTPUT_AT_LATEST": LATEST,
}


def windowfn(text: str, unit: int):
    name, args = re.fullmatch(r"(\w+)\((.*)\)", text.strip()).groups()
    return windows.by_name(name, [int(a) * unit for a in args.split(",") if a.strip()])


def by_step(replay: streaming.Replay) -> dict[int, list]:
    out: dict[int, list] = {}
    for f in replay.firings:
        out.setdefault(f.step, []).append(f)
    return out


@pytest.mark.parametrize("path", KIT, ids=lambda p: os.path.basename(p)[:-5])
def test_model_replays_the_kits_transcript_exactly(path):
    spec = yaml.safe_load(open(path))
    strategy = streaming.Strategy(
        windowfn(spec["window_fn"], 1000),
        triggers.parse(spec["trigger"], unit=1000),
        spec.get("accumulation", "discarding") == "accumulating",
        int(spec.get("allowed_lateness", 0) * 1000),
        COMBINERS[spec.get("timestamp_combiner", "end_of_window")],
    )
    events, expected = [], {}
    for step in spec["steps"]:
        if "elements" in step:
            key = step.get("key", "k")
            events.append(streaming.Elements(tuple((key, v, v * 1000) for v in step["elements"])))
        elif "watermark" in step:
            if step["watermark"] == "inf":
                expected["end"] = step.get("expect", [])
                continue
            events.append(streaming.Watermark(int(step["watermark"] * 1000)))
        else:
            events.append(streaming.ProcessingTime(int(step["processing_time"] * 1000)))
        expected[len(events) - 1] = step.get("expect", [])
    expected[len(events)] = expected.pop("end", [])
    got = by_step(streaming.replay(events, strategy))

    def as_seen(f):
        window = "global" if isinstance(f.window, windows.Global) else [f.window.start / 1000, f.window.end / 1000]
        ts = "end_of_global_window" if f.timestamp == END_OF_GLOBAL_WINDOW_MS else f.timestamp / 1000
        return dict(
            key=f.key,
            window=window,
            values=list(f.values),
            timestamp=ts,
            timing=f.pane.timing,
            index=f.pane.index,
            nonspec=f.pane.nonspec,
            last=f.pane.last,
            first=f.pane.first,
        )

    for step, panes in expected.items():
        want = sorted(
            (dict({"key": "k", "first": p["index"] == 0}, **p) for p in panes),
            key=repr,
        )
        for p in want:
            if p["window"] != "global":
                p["window"] = [float(x) for x in p["window"]]
            if p["timestamp"] != "end_of_global_window":
                p["timestamp"] = float(p["timestamp"])
        assert sorted(map(as_seen, got.get(step, [])), key=repr) == want, f"step {step}"


def _beam_transcripts():
    specs = [s for s in yaml.safe_load_all(open(BEAM)) if s]
    usable = []
    for s in specs:
        if (
            "error" in s
            or s["name"].startswith("bad_")
            or "Custom" in s.get("window_fn", "")
            or "TRANSFORMED" in str(s.get("timestamp_combiner"))
        ):
            continue
        usable.append(pytest.param(s, id=s["name"]))
    return usable


@pytest.mark.parametrize("spec", _beam_transcripts())
def test_model_replays_the_python_sdks_transcript(spec):
    # Beam's harness counts whole units, writes windows [start, max_timestamp] (end - 1 unit), and
    # accumulates unless told otherwise; each `expect` lists what the actions since the last one fired.
    strategy = streaming.Strategy(
        windowfn(spec["window_fn"], 1),
        triggers.parse(spec["trigger_fn"]),
        spec.get("accumulation_mode", "accumulating") == "accumulating",
        int(spec.get("allowed_lateness", 0)),
        COMBINERS[spec.get("timestamp_combiner", "OUTPUT_AT_EOW")],
    )
    events, checkpoints = [], []
    for action in spec["transcript"]:
        if "input" in action:
            events.append(streaming.Elements(tuple(("k", v, v) for v in action["input"])))
        elif "watermark" in action:
            events.append(streaming.Watermark(int(action["watermark"])))
        elif "expect" in action:
            checkpoints.append((len(events), action["expect"]))
    # the replay ends with the watermark at the end of time: only panes fired within the script count
    firings = [f for f in streaming.replay(events, strategy).firings if f.step < len(events)]
    start = 0
    for until, expect in checkpoints:
        fired = [f for f in firings if start <= f.step < until]
        start = until
        assert len(fired) == len(expect), (until, fired, expect)
        for want in expect:
            matches = [f for f in fired if _matches(f, want)]
            assert matches, f"no pane matches {want}; fired: {fired}"
    assert not [f for f in firings if f.step >= start], "panes after the last expectation"


def _matches(f: streaming.Firing, want: dict) -> bool:
    checks = {
        "window": lambda w: [f.window.start, f.window.max_timestamp] == w,
        "values": lambda v: sorted(v) == list(f.values),
        "timestamp": lambda t: f.timestamp == t,
        "index": lambda i: f.pane.index == i,
        "nonspeculative_index": lambda i: f.pane.nonspec == i,
        "early": lambda b: (f.pane.timing == "EARLY") == b,
        "late": lambda b: (f.pane.timing == "LATE") == b,
        "final": lambda b: f.pane.last == b,
    }
    return all(checks[k](v) for k, v in want.items())
