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

import yaml

from conformance import capabilities, generated
from conformance.java_vr import SUITES
from conformance.session import results
from conformance.session.expectations import Expectations, ExpectationsError
from conformance.tools import baseline, diff, merge
from conformance.tools.report import beam_comparison, beam_yaml, html, markdown, matrix

OUTPUTS = {
    "capability-matrix.md": markdown.render,
    "capability-matrix.html": html.render,
    "capability-matrix.yaml": beam_yaml.render,
    "capability-matrix.json": lambda m: json.dumps(matrix.to_json(m), indent=1) + "\n",
    # Beam's published matrix beside ours, for the targets that run a runner it has a column for
    "beam-matrix-comparison.md": beam_comparison.render_markdown,
    "beam-matrix-comparison.json": beam_comparison.render_json,
}


def write_reports(result_paths: list[str], out_dir: str, previous: str | None = None) -> list[str]:
    """Write capability-matrix.* and beam-matrix-comparison.* for the given runs; ``previous`` (a
    results file or directory) adds each column's changes since that run."""
    documents = [results.load(p) for p in result_paths]
    built = matrix.build(documents, diff.load_runs(previous) if previous else None)
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
        print(
            f"beam-conformance report: no results-*.json in {args.results_dir}; run the suite first "
            "(tox -e conformance, or pytest --pyargs conformance --target NAME)",
            file=sys.stderr,
        )
        return 2
    try:
        written = write_reports(paths, args.out, args.previous)
    except (OSError, ValueError, KeyError) as e:
        print(f"beam-conformance report: cannot build the matrix: {e}", file=sys.stderr)
        return 2
    print(f"merged {len(paths)} run(s): " + ", ".join(os.path.basename(p) for p in paths))
    for path in written:
        print(f"wrote {path}")
    return 0


def _pytest(target: str, args, options: list[str]) -> int:
    """One pytest process of the suite against ``target``, with ``options`` after the common ones."""
    command = [
        sys.executable,
        "-m",
        "pytest",
        "--pyargs",
        "conformance",
        "--target",
        target,
        "--results-dir",
        args.results_dir,
        *options,
        "-p",
        "no:cacheprovider",
        "--show-capture=no",
        "--tb=short",
        "-q",
    ]
    if args.workers != "0":
        command += ["-n", args.workers]
    command += args.pytest_args
    print(f"== beam-conformance: {target}: {' '.join(command[1:])}", flush=True)
    started = time.monotonic()
    code = subprocess.call(command)
    print(f"== beam-conformance: {target}: pytest exit code {code} after {time.monotonic() - started:.0f}s", flush=True)
    return code


def _write_matrix(args) -> None:
    paths = sorted(glob.glob(os.path.join(args.results_dir, "results-*.json")))
    if paths:
        for path in write_reports(paths, args.out, args.previous):
            print(f"wrote {path}")


def _run(args) -> int:
    """Run the suite once per target (each in its own pytest process), then always write the matrix."""
    os.makedirs(args.results_dir, exist_ok=True)
    worst = 0
    for target in [t for value in args.target for t in value.split()]:
        code = _pytest(target, args, ["--junit-beside-results", "--suite", args.suite])
        worst = worst or code
    _write_matrix(args)
    return worst


def _generate(args) -> int:
    """Generated pipelines against each target (-m generated), judged by the model; then the matrix."""
    os.makedirs(args.results_dir, exist_ok=True)
    options = [
        "-m",
        "generated",
        "--generated-examples",
        str(args.examples),
        "--generated-seed",
        str(args.seed),
        "--generated-shrink-runs",
        str(args.shrink_runs),
    ]
    if args.minutes is not None:
        options += ["--generated-minutes", str(args.minutes)]
    if args.capabilities:
        options += ["--generated-capabilities", args.capabilities]
    for flag, value in (
        ("--target-name", args.target_name),
        ("--job-server-cmd", args.job_server_cmd),
        ("--expectations", args.expectations),
    ):
        if value is not None:
            options += [flag, value]
    worst = 0
    for target in [t for value in args.target for t in value.split()]:
        code = _pytest(target, args, options)
        worst = worst or code
    _write_matrix(args)
    return worst


