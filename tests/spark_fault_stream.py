"""A streaming pipeline on the Spark backend disturbed once, run as its own process (one
SparkSession per process): ``python -m tests.spark_fault_stream MASTER FAULT MARKER_DIR``.

FAULT: ``task`` (the Python worker running a DoFn dies at one element, once: Spark runs the task
again; a DoFn that raises would fail the job at once, spark/failure_inbox.py), ``executor`` (the
same DoFn kills the executor JVM it runs under, once: a standalone cluster starts another and
Spark recomputes what was lost), or ``none``. Either way the output must be
what the model says (checked inside the pipeline) and the committed counter must count every
element once. Every element's bundle is finalized: once (``task``, ``none``: a bundle is
finalized only after its task's whole output went to Spark, so the failed attempt finalizes
nothing), at least once (``executor``: recomputing a lost partition runs its bundles again).
Exit status 0 when all of it holds.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing import test_stream
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms import window

ELEMENTS = 60  # value i at i seconds, in three TestStream events of 20
VICTIM = 25  # the element at which the fault strikes, once


def _executor_jvm(pid: int) -> int | None:
    """The executor JVM among this process's ancestors (Python workers fork from a daemon the
    executor started)."""
    while pid > 1:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if b"CoarseGrainedExecutorBackend" in f.read():
                return pid
        with open(f"/proc/{pid}/stat") as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])
    return None


class _FaultOnce(beam.DoFn):
    def __init__(self, fault: str, marker_dir: str):
        self.fault, self.marker = fault, os.path.join(marker_dir, "struck")
        self.finalized = os.path.join(marker_dir, "finalized")

    def process(self, kv, finalizer=beam.DoFn.BundleFinalizerParam):
        Metrics.counter("fault", "seen").inc()
        finalizer.register(lambda: _append(self.finalized, kv[1]))
        if kv[1] == VICTIM and self.fault != "none" and not os.path.exists(self.marker):
            open(self.marker, "w").close()
            if self.fault == "executor":
                jvm = _executor_jvm(os.getpid())
                if jvm is None:
                    raise RuntimeError("no executor JVM above this worker: not on a standalone cluster")
                os.kill(jvm, signal.SIGKILL)
            os.kill(os.getpid(), signal.SIGKILL)  # a crash, not an error of the DoFn's
        yield kv


def _append(path: str, value) -> None:
    with open(path, "a") as out:
        out.write(f"{value}\n")


def main(master: str, fault: str, marker_dir: str) -> int:
    from reference_runner.spark.spark_runner import SparkRunner

    stream = test_stream.TestStream()
    for start in range(0, ELEMENTS, 20):
        stream = stream.add_elements(
            [window.TimestampedValue((f"k{i % 3}", i), i) for i in range(start, start + 20)]
        ).advance_watermark_to(start + 20)
    stream = stream.advance_watermark_to_infinity()
    # bundles of one element: a task commits bundles before the one that fails
    options = PipelineOptions(["--streaming", "--spark_bundle_size=1"])
    p = beam.Pipeline(runner=SparkRunner(master=master), options=options)
    sums = (
        p
        | stream
        | beam.ParDo(_FaultOnce(fault, marker_dir))
        | beam.WindowInto(window.FixedWindows(10))
        | beam.CombinePerKey(sum)
        | beam.Map(lambda kv, w=beam.DoFn.WindowParam: (kv[0], int(w.start), kv[1]))
    )
    expected = {}
    for i in range(ELEMENTS):
        key = (f"k{i % 3}", i // 10 * 10)
        expected[key] = expected.get(key, 0) + i
    assert_that(sums, equal_to([(k, start, total) for (k, start), total in expected.items()]))
    result = p.run()
    result.wait_until_finish()
    seen = {c.key.metric.name: c.committed for c in result.metrics().query(MetricsFilter())["counters"]}
    struck = os.path.exists(os.path.join(marker_dir, "struck"))
    print(f"seen={seen.get('seen')} struck={struck}")
    if seen.get("seen") != ELEMENTS:
        print(f"committed counter {seen.get('seen')}, expected {ELEMENTS}", file=sys.stderr)
        return 1
    if fault != "none" and not struck:
        print("the fault never struck", file=sys.stderr)
        return 1
    with open(os.path.join(marker_dir, "finalized")) as f:
        finalized = sorted(int(line) for line in f.read().split())
    once = fault != "executor"
    if (finalized if once else sorted(set(finalized))) != list(range(ELEMENTS)):
        print(f"finalized {finalized}, expected each of 0..{ELEMENTS - 1} {'once' if once else ''}", file=sys.stderr)
        return 1
    return 0


def run_in_own_process(master: str, fault: str, marker_dir) -> None:
    """For tests: run this module in a process of its own and check that it held."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    done = subprocess.run(
        [sys.executable, "-m", "tests.spark_fault_stream", master, fault, str(marker_dir)],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=root,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "seen=60 struck=True" in done.stdout


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
