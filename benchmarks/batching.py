"""Batched jobs against a job per case, side by side in one run: the suite (or a -k selection) on
each target at each batch size, the wall time of each run, its ratio to the solo run (batch size
1), and every case whose outcome differs from its solo outcome (none is allowed: the command exits
1 if one does).

    python -m benchmarks.batching --target prism --sizes 1,5,10,20 -k "gbk or combine"
    python -m benchmarks.batching --target flink --sizes 1,10 --markdown docs/benchmarks/batching.md

Rounds alternate the sizes (1, 10, 1, 10, ...), so that every size sees the same machine; the
figure of a size is its median round. The results of every run are kept under --keep DIR.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

from benchmarks.report import write_json


def run_suite(target: str, size: int, selection: str | None, workers: str, results_dir: pathlib.Path) -> float:
    command = [
        sys.executable, "-m", "pytest", "--pyargs", "conformance", "--target", target,
        "--batch-size", str(size), "-p", "no:cacheprovider", "-q", "--no-header",
        "--results-dir", str(results_dir),
    ]  # fmt: skip
    if workers != "0":
        command += ["-n", workers]
    if selection:
        command += ["-k", selection]
    started = time.monotonic()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.monotonic() - started


def outcomes(results_dir: pathlib.Path) -> tuple[dict[str, str], dict[str, str | None]]:
    [path] = [p for p in results_dir.glob("results-*.json") if not p.name.endswith(".java-vr.json")]
    cases = json.loads(path.read_text())["cases"]
    return {c["id"]: c["outcome"] for c in cases}, {c["id"]: c.get("batch") for c in cases}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", action="append", required=True, help="a target (repeat for several)")
    parser.add_argument("--sizes", default="1,10", help="comma-separated batch sizes; 1 (solo) is always run")
    parser.add_argument("-k", dest="selection", default=None, help="pytest -k selection (default: the whole suite)")
    parser.add_argument("--workers", default="2", help="pytest-xdist workers per run (default 2; 0 for none)")
    parser.add_argument("--rounds", type=int, default=1, help="rounds of every size (default 1)")
    parser.add_argument("--keep", default=None, metavar="DIR", help="keep every run's results under DIR")
    parser.add_argument("--json", default=None, metavar="FILE", help="write the figures as JSON")
    parser.add_argument("--markdown", default=None, metavar="FILE", help="write the table as Markdown")
    args = parser.parse_args(argv)
    sizes = sorted({1, *(int(s) for s in args.sizes.split(","))})
    keep = pathlib.Path(args.keep or tempfile.mkdtemp(prefix="batching-"))
    figures: dict = {}
    different = 0
    for target in args.target:
        walls: dict[int, list[float]] = {s: [] for s in sizes}
        seen: dict[int, tuple] = {}
        for round_ in range(args.rounds):
            for size in sizes:
                where = keep / f"{target.replace(':', '_')}-{size}-{round_}"
                walls[size].append(run_suite(target, size, args.selection, args.workers, where))
                seen[size] = outcomes(where)
                print(f"{target} batch size {size} round {round_ + 1}: {walls[size][-1]:.0f} s", flush=True)
        solo, _ = seen[1]
        rows = {}
        for size in sizes:
            got, batches = seen[size]
            differ = sorted(k for k in set(solo) | set(got) if solo.get(k) != got.get(k))
            different += len(differ)
            shared = {b for b in batches.values() if b and not b.startswith("ran alone")}
            rows[size] = {
                "wall_s": round(statistics.median(walls[size]), 1),
                "solo_over_this": round(statistics.median(walls[1]) / statistics.median(walls[size]), 2),
                "cases": len(got),
                "cases_in_shared_jobs": sum(1 for b in batches.values() if b and not b.startswith("ran alone")),
                "shared_jobs": len(shared),
                "outcomes_differing_from_solo": {k: [solo.get(k), got.get(k)] for k in differ},
            }
        figures[target] = rows
    table = ["| target | batch size | wall | solo / this | cases in shared jobs | shared jobs | outcomes unlike solo |"]
    table.append("|---|---|---|---|---|---|---|")
    for target, rows in figures.items():
        for size, row in rows.items():
            table.append(
                f"| {target} | {size} | {row['wall_s']:.0f} s | {row['solo_over_this']:.2f}x | "
                f"{row['cases_in_shared_jobs']} of {row['cases']} | {row['shared_jobs']} | "
                f"{len(row['outcomes_differing_from_solo'])} |"
            )
    print("\n".join(table))
    for target, rows in figures.items():
        for size, row in rows.items():
            for case, (a, b) in row["outcomes_differing_from_solo"].items():
                print(f"{target} batch size {size}: {case}: solo {a}, batched {b}")
    write_json(args.json, figures)
    if args.markdown:
        pathlib.Path(args.markdown).write_text("\n".join(table) + "\n")
    print(f"results of every run: {keep}")
    return 1 if different else 0


if __name__ == "__main__":
    sys.exit(main())
