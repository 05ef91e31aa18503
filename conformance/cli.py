"""``beam-conformance``: run the suite on several targets, merge results into the capability
matrix, and list what the suite knows."""
from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import time

from conformance import capabilities, results
from conformance.report import beam_yaml, html, markdown, matrix

OUTPUTS = {
    "capability-matrix.md": markdown.render,
    "capability-matrix.html": html.render,
    "capability-matrix.yaml": beam_yaml.render,
    "capability-matrix.json": lambda m: json.dumps(matrix.to_json(m), indent=1) + "\n",
}


def write_reports(result_paths: list[str], out_dir: str) -> list[str]:
    documents = [results.load(p) for p in result_paths]
    built = matrix.build(documents)
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for name, render in OUTPUTS.items():
        path = os.path.join(out_dir, name)
        with open(path, "w") as f:
            f.write(render(built))
        written.append(path)
    return written


def _report(args) -> int:
    paths = args.results or sorted(glob.glob(os.path.join(args.results_dir, "results-*.json")))
    if not paths:
        print(f"beam-conformance report: no results-*.json in {args.results_dir}; run the suite first "
              "(tox -e conformance, or pytest --pyargs conformance --target NAME)", file=sys.stderr)
        return 2
    try:
        written = write_reports(paths, args.out)
    except (OSError, ValueError, KeyError) as e:
        print(f"beam-conformance report: cannot build the matrix: {e}", file=sys.stderr)
        return 2
    print(f"merged {len(paths)} run(s): " + ", ".join(os.path.basename(p) for p in paths))
    for path in written:
        print(f"wrote {path}")
    return 0


def _target_name(target: str, pytest_args: list[str]) -> str:
    """The column name pytest will use: --target-name if given, else derived from the target."""
    for i, arg in enumerate(pytest_args):
        if arg == "--target-name" and i + 1 < len(pytest_args):
            return pytest_args[i + 1]
        if arg.startswith("--target-name="):
            return arg.split("=", 1)[1]
    return target.split(":", 1)[0] if target.startswith("grpc") else target


def _run(args) -> int:
    """Run the suite once per target (each in its own pytest process), then always write the matrix."""
    os.makedirs(args.results_dir, exist_ok=True)
    worst = 0
    for target in [t for value in args.target for t in value.split()]:
        name = results.slug(_target_name(target, args.pytest_args))
        command = [sys.executable, "-m", "pytest", "--pyargs", "conformance", "--target", target,
                   "--results-dir", args.results_dir, f"--junitxml={args.results_dir}/junit-{name}.xml",
                   "-p", "no:cacheprovider", "--show-capture=no", "--tb=short", "-q"]
        if args.workers != "0":
            command += ["-n", args.workers]
        command += args.pytest_args
        print(f"== beam-conformance: {target}: {' '.join(command[1:])}", flush=True)
        started = time.monotonic()
        code = subprocess.call(command)
        print(f"== beam-conformance: {target}: pytest exit code {code} after "
              f"{time.monotonic() - started:.0f}s", flush=True)
        worst = worst or code
    paths = sorted(glob.glob(os.path.join(args.results_dir, "results-*.json")))
    if paths:
        for path in write_reports(paths, args.out):
            print(f"wrote {path}")
    return worst


def _targets(_args) -> int:
    from conformance import targets
    print(targets.describe_all())
    return 0


def _capabilities(_args) -> int:
    for cap in capabilities.CAPABILITIES:
        flag = " [streaming]" if cap.streaming else ""
        gap = f" (no case: {cap.untestable})" if cap.untestable else ""
        print(f"{cap.id:<32} {cap.row:<26} {cap.beam_category:<32} {cap.title}{flag}{gap}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="beam-conformance",
        description="Beam runner conformance kit. Run the suite with pytest "
                    "(pytest --pyargs conformance --target NAME); use this command to merge results "
                    "into the capability matrix.")
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("report", help="merge results-<target>.json files into the capability matrix "
                                        "(Markdown, HTML, JSON and the Beam website's YAML)")
    rep.add_argument("results", nargs="*",
                     help="results files to merge (default: every results-*.json in --results-dir); "
                          "a later file for the same target replaces an earlier one")
    rep.add_argument("--results-dir", default="reports", help="where to look for results (default ./reports)")
    rep.add_argument("--out", default="reports", help="where to write capability-matrix.* (default ./reports)")
    rep.set_defaults(func=_report)
    run = sub.add_parser(
        "run", help="run the suite against one or more targets, then write the capability matrix; "
                    "exits non-zero if any run had a regression or an unexpected pass",
        description="Extra arguments after -- go to pytest, e.g. -- -m 'not streaming' --case-timeout 60.")
    run.add_argument("--target", action="append", required=True,
                     help="a target to run (repeat for several, or give several separated by spaces): reference, "
                          "spark, beam-direct, beam-fnapi, grpc://HOST:PORT, ...")
    run.add_argument("--workers", default="auto",
                     help="pytest-xdist workers per run: a number, 'auto' (one per core) or 0 for none "
                          "(default auto)")
    run.add_argument("--results-dir", default="reports", help="where results and JUnit XML go (default ./reports)")
    run.add_argument("--out", default="reports", help="where capability-matrix.* go (default ./reports)")
    run.add_argument("pytest_args", nargs="*", help="passed to pytest after --")
    run.set_defaults(func=_run)
    sub.add_parser("targets", help="list the registered targets").set_defaults(func=_targets)
    sub.add_parser("capabilities", help="list capability ids, matrix rows and Beam categories"
                   ).set_defaults(func=_capabilities)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