def _baseline(args) -> int:
    """Write or update an expectations file from a run's failures."""
    try:
        run = results.load(args.results)
    except (OSError, ValueError) as e:
        print(f"beam-conformance baseline: {e}", file=sys.stderr)
        return 2
    if os.path.exists(args.output) and not (args.update or args.force):
        print(
            f"beam-conformance baseline: {args.output} exists; --update merges this run into it, --force replaces it",
            file=sys.stderr,
        )
        return 2
    if args.update and os.path.exists(args.output):
        try:
            with open(args.output) as f:
                existing = yaml.safe_load(f) or {}
            included = Expectations.load(args.output).entries[len(existing.get("known_failures") or []) :]
            document, notes = baseline.update(existing, run, included)
        except (OSError, yaml.YAMLError, ExpectationsError) as e:
            print(f"beam-conformance baseline: cannot update {args.output}: {e}", file=sys.stderr)
            return 2
    else:
        document = baseline.build(run, os.path.basename(args.results))
        notes = [f"{len(document['known_failures'])} known failure entries"]
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with open(args.output, "w") as f:
        f.write(baseline.dump(document))
    for note in notes:
        print(f"  {note}")
    failing = sum(1 for c in run["cases"] if c["outcome"] in baseline.FAILING)
    print(
        f"wrote {args.output}: {len(document['known_failures'])} entries covering {failing} failing case(s) "
        f"of {run['target']}; {_next_run_hint(args.output, run['target'])}"
    )
    return 0


def _next_run_hint(output: str, target: str) -> str:
    """How the next run finds the file: by the target's name when it lies where the session looks."""
    by_name = os.path.join("conformance", "expectations", f"{target}.yaml")
    if os.path.abspath(output) == os.path.abspath(by_name):
        return f"the next run from this folder picks it up by the target's name ({by_name})"
    return f"run the suite with --expectations {output}"


def _diff(args) -> int:
    try:
        diffs = diff.compare_runs(diff.load_runs(args.old), diff.load_runs(args.new))
    except (OSError, ValueError, KeyError) as e:
        print(f"beam-conformance diff: {e}", file=sys.stderr)
        return 2
    markdown_text = diff.to_markdown(diffs)
    json_text = json.dumps(diff.to_json(diffs), indent=1) + "\n"
    for path, text in ((args.markdown, markdown_text), (args.json, json_text)):
        if path:
            with open(path, "w") as f:
                f.write(text)
    sys.stdout.write(json_text if args.format == "json" else markdown_text)
    regressions = sum(len(d.regressions) for d in diffs)
    if regressions:
        names = ", ".join(c.id for d in diffs for c in d.regressions)
        print(f"beam-conformance diff: {regressions} regression(s): {names}", file=sys.stderr)
    return 1 if regressions else 0


def _merge(args) -> int:
    """Merge partial runs' records into a results file (in place unless -o)."""
    try:
        document = merge.merge_files(args.results, args.partial, args.output, replace=args.replace)
    except (OSError, ValueError) as e:
        print(f"beam-conformance merge: {e}", file=sys.stderr)
        return 2
    last = document["merged_runs"][-1]
    summary = ", ".join(f"{n} {k}" for k, n in document["summary"].items() if n)
    print(
        f"wrote {args.output or args.results}: {len(document['cases'])} cases of {document['target']} ({summary}); "
        f"the last run merged gave {len(last['added'])} new and {len(last['replaced'])} replaced"
    )
    return 0


def _fetch(args) -> int:
    """Bring targets' artifacts into the cache (what a run does first anyway)."""
    from conformance.session import targets

    worst = 0
    for spec in [t for value in args.target for t in value.split()]:
        try:
            targets.create(spec, targets.TargetSettings()).fetch(lambda line: print(line, flush=True))
            print(f"{spec}: ready")
        except targets.TargetUnavailable as e:
            print(f"beam-conformance fetch: {spec}: {e}", file=sys.stderr)
            worst = 3
    return worst


def _cases(args) -> int:
    """The suite's case ids (what -k matches and results name), by asking pytest to list them."""
    command = [
        sys.executable,
        "-m",
        "pytest",
        "--pyargs",
        "conformance",
        "--list-cases",
        "-q",
        "-p",
        "no:cacheprovider",
    ]
    return subprocess.call(command + list(args.pytest_args))


def _targets(_args) -> int:
    from conformance.session import targets

    print(targets.describe_all())
    return 0


def _capabilities(_args) -> int:
    for cap in capabilities.CAPABILITIES:
        flag = " [streaming]" if cap.streaming else ""
        gap = f" (no case: {cap.untestable})" if cap.untestable else ""
        print(f"{cap.id:<32} {cap.row:<26} {cap.beam_category:<32} {cap.title}{flag}{gap}")
    return 0


def _pytest_run_options(parser, results_help: str) -> None:
    """The options of a command that runs pytest once per target and then writes the matrix."""
    parser.add_argument(
        "--workers",
        default="auto",
        help="pytest-xdist workers per run: a number, 'auto' (one per core) or 0 for none (default auto)",
    )
    parser.add_argument("--results-dir", default="reports", help=f"{results_help} (default ./reports)")
    parser.add_argument(
        "--out", default="reports", help="where capability-matrix.* and beam-matrix-comparison.* go (default ./reports)"
    )
    parser.add_argument("pytest_args", nargs="*", help="passed to pytest after --")


