"""Word count on the Spark backend vs the same job hand-written with PySpark's RDD API vs Beam's
FnApiRunner, in one run on one machine; plus the per-job overhead of a tiny pipeline on a warm
SparkSession.

The words are generated, not read: chunk c holds words (c * chunk + i) * 7919 mod vocabulary,
so every word of the vocabulary occurs exactly words / vocabulary times, and each run's counts
are checked against that (a fast wrong answer is worth nothing).

    python -m benchmarks.spark_wordcount --words 10000000 --json reports/benchmark-spark.json
"""

from __future__ import annotations

import argparse
import json
import operator
import statistics
import sys
import time

import apache_beam as beam
from apache_beam.testing.util import assert_that, equal_to

from benchmarks.report import write_json

STRIDE = 7919  # prime: word index -> vocabulary slot is a bijection on each block of the vocabulary


def words_of(chunk_size: int, vocabulary: int, chunk: int):
    start = chunk * chunk_size
    return [f"w{(start + i) * STRIDE % vocabulary}" for i in range(chunk_size)]


def expected(words: int, vocabulary: int) -> list:
    return [(f"w{k}", words // vocabulary) for k in range(vocabulary)]


def beam_word_count(runner, words: int, chunk_size: int, vocabulary: int, typed: bool = False) -> float:
    """``typed``: the words are declared str, so keys get a str coder; untyped, they are pickled
    (FastPrimitivesCoder) and a runner that groups by encoded key, as the model says, must
    re-key them before combining (reference_runner/graph/rekey.py)."""
    started = time.perf_counter()
    split = beam.FlatMap(lambda c, n=chunk_size, v=vocabulary: words_of(n, v, c))
    pair = beam.Map(lambda w: (w, 1))
    if typed:
        split, pair = split.with_output_types(str), pair.with_output_types(tuple[str, int])
    with beam.Pipeline(runner=runner) as p:
        counts = p | beam.Create(range(words // chunk_size)) | split | pair | beam.CombinePerKey(sum)
        assert_that(counts, equal_to(expected(words, vocabulary)))
    return time.perf_counter() - started


def pyspark_word_count(spark, words: int, chunk_size: int, vocabulary: int, partitions: int) -> float:
    started = time.perf_counter()
    counts = (
        spark.sparkContext.parallelize(range(words // chunk_size), partitions)
        .flatMap(lambda c, n=chunk_size, v=vocabulary: words_of(n, v, c))
        .map(lambda w: (w, 1))
        .reduceByKey(operator.add)
        .collect()
    )
    elapsed = time.perf_counter() - started
    if sorted(counts) != sorted(expected(words, vocabulary)):
        raise AssertionError("hand-written PySpark word count gave a wrong answer")
    return elapsed


def tiny_job(runner) -> float:
    """Create of 3 elements, Map, GroupByKey; checked through a counter of the groups seen."""
    from apache_beam.metrics import Metrics
    from apache_beam.metrics.metric import MetricsFilter

    groups = Metrics.counter("benchmark", "groups")

    def count(kv):
        groups.inc()
        return kv

    started = time.perf_counter()
    p = beam.Pipeline(runner=runner)
    _ = p | beam.Create([1, 2, 3]) | beam.Map(lambda x: (x % 2, x)) | beam.GroupByKey() | beam.Map(count)
    result = p.run()
    result.wait_until_finish()
    elapsed = time.perf_counter() - started
    [counter] = result.metrics().query(MetricsFilter().with_name("groups"))["counters"]
    if counter.committed != 2:
        raise AssertionError(f"the tiny job saw {counter.committed} groups, not 2")
    return elapsed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.spark_wordcount", description=__doc__.split("\n\n")[0])
    parser.add_argument("--words", type=int, default=10_000_000, help="words to count (default 10M)")
    parser.add_argument("--vocabulary", type=int, default=10_000, help="distinct words (default 10000)")
    parser.add_argument("--chunk", type=int, default=10_000, help="words generated per input element")
    parser.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    parser.add_argument("--tiny-jobs", type=int, default=10, help="tiny jobs timed on the warm session")
    parser.add_argument("--skip-fnapi", action="store_true", help="do not run Beam's FnApiRunner")
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the figures as JSON to PATH")
    args = parser.parse_args(argv)
    if args.words % args.vocabulary or args.words % args.chunk:
        parser.error("--words must be a multiple of --vocabulary and of --chunk")

    from reference_runner.spark import SparkRunner, session

    spark = session.get(args.master)
    partitions = spark.sparkContext.defaultParallelism
    runner = SparkRunner(master=args.master)
    tiny_job(runner)  # warm: Python workers started, code imported
    tiny = [tiny_job(runner) for _ in range(args.tiny_jobs)]
    figures = {
        "words": args.words,
        "master": args.master,
        "tiny_job_seconds_median": statistics.median(tiny),
        "tiny_job_seconds": tiny,
    }
    print(f"tiny job on a warm session: median {figures['tiny_job_seconds_median'] * 1000:.0f} ms", file=sys.stderr)
    figures["pyspark_seconds"] = pyspark_word_count(spark, args.words, args.chunk, args.vocabulary, partitions)
    print(f"hand-written PySpark: {figures['pyspark_seconds']:.1f} s", file=sys.stderr)
    figures["spark_backend_seconds"] = beam_word_count(runner, args.words, args.chunk, args.vocabulary)
    print(f"Spark backend: {figures['spark_backend_seconds']:.1f} s", file=sys.stderr)
    if not args.skip_fnapi:
        from apache_beam.runners.portability.fn_api_runner import FnApiRunner

        figures["fnapi_seconds"] = beam_word_count(FnApiRunner(), args.words, args.chunk, args.vocabulary)
        print(f"FnApiRunner: {figures['fnapi_seconds']:.1f} s", file=sys.stderr)
    # The same jobs with the words declared str (see beam_word_count)
    figures["spark_backend_typed_seconds"] = beam_word_count(runner, args.words, args.chunk, args.vocabulary, True)
    print(f"Spark backend, typed words: {figures['spark_backend_typed_seconds']:.1f} s", file=sys.stderr)
    if not args.skip_fnapi:
        figures["fnapi_typed_seconds"] = beam_word_count(FnApiRunner(), args.words, args.chunk, args.vocabulary, True)
        print(f"FnApiRunner, typed words: {figures['fnapi_typed_seconds']:.1f} s", file=sys.stderr)
    for suffix in ("", "_typed"):
        backend = figures[f"spark_backend{suffix}_seconds"]
        figures[f"ratio_backend{suffix}_over_pyspark"] = backend / figures["pyspark_seconds"]
        if f"fnapi{suffix}_seconds" in figures:
            figures[f"ratio_fnapi_over_backend{suffix}"] = figures[f"fnapi{suffix}_seconds"] / backend
    print(json.dumps({k: v for k, v in figures.items() if k != "tiny_job_seconds"}, indent=2))
    write_json(args.json, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
