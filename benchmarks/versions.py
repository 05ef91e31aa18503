"""One benchmark on two checkouts of the kit, side by side in one run: this one and another
(typically the previous main, e.g. a ``git worktree add /tmp/base <commit>``), alternating round
by round so that both see the same machine. Each round runs ``python -m benchmarks.NAME ARGS
--json FILE`` in the checkout's own tree (its own code and its own copy of the benchmark), and the
figures of all rounds are compared leaf by leaf: the median of each side and new/base.

    python -m benchmarks.versions --base /tmp/base --rounds 3 -- reference --jobs 30 --words 300000
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

from benchmarks.report import write_json

HERE = pathlib.Path(__file__).resolve().parent.parent


def run_once(tree: pathlib.Path, benchmark: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "figures.json"
        env = {**os.environ, "PYTHONPATH": str(tree)}
        command = [sys.executable, "-m", f"benchmarks.{benchmark[0]}", *benchmark[1:], "--json", str(out)]
        subprocess.run(command, cwd=tree, env=env, check=True, stdout=subprocess.DEVNULL)
        return json.loads(out.read_text())


def leaves(figures, prefix: str = "") -> dict[str, float]:
    """Every number in ``figures``, by its dotted path."""
    if isinstance(figures, dict):
        found: dict[str, float] = {}
        for key, value in figures.items():
            found.update(leaves(value, f"{prefix}{key}."))
        return found
    if isinstance(figures, (int, float)) and not isinstance(figures, bool):
        return {prefix.rstrip("."): float(figures)}
    return {}


def compare(base_rounds: list[dict], new_rounds: list[dict]) -> dict[str, dict[str, float]]:
    base = [leaves(r) for r in base_rounds]
    new = [leaves(r) for r in new_rounds]
    compared = {}
    for path in sorted(set(base[0]) & set(new[0])):
        b = statistics.median(r[path] for r in base)
        n = statistics.median(r[path] for r in new)
        compared[path] = {"base": b, "new": n, "new_over_base": n / b if b else float("nan")}
    return compared


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.versions", description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", required=True, help="the other checkout (its root directory)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per checkout, alternating (default 3)")
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the comparison as JSON to PATH")
    parser.add_argument(
        "benchmark", nargs=argparse.REMAINDER, help="NAME [ARGS]: a module of benchmarks/ and its arguments"
    )
    args = parser.parse_args(argv)
    benchmark = [a for a in args.benchmark if a != "--"]
    if not benchmark:
        parser.error("name a benchmark, e.g. -- reference --jobs 30")
    trees = {"base": pathlib.Path(args.base).resolve(), "new": HERE}
    rounds: dict[str, list[dict]] = {"base": [], "new": []}
    for n in range(args.rounds):
        for side, tree in trees.items():
            print(f"round {n + 1}/{args.rounds}: {side} ({tree})", file=sys.stderr, flush=True)
            rounds[side].append(run_once(tree, benchmark))
    compared = compare(rounds["base"], rounds["new"])
    width = max(len(path) for path in compared)
    print(f"{'figure':<{width}}  {'base':>12}  {'new':>12}  new/base")
    for path, row in compared.items():
        print(f"{path:<{width}}  {row['base']:>12.4g}  {row['new']:>12.4g}  {row['new_over_base']:.3f}")
    summary = {"benchmark": benchmark, "rounds": args.rounds, "base": str(trees["base"]), "figures": compared}
    write_json(args.json, summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