def _checked_capabilities(text: str) -> str:
    generated.capability_names(text)  # refused here, at once, rather than by each pytest run
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="beam-conformance",
        description="Beam runner conformance kit. Run the suite with pytest "
        "(pytest --pyargs conformance --target NAME) or with 'run'; 'baseline' turns a run's "
        "failures into the runner's expectations file, 'diff' compares two runs, 'report' "
        "merges results into the capability matrix.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser(
        "report",
        help="merge results-<target>.json files into the capability matrix "
        "(Markdown, HTML, JSON and the Beam website's YAML) and compare it with Beam's published matrix",
    )
    rep.add_argument(
        "results",
        nargs="*",
        help="results files to merge (default: every results-*.json in --results-dir); "
        "a later file for the same target replaces an earlier one",
    )
    rep.add_argument("--results-dir", default="reports", help="where to look for results (default ./reports)")
    rep.add_argument(
        "--out",
        default="reports",
        help="where to write capability-matrix.* and beam-matrix-comparison.* (default ./reports)",
    )
    rep.add_argument(
        "--previous",
        metavar="RESULTS",
        default=None,
        help="an earlier run (a results file or a directory of results-*.json): each column "
        "then shows what changed since it (regressions, fixes)",
    )
    rep.set_defaults(func=_report)
    run = sub.add_parser(
        "run",
        help="run the suite against one or more targets, then write the capability matrix; "
        "exits non-zero if any run had a regression or an unexpected pass",
        description="Extra arguments after -- go to pytest, e.g. -- -m 'not streaming' --case-timeout 60.",
    )
    run.add_argument(
        "--target",
        action="append",
        required=True,
        help="a target to run (repeat for several, or give several separated by spaces): reference, "
        "spark, beam-direct, beam-fnapi, grpc://HOST:PORT, ...",
    )
    run.add_argument(
        "--suite",
        choices=SUITES,
        default="cases",
        help="cases (default): the kit's cases; java-vr: Beam's Java ValidatesRunner tests against each target "
        "(results-<target>.java-vr.json, junit-<target>.java-vr.xml); all: both",
    )
    _pytest_run_options(run, "where results and JUnit XML go")
    run.add_argument(
        "--previous",
        metavar="RESULTS",
        default=None,
        help="an earlier run (results file or directory): the matrix shows changes since it",
    )
    run.set_defaults(func=_run)
    gen = sub.add_parser(
        "generate",
        help="generate pipelines from a seed, run them on targets and judge them against the kit's model "
        "of Beam; exits 1 on a deviation no expectations entry covers",
        description="Draws --examples pipelines from --seed (the same pipelines on every machine), runs each "
        "on the target and judges its output against conformance/model: exactly where the model fixes it, "
        "by constraints where the runner may choose. A deviation is shrunk to a minimal program, named by "
        "its signature and written as a standalone repro-<signature>.py under RESULTS_DIR/generated. "
        "Results: RESULTS_DIR/results-<target>.generated.json; the matrix in --out gets a section for them. "
        "Extra arguments after -- go to pytest. Exit code: 0 when every deviation is covered by the "
        "target's expectations (signature entries), 1 otherwise, as pytest's.",
    )
    gen.add_argument(
        "--target",
        action="append",
        required=True,
        help="a target to judge (repeat, or separate several by spaces): reference, spark, prism, grpc, ...",
    )
    gen.add_argument(
        "--examples",
        type=generated.at_least_one,
        default=generated.DEFAULT_EXAMPLES,
        help=f"how many pipelines to draw and judge per target (default {generated.DEFAULT_EXAMPLES})",
    )
    gen.add_argument(
        "--seed",
        type=int,
        default=generated.DEFAULT_SEED,
        help=f"the seed to draw from: a seed and a count give the same pipelines on every machine "
        f"(default {generated.DEFAULT_SEED})",
    )
    gen.add_argument(
        "--minutes",
        type=generated.positive_minutes,
        default=None,
        help="a time budget per target: pipelines whose turn comes later are skipped unrun (default: none)",
    )
    gen.add_argument(
        "--capabilities",
        type=_checked_capabilities,
        default=None,
        metavar="LIST",
        help="draw only pipelines touching these capabilities: comma-separated ids (triggers.count), groups "
        "(triggers) or matrix rows ('Count triggers'); see beam-conformance capabilities (default: all)",
    )
    gen.add_argument(
        "--shrink-runs",
        type=generated.at_least_one,
        default=generated.DEFAULT_SHRINK_RUNS,
        help="at most this many runs of smaller candidates when shrinking a deviating pipeline "
        f"(default {generated.DEFAULT_SHRINK_RUNS})",
    )
    gen.add_argument("--target-name", default=None, help="the name results and reports give the target (grpc targets)")
    gen.add_argument(
        "--job-server-cmd",
        default=None,
        help="start this job server for --target grpc ({port} is replaced by a free port), as a suite run does",
    )
    gen.add_argument(
        "--expectations",
        default=None,
        metavar="FILE",
        help="the expectations file whose signature entries cover known deviations (default: the target's own)",
    )
    _pytest_run_options(gen, "where results and repro programs go")
    gen.set_defaults(func=_generate, previous=None)
    base = sub.add_parser(
        "baseline",
        help="write a runner's expectations file from a run's failures, so the next run is a gate",
        description="One known failure per failing case, its reason the case's failure message (edit it); "
        "cases that deviate only in one cross-cutting property (two or more: pane metadata, a refused "
        "TestStream) become one property entry; a capability whose cases all fail (two or more, in a run "
        "not narrowed with -k/-m) becomes one capability entry; the runner's version, when the target "
        "reports one, is recorded. The next run finds conformance/expectations/<target>.yaml by the "
        "target's name; a file elsewhere is named with --expectations FILE.",
    )
    base.add_argument("results", metavar="RESULTS.json", help="a results-<target>.json written by the suite")
    base.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="FILE.yaml",
        help="the expectations file to write, e.g. conformance/expectations/<target>.yaml",
    )
    base.add_argument(
        "--update",
        action="store_true",
        help="merge into the existing file: drop entries whose cases now pass, narrow "
        "glob/capability entries to the cases still failing, add new failures; "
        "hand-written reasons, issue links, skip and flaky stay (YAML comments do not)",
    )
    base.add_argument("--force", action="store_true", help="replace an existing file instead of refusing")
    base.set_defaults(func=_baseline)
    dif = sub.add_parser(
        "diff",
        help="cases whose outcome changed between two runs, as Markdown (for a pull-request "
        "comment) and JSON; exits 1 on a regression",
        description="OLD and NEW are results files or directories of results-*.json, paired by target. "
        "A regression is a case that passed in OLD and fails (or errors) in NEW; new cases "
        "that fail, fixes and other changes are listed but do not fail the diff. "
        "Exit status: 0 no regression, 1 regressions, 2 unreadable input.",
    )
    dif.add_argument("old", metavar="OLD", help="the earlier run (e.g. the main branch's last results)")
    dif.add_argument("new", metavar="NEW", help="the later run")
    dif.add_argument(
        "--format", choices=["markdown", "json"], default="markdown", help="what to print on stdout (default markdown)"
    )
    dif.add_argument("--markdown", metavar="FILE.md", help="also write the Markdown here")
    dif.add_argument("--json", metavar="FILE.json", help="also write the JSON here")
    dif.set_defaults(func=_diff)
    mer = sub.add_parser(
        "merge",
        help="merge a partial run's case records (e.g. cases new since the last full run) into a results file",
        description="The merged file keeps RESULTS.json's run description, counts its summary again and lists "
        "each merged run (its dates, wall time, selection, and the cases it added or replaced) under "
        "merged_runs. Both runs must be of one target and suite, with the same versions and expectations file.",
    )
    mer.add_argument("results", metavar="RESULTS.json", help="the results file to merge into (e.g. a committed one)")
    mer.add_argument("partial", metavar="PARTIAL.json", nargs="+", help="results of runs to merge into it, in order")
    mer.add_argument("-o", "--output", metavar="OUT.json", help="write the merged file here (default: RESULTS.json)")
    mer.add_argument(
        "--replace", action="store_true", help="a case already in RESULTS.json takes the partial run's record"
    )
    mer.set_defaults(func=_merge)
    fetch = sub.add_parser(
        "fetch",
        help="fetch targets' artifacts (Prism through go install, Beam's Java job servers through Maven, "
        "Dask through pip) into the cache, ~/.cache/beam-conformance or $BEAM_CONFORMANCE_CACHE",
        description="A run fetches what it needs itself; this is for warming a cache ahead of time "
        "(a CI image, a machine about to go offline). Versions are pinned in conformance/peers/pins.py.",
    )
    fetch.add_argument("target", nargs="+", help="targets to fetch, e.g. prism flink beam-spark-job-server beam-dask")
    fetch.set_defaults(func=_fetch)
    cases = sub.add_parser(
        "cases",
        help="list the suite's case ids with their capability (what -k matches, and what results, "
        "reports and expectations files name); runs nothing",
        description="Arguments after -- go to pytest and narrow the list, e.g. -- -k gbk -m 'not streaming'.",
    )
    cases.add_argument("pytest_args", nargs="*", help="passed to pytest after --")
    cases.set_defaults(func=_cases)
    sub.add_parser("targets", help="list the registered targets").set_defaults(func=_targets)
    sub.add_parser("capabilities", help="list capability ids, matrix rows and Beam categories").set_defaults(
        func=_capabilities
    )
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
