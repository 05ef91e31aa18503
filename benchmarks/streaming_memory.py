"""Memory of the reference runner on an unbounded stream: timestamped elements from a
self-checkpointing splittable DoFn (its watermark estimator advancing with the data) through
fixed windows and a count per key. Once windows expire their state is collected, so resident
memory stays flat however long the stream runs.

    python -m benchmarks.streaming_memory --elements 10000000 --json reports/benchmark-streaming-memory.json

Reports elements per second and resident memory (RSS) sampled as the stream goes: peak, and
at each tenth of the stream. Every window's counts are checked as they come out.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time

import apache_beam as beam
from apache_beam.io.restriction_trackers import OffsetRange, OffsetRestrictionTracker
from apache_beam.io.watermark_estimators import ManualWatermarkEstimator
from apache_beam.transforms import window
from apache_beam.transforms.core import RestrictionProvider
from apache_beam.utils.timestamp import Timestamp

from benchmarks.report import write_json
from reference_runner import ReferenceRunner


class _Range(RestrictionProvider):
    def initial_restriction(self, element):
        return OffsetRange(0, element["count"])

    def create_tracker(self, restriction):
        return OffsetRestrictionTracker(restriction)

    def restriction_size(self, element, restriction):
        return restriction.size()


@beam.DoFn.unbounded_per_element()
class Ticks(beam.DoFn):
    """Element i is i % keys at i milliseconds; checkpoints every ``chunk`` elements, telling the
    runner (through its watermark estimator) that nothing earlier will follow."""

    def process(
        self,
        element,
        tracker=beam.DoFn.RestrictionParam(_Range()),
        estimator=beam.DoFn.WatermarkEstimatorParam(ManualWatermarkEstimator.default_provider()),
    ):
        self.chunk_started()
        start = tracker.current_restriction().start
        end = min(tracker.current_restriction().stop, start + element["chunk"])
        keys = element["keys"]
        i = start
        while i < end and tracker.try_claim(i):
            yield window.TimestampedValue((i % keys, 1), Timestamp(micros=i * 1000))
            i += 1
        estimator.set_watermark(Timestamp(micros=i * 1000))
        if i < tracker.current_restriction().stop:
            tracker.defer_remainder()

    def chunk_started(self):
        """Called as each chunk begins (tests observe the order of chunks and windows)."""


class _Progress:
    """Windows seen by the sink, shared with the memory sampler (the runner is in process)."""

    lock = threading.Lock()
    windows = 0
    counted = 0
    wrong: list = []


class _Sink(beam.DoFn):
    def __init__(self, per_window_key: int):
        self.per_window_key = per_window_key

    def process(self, kv, w=beam.DoFn.WindowParam):
        with _Progress.lock:
            _Progress.windows += 1
            _Progress.counted += kv[1]
            if kv[1] != self.per_window_key and len(_Progress.wrong) < 5:
                _Progress.wrong.append((kv, w))


def _rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.streaming_memory", description=__doc__.split("\n\n")[0])
    parser.add_argument("--elements", type=int, default=10_000_000, help="elements in the stream (default 10M)")
    parser.add_argument("--keys", type=int, default=10, help="distinct keys (default 10)")
    parser.add_argument("--window", type=int, default=1, help="fixed window size in seconds (default 1: 1000 elements)")
    parser.add_argument("--chunk", type=int, default=10_000, help="elements per self-checkpoint (default 10000)")
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the figures as JSON to PATH")
    args = parser.parse_args(argv)
    per_window = args.window * 1000
    if per_window % args.keys or args.elements % per_window:
        parser.error("--window * 1000 must be a multiple of --keys, and --elements of --window * 1000")
    samples: list[tuple[float, int, float]] = []  # (seconds, elements counted, RSS MiB)
    done = threading.Event()
    started = time.perf_counter()

    def sample():
        while not done.wait(0.25):
            samples.append((time.perf_counter() - started, _Progress.counted, _rss_mib()))
            print(
                f"\r{_Progress.counted / args.elements:6.1%} of the stream, RSS {samples[-1][2]:.0f} MiB",
                end="",
                file=sys.stderr,
                flush=True,
            )

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    with beam.Pipeline(runner=ReferenceRunner()) as p:
        (
            p
            | beam.Create([{"count": args.elements, "chunk": args.chunk, "keys": args.keys}])
            | beam.ParDo(Ticks())
            | beam.WindowInto(window.FixedWindows(args.window))
            | beam.CombinePerKey(sum)
            | beam.ParDo(_Sink(per_window // args.keys))
        )
    elapsed = time.perf_counter() - started
    done.set()
    sampler.join()
    print(file=sys.stderr)
    expected_windows = args.elements // per_window * args.keys
    if _Progress.wrong or _Progress.windows != expected_windows or _Progress.counted != args.elements:
        print(
            f"wrong result: {_Progress.windows} window counts (expected {expected_windows}), "
            f"{_Progress.counted} elements counted, e.g. {_Progress.wrong}",
            file=sys.stderr,
        )
        return 1
    tenths = {}
    for _, counted, rss in samples:
        tenths.setdefault(min(10, counted * 10 // args.elements), rss)
    figures = {
        "elements": args.elements,
        "keys": args.keys,
        "window_seconds": args.window,
        "seconds": elapsed,
        "elements_per_second": args.elements / elapsed,
        "peak_rss_mib": max((rss for _, _, rss in samples), default=_rss_mib()),
        "rss_mib_at_each_tenth": {f"{k * 10}%": round(v, 1) for k, v in sorted(tenths.items())},
    }
    print(json.dumps(figures, indent=2))
    write_json(args.json, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
