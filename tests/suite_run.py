"""Run the conformance suite in a pytest subprocess, as a user does, and read its results."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def run_suite(
    target_args: list[str], results_dir: Path, *extra: str, timeout: float
) -> tuple[subprocess.CompletedProcess, dict]:
    """The suite against one target, two workers; its exit and its results file (results-<name>.json)."""
    command = [
        sys.executable,
        "-m",
        "pytest",
        "--pyargs",
        "conformance",
        *target_args,
        *extra,
        "-n",
        "2",
        "-p",
        "no:cacheprovider",
        "--show-capture=no",
        "--tb=line",
        "-q",
        "--results-dir",
        str(results_dir),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    written = sorted(results_dir.glob("results-*.json"))
    assert written, done.stdout[-3000:] + done.stderr[-2000:]
    return done, json.loads(written[0].read_text())


def unexpected(doc: dict, width: int = 300) -> list[str]:
    """The cases whose verdict broke the committed expectations: failed, passed unexpectedly, errored."""
    return [
        f"{c['id']}: {c['outcome']}: {c['message'][:width]}"
        for c in doc["cases"]
        if c["outcome"] in ("failed", "unexpected-pass", "error")
    ]
