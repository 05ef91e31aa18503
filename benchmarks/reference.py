"""The reference runner vs Beam's FnApiRunner, side by side in one run on one machine.

- per-job overhead: a tiny pipeline (Create of 3 elements, Map, GroupByKey) run N times on each
  runner, alternating, as a user runs it (pipeline.run(), which includes Beam's translation to
  the Runner API) and runner-only (the same pipeline proto handed to each runner directly);
- throughput: a word count (FlatMap, CombinePerKey) over generated words.
Every job checks its own output in the pipeline (a fast wrong answer is worth nothing).

    python -m benchmarks.reference --jobs 50 --words 1000000 --json reports/benchmark-reference.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.runners.runner import PipelineResult, PipelineRunner, PipelineState
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms import environments

from benchmarks.report import write_json
from benchmarks.spark_wordcount import beam_word_count
from reference_runner import ReferenceRunner
from reference_runner.backends import Control
from reference_runner.executor.reference_backend import ReferenceBackend


def _tiny(p):
    out = (
        p
        | beam.Create([1, 2, 3])
        | beam.Map(lambda x: (x % 2, x))
        | beam.GroupByKey()
        | beam.MapTuple(lambda k, vs: (k, sorted(vs)))
    )
    assert_that(out, equal_to([(0, [2]), (1, [1, 3])]))


def tiny_job(runner) -> float:
    started = time.perf_counter()
    with beam.Pipeline(runner=runner) as p:
        _tiny(p)
    return time.perf_counter() - started


class _Capture(PipelineRunner):
    """Translates the pipeline as FnApiRunner would receive it, and runs nothing."""

    def default_environment(self, options):
        return environments.EmbeddedPythonEnvironment.default()

    def run_portable_pipeline(self, pipeline, options):
        self.proto = pipeline  # after Beam's own preparation (deterministic key coders, ...)
        return PipelineResult(PipelineState.DONE)


def tiny_proto():
    capture = _Capture()
    p = beam.Pipeline(runner=capture)
    _tiny(p)
    p.run()
    return capture.proto


def proto_job(run) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.reference", description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=50, help="tiny jobs per runner (default 50)")
    parser.add_argument("--words", type=int, default=1_000_000, help="words in the word count (default 1M)")
    parser.add_argument("--vocabulary", type=int, default=10_000, help="distinct words (default 10000)")
    parser.add_argument("--chunk", type=int, default=10_000, help="words generated per input element")
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the figures as JSON to PATH")
    args = parser.parse_args(argv)
    runners = {"reference": ReferenceRunner, "fnapi": FnApiRunner}
    proto = tiny_proto()
    direct = {
        "reference": lambda: ReferenceBackend().run(ReferenceBackend().plan(proto), Control()),
        "fnapi": lambda: FnApiRunner().run_via_runner_api(proto, PipelineOptions()),
    }
    for name in runners:  # warm both: imports, caches
        tiny_job(runners[name]())
        direct[name]()
    user, runner_only = {n: [] for n in runners}, {n: [] for n in runners}
    for n in range(args.jobs):
        for name, make in runners.items():
            user[name].append(tiny_job(make()))
            runner_only[name].append(proto_job(direct[name]))
        print(f"\rtiny job {n + 1}/{args.jobs}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    figures = {"jobs": args.jobs, "words": args.words}
    for label, times in (("per_job_seconds", user), ("per_job_runner_only_seconds", runner_only)):
        figures[label] = {name: statistics.median(values) for name, values in times.items()}
        figures[label.replace("seconds", "ratio_fnapi_over_reference")] = (
            figures[label]["fnapi"] / figures[label]["reference"]
        )
    figures["wordcount_seconds"] = {
        name: beam_word_count(make(), args.words, args.chunk, args.vocabulary) for name, make in runners.items()
    }
    figures["wordcount_words_per_second"] = {name: args.words / s for name, s in figures["wordcount_seconds"].items()}
    figures["wordcount_ratio_reference_over_fnapi_throughput"] = (
        figures["wordcount_seconds"]["fnapi"] / figures["wordcount_seconds"]["reference"]
    )
    # The same job with its words declared str: no re-keying (see beam_word_count)
    figures["typed_wordcount_seconds"] = {
        name: beam_word_count(make(), args.words, args.chunk, args.vocabulary, typed=True)
        for name, make in runners.items()
    }
    figures["typed_wordcount_ratio_reference_over_fnapi_throughput"] = (
        figures["typed_wordcount_seconds"]["fnapi"] / figures["typed_wordcount_seconds"]["reference"]
    )
    print(json.dumps(figures, indent=2))
    write_json(args.json, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
