"""Run the conformance suite in a pytest subprocess, as a user does, and read its results."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def suite_command(results_dir: Path, *args: str) -> list[str]:
    """The pytest command line that runs the packaged suite, writing its results into results_dir."""
    return [
        sys.executable,
        "-m",
        "pytest",
        "--pyargs",
        "conformance",
        "-p",
        "no:cacheprovider",
        "-q",
        "--results-dir",
        str(results_dir),
        *args,
    ]


def run_suite(
    target_args: list[str], results_dir: Path, *extra: str, timeout: float
) -> tuple[subprocess.CompletedProcess, dict]:
    """The suite against one target, two workers; its exit and its results file (results-<name>.json)."""
    command = suite_command(results_dir, *target_args, *extra, "-n", "2", "--show-capture=no", "--tb=line")
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
