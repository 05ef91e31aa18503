"""Memory and throughput of the Spark backend's streaming (micro-batches) on a long stream, side by
side with the reference runner on the same stream in the same run.

The stream of benchmarks/streaming_memory.py: timestamped elements from a self-checkpointing
splittable DoFn (its watermark estimator advancing with the data) through fixed windows and a
count per key. On Spark the windows' state lives in state RDDs on the executors and is dropped
as windows expire, so the resident memory of the driver (its Python process and its JVM) and of
Spark's Python workers should stay flat after warm-up.

    python -m benchmarks.spark_streaming_memory --elements 10000000 --json reports/benchmark-spark-streaming.json

Reports elements per second of each runner and their ratio, and RSS samples (MiB) at each tenth
of the Spark stream: the driver process, its JVM, and Spark's Python workers (summed). Every
window's count is checked through the job's committed metrics.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.transforms import window

from benchmarks.report import write_json
from benchmarks.streaming_memory import Ticks
from reference_runner import ReferenceRunner


class _Count(beam.DoFn):
    """Counts windows, elements and wrong counts as metrics (Spark's workers run it)."""

    def __init__(self, per_window_key: int):
        self.per_window_key = per_window_key

    def process(self, kv):
        Metrics.counter("bench", "windows").inc()
        Metrics.counter("bench", "counted").inc(kv[1])
        if kv[1] != self.per_window_key:
            Metrics.counter("bench", "wrong").inc()


def _counters(result) -> dict:
    try:
        found = result.metrics().query(MetricsFilter())["counters"]
    except Exception:  # noqa: BLE001 - not yet available while the job starts
        return {}
    return {c.key.metric.name: c.committed or 0 for c in found if c.key.metric.namespace == "bench"}


def _rss_mib(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _children(pid: int) -> list[int]:
    """Children of every thread of ``pid`` (the JVM is started by whichever thread first asked
    for the SparkSession, and the kernel lists a child under the thread that forked it)."""
    found: list[int] = []
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for thread in threads:
        try:
            with open(f"/proc/{pid}/task/{thread}/children") as f:
                found += [int(p) for p in f.read().split()]
        except OSError:
            continue
    return found


def _descendants(pid: int) -> list[int]:
    found, todo = [], _children(pid)
    while todo:
        p = todo.pop()
        found.append(p)
        todo += _children(p)
    return found


def _process_name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _memory() -> dict:
    """RSS in MiB: this (driver) process, its JVM, Spark's Python workers (daemon and workers)."""
    me = os.getpid()
    jvm = workers = 0.0
    for pid in _descendants(me):
        name = _process_name(pid)
        if "java" in name.split(" ")[0]:
            jvm += _rss_mib(pid)
        elif "pyspark" in name or "reference_runner.spark.daemon" in name:
            workers += _rss_mib(pid)
    return {"driver": round(_rss_mib(me), 1), "jvm": round(jvm, 1), "python_workers": round(workers, 1)}


def _pipeline(p, args) -> None:
    per_window = args.window * 1000
    (
        p
        | beam.Create([{"count": args.elements, "chunk": args.chunk, "keys": args.keys}])
        | beam.ParDo(Ticks())
        | beam.WindowInto(window.FixedWindows(args.window))
        | beam.CombinePerKey(sum)
        | beam.ParDo(_Count(per_window // args.keys))
    )


def _run(runner, args, sample: bool) -> tuple[float, dict, list]:
    p = beam.Pipeline(runner=runner, options=PipelineOptions(["--streaming"]))
    _pipeline(p, args)
    started = time.perf_counter()
    result = p.run()
    samples: list = []
    done = threading.Event()

    def watch():
        while not done.wait(1.0):
            counted = _counters(result).get("counted", 0)
            if sample:
                samples.append((time.perf_counter() - started, counted, _memory()))
            print(f"\r{counted / args.elements:6.1%} of the stream", end="", file=sys.stderr, flush=True)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    result.wait_until_finish()
    elapsed = time.perf_counter() - started
    done.set()
    watcher.join()
    print(file=sys.stderr)
    return elapsed, _counters(result), samples


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.spark_streaming_memory", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--elements", type=int, default=10_000_000, help="elements in the stream (default 10M)")
    parser.add_argument("--keys", type=int, default=10, help="distinct keys (default 10)")
    parser.add_argument("--window", type=int, default=1, help="fixed window size in seconds (default 1: 1000 elements)")
    parser.add_argument(
        "--chunk", type=int, default=100_000, help="elements per self-checkpoint, one micro-batch (default 100000)"
    )
    parser.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    parser.add_argument("--skip-reference", action="store_true", help="run the Spark backend only (no ratio)")
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the figures as JSON to PATH")
    args = parser.parse_args(argv)
    per_window = args.window * 1000
    if per_window % args.keys or args.elements % per_window:
        parser.error("--window * 1000 must be a multiple of --keys, and --elements of --window * 1000")
    from reference_runner.spark.spark_runner import SparkRunner

    expected = {"windows": args.elements // per_window * args.keys, "counted": args.elements}
    figures: dict = {"elements": args.elements, "keys": args.keys, "chunk": args.chunk, "master": args.master}
    runs = [("spark", SparkRunner(master=args.master), True)]
    if not args.skip_reference:
        runs.insert(0, ("reference", ReferenceRunner(), False))
    for name, runner, sample in runs:
        print(f"{name}:", file=sys.stderr)
        elapsed, found, samples = _run(runner, args, sample)
        if found.get("wrong") or any(found.get(k) != v for k, v in expected.items()):
            print(f"{name}: wrong result {found}, expected {expected}", file=sys.stderr)
            return 1
        figures[f"{name}_seconds"] = round(elapsed, 1)
        figures[f"{name}_elements_per_second"] = round(args.elements / elapsed)
        if sample and args.master.startswith("local") and not any(m["jvm"] for _, _, m in samples):
            print(f"{name}: no Spark JVM found among this process's descendants to sample", file=sys.stderr)
            return 1
        if sample:
            tenths: dict = {}
            for _, counted, memory in samples:
                tenths.setdefault(min(10, counted * 10 // args.elements), memory)
            figures[f"{name}_rss_mib_at_each_tenth"] = {f"{k * 10}%": v for k, v in sorted(tenths.items())}
    if not args.skip_reference:
        figures["spark_over_reference"] = round(
            figures["spark_elements_per_second"] / figures["reference_elements_per_second"], 3
        )
    print(json.dumps(figures, indent=2))
    write_json(args.json, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
