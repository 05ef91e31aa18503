"""Two of the Python SDK's own example pipelines (word count on a local file, the GroupIntoBatches
snippet) through `reference-runner serve`, with and without --experiments=pre_optimize=all, give
DirectRunner's output: benchmarks/sdk_examples.py run as a user runs it (the full list is its
default; see its --help)."""

import os
import subprocess
import sys

CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODES = ["reference", "reference+pre_optimize"]
EXAMPLES = ["wordcount_minimal", "snippets/groupintobatches"]


def test_sdk_examples_give_direct_runners_output_on_the_reference_job_server():
    command = [
        sys.executable,
        "-m",
        "benchmarks.sdk_examples",
        "--modes",
        ",".join(["direct", *MODES]),
        *(f"--only=^{name}$" for name in EXAMPLES),
    ]
    done = subprocess.run(command, cwd=CHECKOUT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    rows = [line.split() for line in done.stdout.splitlines()]
    verdicts = {(row[0], row[1]): row[2] for row in rows if len(row) >= 3 and row[1] in ["direct", *MODES]}
    assert verdicts == {
        **{(name, "direct"): "oracle" for name in EXAMPLES},
        **{(name, mode): "same" for name in EXAMPLES for mode in MODES},
    }, done.stdout
