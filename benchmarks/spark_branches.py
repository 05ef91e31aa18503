"""Cost per case on the Spark backend as a pipeline grows: one job of K independent branches
against K jobs of one branch each, side by side on one warm SparkSession.

A branch is what a small case submits: Create, timestamps, FixedWindows, GroupByKey and the
kit's check (conformance.api.check: a Flatten with a sentinel into a GroupByKey and a verifying
ParDo). Every branch gets labels of its own, so no run hits the front end's plan cache, and
every check must confirm (its counter committed once), or the benchmark fails. A backend whose
cost per stage does not grow with the plan gives a ratio near 1 or below (independent branches
share the job's fixed cost).

    python -m benchmarks.spark_branches --branches 1 10 50 --json reports/benchmark-spark-branches.json
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time

import apache_beam as beam
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.transforms import window

from benchmarks.report import write_json

_LABELS = itertools.count()


def branch(p: beam.Pipeline) -> str:
    """One small case's pipeline in ``p``; returns its check id."""
    from conformance.api import check

    n = next(_LABELS)
    grouped = (
        p
        | f"b{n}/Create" >> beam.Create([("a", 1), ("b", 2), ("a", 3), ("b", 64)])
        | f"b{n}/Stamp" >> beam.Map(lambda kv: window.TimestampedValue(kv, kv[1]))
        | f"b{n}/Window" >> beam.WindowInto(window.FixedWindows(60))
        | f"b{n}/Group" >> beam.GroupByKey()
        | f"b{n}/Sort" >> beam.MapTuple(lambda k, vs: (k, sorted(vs)))
    )
    return check(grouped, [("a", [1, 3]), ("b", [2]), ("b", [64])], label=f"b{n}")


def run_job(runner, branches: int) -> float:
    """One job of ``branches`` branches; its seconds, once every check confirmed."""
    from conformance.authoring.checks import CONFIRM_NAMESPACE

    started = time.perf_counter()
    p = beam.Pipeline(runner=runner)
    ids = [branch(p) for _ in range(branches)]
    result = p.run()
    result.wait_until_finish()
    elapsed = time.perf_counter() - started
    counters = result.metrics().query(MetricsFilter().with_namespace(CONFIRM_NAMESPACE))["counters"]
    confirmed = {c.key.metric.name for c in counters if c.committed == 1}
    missing = set(ids) - confirmed
    if missing:
        raise AssertionError(f"{len(missing)} of {branches} checks did not confirm, e.g. {min(missing)}")
    return elapsed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.spark_branches", description=__doc__.split("\n\n")[0])
    parser.add_argument("--branches", type=int, nargs="+", default=[1, 10, 50], help="values of K (default 1 10 50)")
    parser.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the figures as JSON to PATH")
    args = parser.parse_args(argv)

    from reference_runner.spark import SparkRunner, session

    session.get(args.master)
    runner = SparkRunner(master=args.master)
    run_job(runner, 2)  # warm: Python workers started, code imported
    rows = []
    print(f"{'K':>4} {'1 job of K (s)':>15} {'per case':>9} {'K jobs (s)':>11} {'per case':>9} {'ratio':>6}")
    for k in args.branches:
        together = run_job(runner, k)
        apart = sum(run_job(runner, 1) for _ in range(k))
        row = {"branches": k, "one_job_s": together, "separate_jobs_s": apart, "ratio": together / apart}
        rows.append(row)
        print(f"{k:>4} {together:>15.2f} {together / k:>9.3f} {apart:>11.2f} {apart / k:>9.3f} {row['ratio']:>6.2f}")
        sys.stdout.flush()
    write_json(args.json, {"master": args.master, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
