"""How the Spark backend scales with its input: word counts over text files and over a Create, and
a windowed combine, each run on the Spark backend, as the same job hand-written with PySpark's
RDD API on the same SparkSession, and on Beam's FnApiRunner, side by side in one run; wall
seconds, peak resident memory and their ratios.

Workloads (``--workload``, default all three):

* ``wordcount-files``: ReadFromText over text files (``--files`` files of 10 words a line,
  generated once into ``--data-dir`` and reused), one run per size in ``--words``; PySpark reads
  them with ``sc.textFile(glob, defaultParallelism)``. The growth of each contender's time
  from one size to the next is reported too (linear input, so about the ratio of the sizes).
* ``wordcount-create``: the same word count from a ``beam.Create`` of the lines
  (``--create-words`` words); PySpark ``sc.parallelize(lines, defaultParallelism)``.
* ``windowed-combine``: ``--events`` timestamped events from a Create of 1000 seeds expanded by a
  FlatMap (event i: key k{i % 1000}, value i % 100, timestamp i * 0.01 s), FixedWindows(60),
  CombinePerKey(sum); PySpark reduces by (key, window start).

Word i of the input is w{i * 7919 mod vocabulary}, so each word occurs exactly words / vocabulary
times. Every answer is checked (a fast wrong answer is worth nothing): the Beam pipelines reduce
their output to one summary (distinct keys, totals, a digest of every (key, count) or (key,
window, sum)) and assert_that it is the expected one; PySpark's collected output is summarised
the same way after its clock stops. A wrong answer or a failed job is reported, the run goes on,
and the command exits 1.

Seconds are wall time around the whole pipeline (construction included, so a Create's encoding
counts). Peak RSS is sampled every 0.2 s during each contender's run over this process's tree:
the driver (this process: FnApiRunner runs in it), the other Python processes (Spark's Python
workers) and java (the driver JVM; under ``--standalone`` also the master, the workers and their
executors). Forked processes (Spark's Python workers) each count the pages they share, so the
python figure overstates what they take together; ``idle_rss_mib`` is the same tree after
warm-up, before any timed run, to read the peaks against. Each Spark contender also reports
its Spark jobs and the tasks of each stage that ran (from the status tracker): how many
partitions its input was read in.

    python -m benchmarks.spark_scale --json reports/benchmark-spark-scale.json
    python -m benchmarks.spark_scale --workload wordcount-files --words 1000000,3000000,10000000
    python -m benchmarks.spark_scale --standalone --skip-fnapi   # a master and two 1-core workers on loopback
"""

from __future__ import annotations

import argparse
import collections
import json
import operator
import os
import shutil
import sys
import threading
import time
import traceback
import zlib
from collections.abc import Callable, Iterable, Iterator

import apache_beam as beam
from apache_beam.testing.util import BeamAssertException, assert_that
from apache_beam.transforms import window
from apache_beam.utils.timestamp import Timestamp

from benchmarks import procstat
from benchmarks.report import write_json
from benchmarks.spark_wordcount import STRIDE  # the word counts' one word -> vocabulary slot rule

WORKLOADS = ("wordcount-files", "wordcount-create", "windowed-combine")
CONTENDERS = ("pyspark", "spark_backend", "fnapi")
WORDS_PER_LINE = 10
KEYS = 1000  # windowed-combine: keys k0..k999
SEEDS = 1000  # windowed-combine: Create elements, each expanded to events / SEEDS events
EVENT_MICROS = 10_000  # event i at i * 0.01 s
WINDOW_SECONDS = 60
DEFAULT_DATA_DIR = os.path.join(os.path.expanduser("~"), ".cache", "beam-conformance", "benchmarks", "spark_scale")


# The input


def line_of(line: int, vocabulary: int) -> str:
    first = line * WORDS_PER_LINE
    return " ".join(f"w{(first + j) * STRIDE % vocabulary}" for j in range(WORDS_PER_LINE))


def lines_of(words: int, vocabulary: int) -> list[str]:
    return [line_of(n, vocabulary) for n in range(words // WORDS_PER_LINE)]


def text_files(data_dir: str, words: int, vocabulary: int, files: int) -> tuple[str, dict]:
    """The glob of ``files`` text files holding ``words`` words, written once and reused while
    their manifest (names and sizes) matches what is on disk; and a description of them."""
    directory = os.path.join(data_dir, f"words-{words}-vocabulary-{vocabulary}-files-{files}")
    manifest = os.path.join(directory, "MANIFEST.json")
    glob = os.path.join(directory, "part-*.txt")
    try:
        with open(manifest) as f:
            sizes = json.load(f)
        if sizes and all(os.path.getsize(os.path.join(directory, name)) == size for name, size in sizes.items()):
            return glob, {"files": len(sizes), "bytes": sum(sizes.values()), "generated": False}
    except (OSError, ValueError):
        pass
    started = time.perf_counter()
    partial = f"{directory}.partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    os.makedirs(partial)
    lines = words // WORDS_PER_LINE
    sizes = {}
    for n in range(files):
        name = f"part-{n:03d}-of-{files:03d}.txt"
        first, last = n * lines // files, (n + 1) * lines // files
        with open(os.path.join(partial, name), "w") as f:
            for chunk in range(first, last, 100_000):
                f.writelines(line_of(n, vocabulary) + "\n" for n in range(chunk, min(last, chunk + 100_000)))
        sizes[name] = os.path.getsize(os.path.join(partial, name))
    with open(os.path.join(partial, "MANIFEST.json"), "w") as f:
        json.dump(sizes, f)
    shutil.rmtree(directory, ignore_errors=True)
    os.rename(partial, directory)
    print(
        f"wrote {files} files of {words} words ({sum(sizes.values()) / 2**20:.0f} MiB) to {directory} "
        f"in {time.perf_counter() - started:.1f} s",
        file=sys.stderr,
    )
    return glob, {"files": files, "bytes": sum(sizes.values()), "generated": True}


def stamped_events(seed: int, per_seed: int) -> Iterator[window.TimestampedValue]:
    for i in range(seed * per_seed, (seed + 1) * per_seed):
        yield window.TimestampedValue((f"k{i % KEYS}", i % 100), Timestamp(micros=i * EVENT_MICROS))


def keyed_events(seed: int, per_seed: int) -> Iterator[tuple[tuple[str, int], int]]:
    """PySpark's events: ((key, start of the event's fixed window in seconds), value)."""
    window_micros = WINDOW_SECONDS * 1_000_000
    for i in range(seed * per_seed, (seed + 1) * per_seed):
        yield (f"k{i % KEYS}", i * EVENT_MICROS // window_micros * WINDOW_SECONDS), i % 100


# The checks: every contender's output reduced to one summary, compared with the expected one


def _digest(row: tuple) -> int:
    return zlib.crc32(repr(row).encode())  # the same in every process (unlike hash() of a str)


class WordSummary(beam.CombineFn):
    """(word, count) pairs -> (distinct words, total count, the distinct counts, digest)."""

    FIELDS = ("distinct words", "total count", "distinct counts", "digest of (word, count)")

    def create_accumulator(self):
        return [0, 0, set(), 0]

    def add_input(self, acc, pair):
        acc[0] += 1
        acc[1] += pair[1]
        acc[2].add(pair[1])
        acc[3] += _digest(tuple(pair))
        return acc

    def merge_accumulators(self, accumulators):
        merged = self.create_accumulator()
        for acc in accumulators:
            merged[0] += acc[0]
            merged[1] += acc[1]
            merged[2] |= acc[2]
            merged[3] += acc[3]
        return merged

    def extract_output(self, acc):
        return acc[0], acc[1], tuple(sorted(acc[2])), acc[3]


class WindowSummary(beam.CombineFn):
    """(key, window start, sum) rows -> (rows, per-key total over the windows, digest)."""

    FIELDS = ("(key, window) results", "per-key totals", "digest of (key, window start, sum)")

    def create_accumulator(self):
        return [0, collections.Counter(), 0]

    def add_input(self, acc, row):
        acc[0] += 1
        acc[1][row[0]] += row[2]
        acc[2] += _digest(tuple(row))
        return acc

    def merge_accumulators(self, accumulators):
        merged = self.create_accumulator()
        for acc in accumulators:
            merged[0] += acc[0]
            merged[1].update(acc[1])
            merged[2] += acc[2]
        return merged

    def extract_output(self, acc):
        return acc[0], tuple(sorted(acc[1].items())), acc[2]


def summarize(fn: beam.CombineFn, rows: Iterable) -> tuple:
    acc = fn.create_accumulator()
    for row in rows:
        acc = fn.add_input(acc, row)
    return fn.extract_output(acc)


def expected_words(words: int, vocabulary: int) -> tuple:
    """In closed form: every word of the vocabulary, words / vocabulary times."""
    each = words // vocabulary
    return vocabulary, words, (each,), sum(_digest((f"w{k}", each)) for k in range(vocabulary))


def expected_windows(events: int) -> tuple:
    """By plain Python, event by event."""
    sums: collections.Counter = collections.Counter()
    window_micros = WINDOW_SECONDS * 1_000_000
    for i in range(events):
        sums[(i % KEYS, i * EVENT_MICROS // window_micros)] += i % 100
    rows = ((f"k{key}", n * WINDOW_SECONDS, total) for (key, n), total in sums.items())
    return summarize(WindowSummary(), rows)


def difference(fields: tuple, expected: tuple, found: list) -> str | None:
    """None when ``found`` is exactly [expected]; otherwise what differs, briefly."""
    if found == [expected]:
        return None
    if len(found) != 1:
        return f"{len(found)} summaries instead of one: {repr(found)[:300]}"
    wrong = []
    for name, want, got in zip(fields, expected, found[0], strict=True):
        if want == got:
            continue
        if isinstance(want, tuple) and len(want) > 5:
            missing, extra = set(want) - set(got), set(got) - set(want)
            wrong.append(
                f"{name}: {len(missing)} missing, e.g. {sorted(missing)[:3]}; "
                f"{len(extra)} unexpected, e.g. {sorted(extra)[:3]}"
            )
        else:
            wrong.append(f"{name} {got!r}, expected {want!r}")
    return "; ".join(wrong)


def _matches(fields: tuple, expected: tuple) -> Callable[[list], None]:
    def check(found):
        wrong = difference(fields, expected, list(found))
        if wrong:
            raise BeamAssertException(f"wrong answer: {wrong}")

    return check


# The contenders


def _count_and_check(lines, expected: tuple) -> None:
    counts = (
        lines
        | "Split" >> beam.FlatMap(str.split)
        | "Pair" >> beam.Map(lambda w: (w, 1))
        | "Count" >> beam.CombinePerKey(sum)
    )
    summary = counts | "Summarize" >> beam.CombineGlobally(WordSummary()).without_defaults()
    assert_that(summary, _matches(WordSummary.FIELDS, expected))


def beam_wordcount_files(runner, glob: str, expected: tuple) -> None:
    with beam.Pipeline(runner=runner) as p:
        _count_and_check(p | "Read" >> beam.io.ReadFromText(glob), expected)


def beam_wordcount_create(runner, lines: list[str], expected: tuple) -> None:
    with beam.Pipeline(runner=runner) as p:
        _count_and_check(p | "Lines" >> beam.Create(lines), expected)


def beam_windowed_combine(runner, events: int, expected: tuple) -> None:
    per_seed = events // SEEDS
    with beam.Pipeline(runner=runner) as p:
        summary = (
            p
            | "Seeds" >> beam.Create(range(SEEDS))
            | "Events" >> beam.FlatMap(stamped_events, per_seed)
            | "Window" >> beam.WindowInto(window.FixedWindows(WINDOW_SECONDS))
            | "Sum" >> beam.CombinePerKey(sum)
            | "WithWindow" >> beam.Map(lambda kv, w=beam.DoFn.WindowParam: (kv[0], w.start.micros // 10**6, kv[1]))
            | "Global" >> beam.WindowInto(window.GlobalWindows())
            | "Summarize" >> beam.CombineGlobally(WindowSummary()).without_defaults()
        )
        assert_that(summary, _matches(WindowSummary.FIELDS, expected))


def _check(fields: tuple, expected: tuple, summary: tuple) -> None:
    wrong = difference(fields, expected, [summary])
    if wrong:
        raise AssertionError(f"hand-written PySpark gave a wrong answer: {wrong}")


def pyspark_wordcount_files(spark, glob: str) -> dict:
    """The collected counts, and the partitions of the input RDD."""
    sc = spark.sparkContext
    lines = sc.textFile(glob, sc.defaultParallelism)
    counts = lines.flatMap(str.split).map(lambda w: (w, 1)).reduceByKey(operator.add).collect()
    return {"answer": counts, "input_partitions": lines.getNumPartitions()}


def pyspark_wordcount_create(spark, lines: list[str]) -> dict:
    sc = spark.sparkContext
    rdd = sc.parallelize(lines, sc.defaultParallelism)
    counts = rdd.flatMap(str.split).map(lambda w: (w, 1)).reduceByKey(operator.add).collect()
    return {"answer": counts, "input_partitions": rdd.getNumPartitions()}


def pyspark_windowed_combine(spark, events: int) -> dict:
    sc = spark.sparkContext
    per_seed = events // SEEDS
    seeds = sc.parallelize(range(SEEDS), sc.defaultParallelism)
    sums = seeds.flatMap(lambda s: keyed_events(s, per_seed)).reduceByKey(operator.add).collect()
    return {
        "answer": [(key, start, total) for (key, start), total in sums],
        "input_partitions": seeds.getNumPartitions(),
    }


# Measuring


class PeakMemory:
    """Peak RSS (MiB) of this process's tree, sampled every ``interval`` s on a thread of its own:
    the driver (this process), the other Python processes, java, anything else, and the tree."""

    def __init__(self, interval: float = 0.2):
        self.interval = interval
        self.me = os.getpid()
        with open(f"/proc/{self.me}/comm") as f:
            self.my_name = f.read().strip()
        self.peaks: dict[str, float] = {}
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="peak-memory", daemon=True)

    def now(self) -> dict[str, float]:
        tree = procstat.usage(self.me)
        driver = procstat.usage(self.me, children=False).rss_mib
        others = dict(tree.by_name)
        others[self.my_name] = max(0.0, others.get(self.my_name, 0.0) - driver)
        python = sum(v for name, v in others.items() if name.startswith("python"))
        java = others.get("java", 0.0)
        return {
            "driver": driver,
            "python": python,
            "java": java,
            "other": max(0.0, tree.rss_mib - driver - python - java),
            "tree": tree.rss_mib,
        }

    def _sample(self) -> None:
        for name, value in self.now().items():
            self.peaks[name] = max(self.peaks.get(name, 0.0), value)

    def _watch(self) -> None:
        while not self._done.wait(self.interval):
            self._sample()

    def __enter__(self) -> PeakMemory:
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join()
        self._sample()

    def rounded(self) -> dict[str, float]:
        return {name: round(value, 1) for name, value in self.peaks.items()}


class SparkJobs:
    """The Spark jobs a run started, from the status tracker (job ids are sequential; it keeps
    the last spark.ui.retainedJobs jobs): per job, the tasks of each stage that ran, and the
    stages skipped (their shuffle output was already there)."""

    def __init__(self, sc):
        self.tracker = sc.statusTracker()
        self.next_id = 0

    def since_last(self) -> tuple[list[list[int]], int]:
        jobs: list[list[int]] = []
        skipped = 0
        jid, misses = self.next_id, 0
        while misses < 1000:  # ids of jobs no longer retained are skipped up to the first kept
            info = self.tracker.getJobInfo(jid)
            if info is None:
                if jobs:
                    break
                misses += 1
            else:
                stages = [self.tracker.getStageInfo(s) for s in sorted(info.stageIds)]
                ran = [s for s in stages if s is not None and s.numCompletedTasks + s.numFailedTasks > 0]
                jobs.append([s.numTasks for s in ran])
                skipped += len(stages) - len(ran)
                self.next_id = jid + 1
            jid += 1
        return jobs, skipped


def _progress(*cells: object) -> None:
    widths = (17, 10, 14, 9, 11, 11, 9, 0)
    print(" ".join(f"{c!s:>{w}}" if w else str(c) for c, w in zip(cells, widths, strict=False)), file=sys.stderr)


def run_contender(run: Callable[[], dict], check: Callable[[dict], None], jobs: SparkJobs | None) -> dict:
    """Times ``run`` under a PeakMemory, then checks what it returned (untimed: PySpark's
    collected answer; the Beam pipelines check inside, so their clock includes it). A wrong
    answer or a failure becomes the figure's error."""
    if jobs is not None:
        jobs.since_last()  # forget jobs run before this one
    figure: dict = {}
    with PeakMemory() as memory:
        started = time.perf_counter()
        try:
            found = run()
            elapsed = time.perf_counter() - started
            check(found)
            figure["seconds"] = round(elapsed, 3)
            figure.update((k, v) for k, v in found.items() if k != "answer")
        except Exception as e:  # noqa: BLE001 - reported, the run goes on, the command exits 1
            text = f"{type(e).__name__}: {e}"
            figure["error"] = ("wrong answer: " if "wrong answer" in text else "failed: ") + text[:4000]
            print("".join(traceback.format_exc().splitlines(keepends=True)[-40:]), file=sys.stderr)
    figure["peak_rss_mib"] = memory.rounded()
    if jobs is not None:
        stage_tasks, skipped = jobs.since_last()
        figure["spark_jobs"] = len(stage_tasks)
        figure["spark_tasks_per_stage"] = stage_tasks  # per job, the stages that ran
        figure["spark_stages_skipped"] = skipped
    return figure


def _contenders(args, spark, runner) -> dict[str, object]:
    found: dict[str, object] = {"pyspark": spark, "spark_backend": runner}
    if not args.skip_fnapi:
        from apache_beam.runners.portability.fn_api_runner import FnApiRunner

        found["fnapi"] = FnApiRunner()
    return found


def _jobs_of(workload: str) -> tuple[Callable, Callable, type[WordSummary] | type[WindowSummary]]:
    """The Beam pipeline, the PySpark job and the summary of one workload."""
    if workload == "windowed-combine":
        return beam_windowed_combine, pyspark_windowed_combine, WindowSummary
    if workload == "wordcount-files":
        return beam_wordcount_files, pyspark_wordcount_files, WordSummary
    return beam_wordcount_create, pyspark_wordcount_create, WordSummary


def run_size(workload: str, size: int, data: object, expected: tuple, contenders: dict, jobs: SparkJobs) -> dict:
    """Every contender on one workload at one size; the answers checked, ratios added."""
    beam_job, pyspark_job, summary = _jobs_of(workload)

    def check_pyspark(found: dict) -> None:
        _check(summary.FIELDS, expected, summarize(summary(), found["answer"]))

    figures: dict = {}
    for name, contender in contenders.items():
        if name == "pyspark":

            def run(contender=contender) -> dict:
                return pyspark_job(contender, data)

            figure = run_contender(run, check_pyspark, jobs)
        else:

            def run(contender=contender) -> dict:
                beam_job(contender, data, expected)  # checks its answer inside
                return {}

            figure = run_contender(run, _checked_inside, jobs if name == "spark_backend" else None)
        figures[name] = figure
        memory = figure["peak_rss_mib"]
        shown = f"{figure['seconds']:.2f}" if "seconds" in figure else "-"
        note = figure["error"][:300] if "error" in figure else _note(figure)
        _progress(workload, size, name, shown, memory["driver"], memory["python"], memory["java"], note)
    seconds = {name: f["seconds"] for name, f in figures.items() if "seconds" in f}
    if "spark_backend" in seconds and "pyspark" in seconds:
        figures["ratio_spark_backend_over_pyspark"] = round(seconds["spark_backend"] / seconds["pyspark"], 3)
    if "fnapi" in seconds and "spark_backend" in seconds:
        figures["ratio_fnapi_over_spark_backend"] = round(seconds["fnapi"] / seconds["spark_backend"], 3)
    ratios = [f"{k[len('ratio_') :]} {v:.2f}" for k, v in figures.items() if k.startswith("ratio_")]
    if ratios:
        _progress("", "", "ratios", "", "", "", "", "  ".join(ratios))
    return figures


def _checked_inside(found: dict) -> None:
    """A Beam contender's check: its pipeline's assert_that."""


def _note(figure: dict) -> str:
    notes = []
    if "input_partitions" in figure:
        notes.append(f"input partitions {figure['input_partitions']}")
    if "spark_tasks_per_stage" in figure:
        stages = [n for job in figure["spark_tasks_per_stage"] for n in job]
        notes.append(
            f"{figure['spark_jobs']} Spark jobs, tasks per stage {stages} ({figure['spark_stages_skipped']} skipped)"
        )
    return "; ".join(notes)


def growth(sizes: dict) -> dict:
    """time(next size) / time(size) of each contender, for consecutive sizes."""
    found: dict = {}
    ordered = sorted(sizes, key=int)
    for small, large in zip(ordered, ordered[1:], strict=False):
        for name in CONTENDERS:
            a, b = sizes[small].get(name, {}), sizes[large].get(name, {})
            if "seconds" in a and "seconds" in b:
                found.setdefault(name, {})[f"time({large})/time({small})"] = round(b["seconds"] / a["seconds"], 3)
    return found


def inputs_of(workload: str, size: int, vocabulary: int, files: int, data_dir: str) -> tuple[object, tuple]:
    """A workload's input at one size (a glob, the lines, the event count) and its expected summary."""
    if workload == "windowed-combine":
        return size, expected_windows(size)
    if workload == "wordcount-files":
        glob, _ = text_files(data_dir, size, vocabulary, files)
        return glob, expected_words(size, vocabulary)
    return lines_of(size, vocabulary), expected_words(size, vocabulary)


def warm_up(args, contenders: dict) -> dict:
    """A tiny job of every selected workload on every contender, untimed and checked, so that no
    timed run pays for starting Spark's Python workers or for first imports."""
    tiny = {"wordcount-files": 1000, "wordcount-create": 1000, "windowed-combine": 2 * SEEDS}
    inputs = {w: inputs_of(w, tiny[w], 100, args.files, args.data_dir) for w in args.workload}
    seconds = {}
    for name, contender in contenders.items():
        started = time.perf_counter()
        for workload, (data, expected) in inputs.items():
            beam_job, pyspark_job, summary = _jobs_of(workload)
            if name == "pyspark":
                _check(summary.FIELDS, expected, summarize(summary(), pyspark_job(contender, data)["answer"]))
            else:
                beam_job(contender, data, expected)
        seconds[name] = round(time.perf_counter() - started, 2)
    return seconds


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(s.replace("_", "")) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of integers: {text!r}") from None
    if not sizes or min(sizes) <= 0:
        raise argparse.ArgumentTypeError(f"sizes must be positive: {text!r}")
    return sizes


def _workloads(text: str) -> list[str]:
    chosen = [w.strip() for w in text.split(",") if w.strip()]
    unknown = sorted(set(chosen) - set(WORKLOADS))
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"unknown workload {unknown or text!r}; choose from {', '.join(WORKLOADS)}")
    return [w for w in WORKLOADS if w in chosen]


def parse(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.spark_scale",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--workload",
        type=_workloads,
        default=",".join(WORKLOADS),
        help="comma-separated workloads to run",
    )
    parser.add_argument(
        "--words",
        type=_sizes,
        default="1000000,3000000,10000000",
        help="wordcount-files: comma-separated input sizes in words, each a multiple of --vocabulary",
    )
    parser.add_argument(
        "--create-words",
        type=int,
        default=3_000_000,
        help="wordcount-create: words in the Create (10 a line), a multiple of --vocabulary",
    )
    parser.add_argument(
        "--events",
        type=int,
        default=1_000_000,
        help=f"windowed-combine: timestamped events, a multiple of {SEEDS} (the Create's seeds)",
    )
    parser.add_argument("--vocabulary", type=int, default=10_000, help="distinct words, a multiple of 10")
    parser.add_argument("--files", type=int, default=8, help="wordcount-files: text files the words are split over")
    parser.add_argument(
        "--data-dir",
        default=DEFAULT_DATA_DIR,
        help="where wordcount-files writes its text files, reused by later runs of the same size",
    )
    parser.add_argument(
        "--master", default="local[2]", help="Spark master of the shared SparkSession (ignored with --standalone)"
    )
    parser.add_argument(
        "--standalone",
        action="store_true",
        help="start a Spark standalone cluster on 127.0.0.1 (a master and two workers of 1 core each, "
        "from pyspark's bin/spark-class), run against it and stop it at the end",
    )
    parser.add_argument("--skip-fnapi", action="store_true", help="do not run Beam's FnApiRunner")
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the figures as JSON to PATH")
    args = parser.parse_args(argv)
    if args.vocabulary <= 0 or args.vocabulary % WORDS_PER_LINE:
        parser.error(f"--vocabulary must be a positive multiple of {WORDS_PER_LINE}")
    if any(w % args.vocabulary for w in args.words) or args.create_words % args.vocabulary or args.create_words <= 0:
        parser.error("--words and --create-words must be positive multiples of --vocabulary")
    if args.events <= 0 or args.events % SEEDS:
        parser.error(f"--events must be a positive multiple of {SEEDS}")
    if args.files <= 0:
        parser.error("--files must be positive")
    return args


def benchmark(args, master: str) -> tuple[dict, list[str]]:
    """Runs every selected workload at every size; the figures and the failures."""
    from reference_runner.spark import SparkRunner, session

    spark = session.get(master)
    try:
        contenders = _contenders(args, spark, SparkRunner(master=master))
        jobs = SparkJobs(spark.sparkContext)
        figures: dict = {
            "master": master,
            "standalone": args.standalone,
            "cpu_count": os.cpu_count(),
            "spark_default_parallelism": spark.sparkContext.defaultParallelism,
            "vocabulary": args.vocabulary,
            "workloads": {},
        }
        print(f"warming up on {master} ...", file=sys.stderr)
        figures["warmup_seconds"] = warm_up(args, contenders)
        figures["idle_rss_mib"] = {k: round(v, 1) for k, v in PeakMemory().now().items()}
        print(f"warm-up seconds {figures['warmup_seconds']}; idle RSS MiB {figures['idle_rss_mib']}", file=sys.stderr)
        _progress("workload", "size", "contender", "seconds", "driver MiB", "python MiB", "java MiB", "notes")
        failures = []
        sizes_of = {"wordcount-files": args.words, "wordcount-create": [args.create_words]}
        for workload in args.workload:
            sizes: dict = {}
            for size in sizes_of.get(workload, [args.events]):
                data, expected = inputs_of(workload, size, args.vocabulary, args.files, args.data_dir)
                sizes[str(size)] = run_size(workload, size, data, expected, contenders, jobs)
                failures += [
                    f"{workload} {size} {name}: {f['error']}"
                    for name, f in sizes[str(size)].items()
                    if isinstance(f, dict) and "error" in f
                ]
            figures["workloads"][workload] = {"sizes": sizes}
            if workload == "wordcount-files":
                figures["workloads"][workload]["growth"] = growth(sizes)
                for name, ratios in figures["workloads"][workload]["growth"].items():
                    text = "  ".join(f"{k} {v:.2f}" for k, v in ratios.items())
                    _progress(workload, "growth", name, "", "", "", "", text)
        figures["failures"] = failures
        return figures, failures
    finally:
        session.stop()


def main(argv=None) -> int:
    args = parse(argv)
    if args.standalone:
        from benchmarks.spark_cluster import standalone_cluster

        os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"  # the driver on loopback too, as the cluster
        with standalone_cluster(workers=2, cores=1) as master:
            figures, failures = benchmark(args, master)
    else:
        figures, failures = benchmark(args, args.master)
    print(json.dumps(figures, indent=2))
    write_json(args.json, figures)
    for failure in failures:
        print(f"FAILED {failure[:1000]}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
