"""Runs the Python SDK's own example pipelines on DirectRunner and on our job servers, and compares outputs.

Each selected example (apache_beam.examples..., the installed SDK's, unedited) runs as a
subprocess, one at a time, the way its docstring tells a user to run it, once per mode:

  direct                  --runner=DirectRunner (the output every other mode must match)
  reference               PortableRunner against `reference-runner serve`
  reference+pre_optimize  the same with --experiments=pre_optimize=all
  spark                   PortableRunner against `reference-runner serve --backend spark`
  spark+pre_optimize      the same with --experiments=pre_optimize=all

Inputs are small local files made here (text, CSV, JSON lines, Avro; a few KB each). Outputs are
every file an example writes (text as lines; Parquet and Avro files as one line per record),
compared as sorted lines after a per-example normalisation where the model leaves something open
(the order of values within a group, batch boundaries) or the example is random (estimate_pi:
the number of trials exactly, the estimate within 0.01 of pi). The examples left out, and why,
are in SKIPPED (`--list` prints both lists).

    python -m benchmarks.sdk_examples                      # everything, LOOPBACK
    python -m benchmarks.sdk_examples --only wordcount --environment process
    python -m benchmarks.sdk_examples --modes direct,reference --keep /tmp/examples

Prints a table (example, mode, verdict, seconds) on stdout, progress on stderr; exits 1 if any
mode failed or gave an output different from DirectRunner's. A run that fails inside the SDK's own
pre-optimization, before the job is submitted, is "SDK FAILED" (no runner involved), one a backend
refuses up front for a documented reason (Spark: streaming) "REFUSED"; neither is counted.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import math
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from benchmarks.processes import start_listening
from benchmarks.report import write_json

_CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
Outputs = dict[str, list[str]]  # output file (relative to the run's directory) -> its lines

# ---------------------------------------------------------------- normalisations of outputs


def all_lines(outputs: Outputs) -> list[str]:
    return [line for lines in outputs.values() for line in lines]


def _sorted_lists(value):
    """The value with every list (not tuple) sorted: order within a group is not defined."""
    if isinstance(value, list):
        return sorted((_sorted_lists(v) for v in value), key=repr)
    if isinstance(value, tuple):
        return tuple(_sorted_lists(v) for v in value)
    if isinstance(value, dict):
        return {k: _sorted_lists(v) for k, v in value.items()}
    return value


def lists_unordered(outputs: Outputs) -> list[str]:
    """Lines that are Python literals, with the lists inside them sorted."""
    result = []
    for line in all_lines(outputs):
        try:
            result.append(repr(_sorted_lists(ast.literal_eval(line))))
        except (ValueError, SyntaxError):
            result.append(line)
    return result


def tuples_in_line_unordered(outputs: Outputs) -> list[str]:
    """juliaset writes one line per x: the (x, y, i) tuples of a group, in the group's order."""
    return [" ".join(sorted(re.findall(r"\([^)]*\)", line))) for line in all_lines(outputs)]


def estimate_pi(outputs: Outputs) -> list[str]:
    """Random trials: the count is exact, the estimate only close to pi."""
    result = []
    for line in all_lines(outputs):
        total, inside, estimate = json.loads(line)
        result.append(
            f"{total} trials, {inside <= total}, estimate within 0.01 of pi: {abs(estimate - math.pi) < 0.01}"
        )
    return result


def csv_headers_once(outputs: Outputs) -> list[str]:
    """DataFrame to_csv writes its header at the top of every shard, and shard counts differ."""
    headers, rows = set(), []
    for lines in outputs.values():
        if lines:
            headers.add(lines[0])
            rows.extend(lines[1:])
    return [f"header: {h}" for h in headers] + rows


def without_avro_and_parquet(outputs: Outputs) -> list[str]:
    """The SDK's Avro and Parquet sinks keep one open file per sink object, so when a bundle writes
    two shards of a window (both keys of the sharding GroupByKey in one bundle) one shard's records
    are lost or its file torn: what they hold depends on bundling, on DirectRunner too. The text,
    FileIO and TFRecord sinks of the same example are compared."""
    return all_lines({path: lines for path, lines in outputs.items() if not path.endswith((".avro", ".parquet"))})


def batches_per_key(outputs: Outputs) -> list[str]:
    """GroupIntoBatches: which elements share a batch depends on arrival order; each key's
    elements and its batch sizes do not (batch size 3, flushed at the end of the window)."""
    per_key: dict = {}
    for line in all_lines(outputs):
        key, batch = ast.literal_eval(line)
        sizes, elements = per_key.setdefault(key, ([], []))
        sizes.append(len(batch))
        elements.extend(batch)
    return [
        f"{key!r}: batch sizes {sorted(sizes)}, elements {sorted(elements)}"
        for key, (sizes, elements) in per_key.items()
    ]


def batched_elements(outputs: Outputs) -> list[str]:
    """BatchElements: batch boundaries follow bundles; the elements and the size bound do not."""
    batches = [ast.literal_eval(line) for line in all_lines(outputs)]
    return [repr(e) for batch in batches for e in batch] + [
        f"every batch has at most 5 elements: {all(len(b) <= 5 for b in batches)}"
    ]


def sample_sizes(outputs: Outputs) -> list[str]:
    """A random sample: its key and size are defined, its members are not."""
    return [repr((key, len(sample))) for key, sample in map(ast.literal_eval, all_lines(outputs))]


# ---------------------------------------------------------------- the examples


@dataclass(frozen=True)
class Example:
    name: str
    module: str  # run as `python -m module args`; "snippet:MODULE:FUNCTION" goes through snippet_main
    args: tuple[str, ...] = ()  # {inputs} and {out} are filled in
    normalise: Callable[[Outputs], list[str]] = all_lines
    needs: tuple[str, ...] = ()  # modules that must be importable ("a|b": one of them)
    note: str = ""
    # directories the example writes relative to the working directory of the process running
    # its DoFns: the submitting process on DirectRunner and LOOPBACK, else the job server's, the
    # worker pool's or Spark's workers' (collected from there too)
    relative_outputs: tuple[str, ...] = ()
    # backend -> what it refuses this example for, up front, by name (verdict REFUSED)
    refused_by: dict = field(default_factory=dict)

    def command(self) -> list[str]:
        if self.module.startswith("snippet:"):
            return [
                sys.executable,
                "-m",
                "benchmarks.snippet_main",
                self.module[len("snippet:") :],
                "--output",
                "{out}/result",
            ]
        return [sys.executable, "-m", self.module, *self.args]

    def environ(self) -> dict:
        # a run that hangs is stopped with SIGABRT first: Python then prints every thread's stack
        env = {**os.environ, "PYTHONFAULTHANDLER": "1"}
        if self.module.startswith("snippet:"):
            # benchmarks/ is not installed: the snippet driver is imported from this checkout
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [_CHECKOUT, os.environ.get("PYTHONPATH")]))
        return env


EX = "apache_beam.examples."
SNIPPETS = "snippet:apache_beam.examples.snippets.transforms."


def _snippet(module: str, function: str = "", normalise=lists_unordered, note="") -> Example:
    """A transform snippet: `module` under apache_beam.examples.snippets.transforms, its function
    (by default named as the module)."""
    function = function or module.rsplit(".", 1)[1]
    return Example(f"snippets/{function}", f"{SNIPPETS}{module}:{function}", normalise=normalise, note=note)


EXAMPLES = [
    Example(
        "wordcount_minimal", EX + "wordcount_minimal", ("--input", "{inputs}/text.txt", "--output", "{out}/counts")
    ),
    Example("wordcount", EX + "wordcount", ("--input", "{inputs}/text.txt", "--output", "{out}/counts")),
    Example(
        "wordcount_with_metrics",
        EX + "wordcount_with_metrics",
        ("--input", "{inputs}/text.txt", "--output", "{out}/counts"),
    ),
    Example(
        "wordcount_debugging",
        EX + "wordcount_debugging",
        ("--input", "{inputs}/text.txt", "--output", "{out}/counts"),
        note="asserts its own result in the pipeline",
    ),
    Example(
        "dataframe/wordcount",
        EX + "dataframe.wordcount",
        ("--input", "{inputs}/text.txt", "--output", "{out}/counts"),
        normalise=csv_headers_once,
        needs=("pandas",),
    ),
    Example(
        "complete/autocomplete",
        EX + "complete.autocomplete",
        ("--input", "{inputs}/text.txt", "--output", "{out}/prefixes"),
    ),
    Example("complete/tfidf", EX + "complete.tfidf", ("--uris", "{inputs}/docs/*", "--output", "{out}/tfidf")),
    Example(
        "complete/estimate_pi",
        EX + "complete.estimate_pi",
        ("--output", "{out}/pi"),
        normalise=estimate_pi,
        note="random: trials exact, estimate within 0.01",
    ),
    Example(
        "complete/top_wikipedia_sessions",
        EX + "complete.top_wikipedia_sessions",
        ("--input", "{inputs}/wikipedia.json", "--output", "{out}/sessions", "--sampling_threshold", "1"),
        note="sampling threshold 1: every edit (the sample is by hash, which differs per process)",
    ),
    Example(
        "complete/juliaset",
        EX + "complete.juliaset.juliaset_main",
        ("--grid_size", "20", "--coordinate_output", "{out}/julia"),
        normalise=tuples_in_line_unordered,
    ),
    Example(
        "complete/distribopt",
        EX + "complete.distribopt",
        ("--input", "{inputs}/crops.csv", "--output", "{out}/optimum"),
        needs=("scipy",),
    ),
    Example(
        "complete/game/user_score",
        EX + "complete.game.user_score",
        ("--input", "{inputs}/game.csv", "--output", "{out}/scores"),
    ),
    Example(
        "cookbook/coders", EX + "cookbook.coders", ("--input", "{inputs}/matches.json", "--output", "{out}/points")
    ),
    Example(
        "cookbook/custom_ptransform",
        EX + "cookbook.custom_ptransform",
        ("--input", "{inputs}/animals.txt", "--output", "{out}/counts"),
        note="three pipelines in a row writing the same output",
    ),
    Example(
        "cookbook/group_with_coder",
        EX + "cookbook.group_with_coder",
        ("--input", "{inputs}/players.csv", "--output", "{out}/totals"),
    ),
    Example(
        "cookbook/mergecontacts",
        EX + "cookbook.mergecontacts",
        (
            "--input_email",
            "{inputs}/email.tsv",
            "--input_phone",
            "{inputs}/phone.tsv",
            "--input_snailmail",
            "{inputs}/snailmail.tsv",
            "--output_tsv",
            "{out}/contacts",
            "--output_stats",
            "{out}/stats",
        ),
    ),
    Example(
        "cookbook/multiple_output_pardo",
        EX + "cookbook.multiple_output_pardo",
        ("--input", "{inputs}/text.txt", "--output", "{out}/parts"),
    ),
    Example(
        "matrix_power",
        EX + "matrix_power",
        (
            "--input_matrix",
            "{inputs}/matrix.txt",
            "--input_vector",
            "{inputs}/vector.txt",
            "--exponent",
            "3",
            "--output",
            "{out}/vector",
        ),
    ),
    Example("avro_nyc_trips", EX + "avro_nyc_trips", ("--input", "{inputs}/trips.avro", "--output", "{out}/prices")),
    Example(
        "dataframe/taxiride location_id_agg",
        EX + "dataframe.taxiride",
        ("--input", "{inputs}/rides.csv", "--output", "{out}/agg"),
        normalise=csv_headers_once,
        needs=("pandas",),
    ),
    Example(
        "dataframe/taxiride borough_enrich",
        EX + "dataframe.taxiride",
        (
            "--input",
            "{inputs}/rides.csv",
            "--zone_lookup",
            "{inputs}/zones.csv",
            "--pipeline",
            "borough_enrich",
            "--output",
            "{out}/agg",
        ),
        normalise=csv_headers_once,
        needs=("pandas",),
    ),
    Example(
        "sinks/test_write_bounded",
        EX + "sinks.test_write_bounded",
        needs=("pyarrow",),
        relative_outputs=("__output_batch__",),
        note="text, FileIO and Parquet sinks, written under the working directory",
    ),
    Example(
        "sinks/test_write_unbounded",
        EX + "sinks.test_write_unbounded",
        normalise=without_avro_and_parquet,
        needs=("pyarrow", "crcmod|google_crc32c|snappy"),
        relative_outputs=("__output__",),
        refused_by={"spark": "streaming (a TestStream, triggers): the Spark backend runs batch pipelines"},
        note="a TestStream into windowed text, FileIO and TFRecord sinks (its Avro and Parquet ones lose "
        "records on every runner, see without_avro_and_parquet)",
    ),
    _snippet("aggregation.groupintobatches", normalise=batches_per_key),
    _snippet("aggregation.batchelements", normalise=batched_elements),
    _snippet("aggregation.cogroupbykey"),
    _snippet("aggregation.combineperkey_combinefn"),
    _snippet("aggregation.combineglobally_side_inputs_singleton"),
    _snippet("aggregation.count_per_key"),
    _snippet("aggregation.distinct"),
    _snippet("aggregation.latest_per_key"),
    _snippet("aggregation.top_per_key"),
    _snippet("aggregation.mean_per_key"),
    _snippet("aggregation.approximatequantiles"),
    _snippet("aggregation.approximateunique"),
    _snippet("aggregation.tolist"),
    _snippet("aggregation.groupby_expr_aggregate", "expr_aggregate", note="schema-aware GroupBy"),
    _snippet("aggregation.groupby_global_aggregate", "global_aggregate", note="schema-aware global aggregate"),
    _snippet("aggregation.sample_fixed_size_per_key", normalise=sample_sizes, note="random: keys and sample sizes"),
    _snippet("other.window"),
    _snippet("elementwise.withtimestamps_event_time"),
    _snippet("elementwise.partition_function"),
    _snippet("elementwise.regex_find_kv"),
    _snippet("elementwise.map_side_inputs_dict"),
]

SKIPPED = {
    "windowed_wordcount, streaming_wordcount, streaming_wordcount_debugging": "read Pub/Sub (and write BigQuery)",
    "complete/game/hourly_team_score": "writes BigQuery only",
    "complete/game/leader_board, complete/game/game_stats": "read Pub/Sub, write BigQuery",
    "cookbook/bigquery_schema, bigquery_side_input, bigquery_tornadoes, filters": "read or write BigQuery",
    "cookbook/datastore_wordcount": "Cloud Datastore",
    "dataframe/flight_delays": "reads BigQuery",
    "wordcount_xlang, wordcount_xlang_sql, sql_taxi": "cross-language: a Java expansion service (and Pub/Sub)",
    "kafkataxi": "Kafka (cross-language)",
    "inference/*, ml_transform/*, online_clustering, per_entity_training, california_housing_clustering": (
        "ML libraries and models (scikit-learn, TensorFlow, PyTorch...) not on this machine, several download models"
    ),
    "rate_limiter_simple": "needs an Envoy rate-limit service",
    "flink/flink_streaming_impulse": "a Flink-only source",
    "sinks/test_periodicimpulse": "fails on DirectRunner too in this SDK (2.77): it uses "
    "beam.transforms.periodicsequence, which apache_beam.transforms does not import",
    "cookbook/ordered_window_elements": "a library without a main; its tests are pinned to PrismRunner and need Go",
    "snippets/snippets.py and other transform snippets": "documentation fragments; a representative set of the "
    "transform snippets runs (others: ML, enrichment services, or print-only lifecycle demos)",
}

# ---------------------------------------------------------------- inputs

_WORDS = (
    "the king and his three daughters speak of love land and power while the fool sings "
    "o'er heath and storm night falls on the castle gates who is it that can tell me who I am "
    "nothing will come of nothing speak again thou art a soul in bliss but I am bound upon a "
    "wheel of fire ripeness is all men must endure their going hence even as their coming "
    "hither the weight of this sad time we must obey speak what we feel not what we ought to "
    "say don't sir I'll"
).split()


def _text(rng: random.Random, lines: int) -> str:
    out = []
    for _ in range(lines):
        words = [rng.choice(_WORDS) for _ in range(rng.randint(4, 12))]
        words[0] = words[0].capitalize()
        out.append(" ".join(words) + rng.choice([".", ",", ";", "!", "?", ""]))
    return "\n".join(out) + "\n"


def make_inputs(directory: str) -> None:
    """Every input file the examples read, small and deterministic."""
    rng = random.Random(2024)
    os.makedirs(os.path.join(directory, "docs"), exist_ok=True)

    def write(name, text):
        with open(os.path.join(directory, name), "w") as f:
            f.write(text)

    # wordcount_debugging asserts Flourish x3 and stomach x1
    write("text.txt", _text(rng, 60) + "Flourish! Flourish, and Flourish: an empty stomach.\n\n" + _text(rng, 20))
    for n in range(3):
        write(f"docs/doc{n}.txt", _text(rng, 8 + 4 * n))
    teams = ["AmberArmadillo", "BisqueBilby", "CoralCaracal", "DarkSalmonDingo"]
    lines = []
    for n in range(120):
        team = rng.choice(teams)
        lines.append(
            f"user{n % 13}_{team},{team},{rng.randint(0, 20)},{1445230923951 + n * 61_000},"
            f"2015-11-02 09:{n % 60:02d}:28.224"
        )
    lines.insert(40, "not,a,valid,score")
    write("game.csv", "\n".join(lines) + "\n")
    edits, t = [], 1_420_070_400  # 2015-01-01
    for n in range(90):
        t += rng.choice([300, 900, 1800, 5000, 40_000, 200_000])
        edits.append(json.dumps({"timestamp": t, "contributor_username": f"editor{n % 4}"}))
    write("wikipedia.json", "\n".join(edits) + "\n")
    countries = ["Germany", "Italy", "Brasil", "Spain", "Japan", "Ghana"]
    write(
        "matches.json",
        "".join(
            json.dumps({"host": [h, rng.randint(0, 4)], "guest": [g, rng.randint(0, 4)]}) + "\n"
            for h, g in (rng.sample(countries, 2) for _ in range(25))
        ),
    )
    write("animals.txt", "".join(rng.choice(["CAT", "DOG", "EMU"]) + "\n" for _ in range(40)))
    write(
        "players.csv",
        "".join(f"{rng.choice(['joe', 'fred', 'mary', 'ann', 'bob'])},{rng.randint(0, 12)}\n" for _ in range(30)),
    )
    people = [f"Person {c}" for c in "ABCDEFGHIJ"]
    write("email.tsv", "".join(f"{p}\t{p.split()[1].lower()}@example.com\n" for p in people[:7]))
    write("phone.tsv", "".join(f"{p}\t412-555-01{n:02d}\n" for n, p in enumerate(people[3:])))
    write("snailmail.tsv", "".join(f"{p}\t{n} Main St, Pittsburgh, PA\n" for n, p in enumerate(people[::2])))
    write(
        "matrix.txt", "".join(f"{r}: " + " ".join(str(rng.randint(-3, 3)) for _ in range(4)) + "\n" for r in range(4))
    )
    write("vector.txt", "1 2 0 -1\n")
    write("crops.csv", "OP01,8,12,0,12\nOP02,30,14,3,12\nOP03,25,7,3,14\nOP04,87,7,2,2\nOP05,19,1,7,10\n")
    write(
        "rides.csv",
        "DOLocationID,passenger_count\n" + "".join(f"{rng.randint(1, 6)},{rng.randint(1, 4)}\n" for _ in range(50)),
    )
    write(
        "zones.csv",
        "LocationID,Borough,Zone\n"
        + "".join(f"{n},{['Manhattan', 'Queens', 'Brooklyn'][n % 3]},Zone {n}\n" for n in range(1, 7)),
    )
    _write_trips(os.path.join(directory, "trips.avro"), rng)


def _write_trips(path: str, rng: random.Random) -> None:
    """NYC for-hire trips in the fields avro_nyc_trips reads. Money and distances are multiples of
    1/4, so sums are exact whatever order a combiner adds them in."""
    import fastavro

    money = [
        "base_passenger_fare",
        "tolls",
        "bcf",
        "sales_tax",
        "congestion_surcharge",
        "airport_fee",
        "tips",
        "driver_pay",
        "trip_miles",
    ]
    times = ["request_datetime", "on_scene_datetime", "pickup_datetime", "dropoff_datetime"]
    schema = {
        "type": "record",
        "name": "trip",
        "fields": [
            {"name": "hvfhs_license_num", "type": ["null", "string"]},
            *({"name": t, "type": ["null", "long"]} for t in times),
            *({"name": m, "type": ["null", "double"]} for m in money),
            {"name": "trip_time", "type": ["null", "long"]},
        ],
    }
    records = []
    for n in range(60):
        record = {m: rng.randint(1, 80) / 4 for m in money}
        record["airport_fee"] = None if n % 5 == 0 else record["airport_fee"]
        start = 1_675_209_600_000 + n * 7_200_000  # from 2023-02-01, two hours apart
        record.update({t: start + 60_000 * i for i, t in enumerate(times)})
        if n % 7 == 0:
            record["request_datetime"] = None
        record["hvfhs_license_num"] = ["HV0003", "HV0005", "HV0004", "HV0009"][n % 4]
        record["trip_time"] = rng.randint(5, 60) * 60
        records.append(record)
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema), records)


# ---------------------------------------------------------------- outputs


def read_outputs(directory: str) -> Outputs:
    """Every file under `directory`: text as lines, Parquet and Avro as one line per record. The
    temporary directories of Beam's file sinks (beam-temp-*, .temp*) are not output."""
    outputs = {}
    for root, dirs, files in os.walk(directory):
        dirs[:] = [d for d in dirs if not d.startswith(("beam-temp-", ".temp"))]
        for name in files:
            path = os.path.join(root, name)
            try:
                lines = _read_records(path)
            except Exception as e:  # a torn file is a difference, not a crash of this script
                lines = [f"<unreadable: {type(e).__name__}>"]
            outputs[os.path.relpath(path, directory)] = lines
    return outputs


def _read_records(path: str) -> list[str]:
    with open(path, "rb") as f:
        head = f.read(4)
    if head == b"PAR1":
        import pyarrow.parquet

        return [repr(sorted(r.items())) for r in pyarrow.parquet.read_table(path).to_pylist()]
    if head == b"Obj\x01":
        import fastavro

        with open(path, "rb") as f:
            return [repr(sorted(r.items())) for r in fastavro.reader(f)]
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read().splitlines()


def difference(expected: list[str], actual: list[str], limit: int = 5) -> str:
    missing, extra = list(expected), []
    for line in actual:
        if line in missing:
            missing.remove(line)
        else:
            extra.append(line)
    parts = [f"{len(missing)} expected lines missing, {len(extra)} unexpected"]
    parts += [f"  - {line[:200]}" for line in missing[:limit]] + [f"  + {line[:200]}" for line in extra[:limit]]
    return "\n".join(parts)


# ---------------------------------------------------------------- modes and servers

MODES = ["direct", "reference", "reference+pre_optimize", "spark", "spark+pre_optimize"]
PRE_OPTIMIZE = "--experiments=pre_optimize=all"


@dataclass
class Servers:
    """Job servers (and a worker pool or boot script for the environment), started when first needed."""

    work: str
    environment: str
    started: dict = field(default_factory=dict)
    processes: list = field(default_factory=list)

    @property
    def cwd(self) -> str:
        """The working directory of the servers, so of the workers they start."""
        return os.path.join(self.work, "servers-cwd")

    def _start(self, name: str, command: str, env=None) -> str:
        if name not in self.started:
            print(f"starting {name}: {command.format(python='python', port='N')}", file=sys.stderr)
            os.makedirs(self.cwd, exist_ok=True)
            log = open(os.path.join(self.work, f"{name}.log"), "w")
            process, address = start_listening(command, env=env, log=log, timeout=120, cwd=self.cwd)
            self.processes.append(process)
            self.started[name] = address
        return self.started[name]

    def job_server(self, backend: str) -> str:
        return self._start(
            f"job-server-{backend}", "{python} -m reference_runner.jobserver --port {port} --backend " + backend
        )

    def environment_options(self) -> list[str]:
        if self.environment == "loopback":
            return ["--environment_type=LOOPBACK"]
        if self.environment == "external":
            # the pool starts each worker as `python -c ...`: that must be this interpreter
            env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
            pool = self._start(
                "worker-pool", "{python} -m apache_beam.runners.worker.worker_pool_main --service_port={port}", env
            )
            return ["--environment_type=EXTERNAL", f"--environment_config={pool}"]
        boot = os.path.join(self.work, "boot.sh")
        if not os.path.exists(boot):
            with open(boot, "w") as f:
                f.write(f'#!/bin/sh\nexec {sys.executable} -m reference_runner.worker.boot "$@"\n')
            os.chmod(boot, 0o755)
        return ["--environment_type=PROCESS", json.dumps({"command": boot}).join(["--environment_config=", ""])]

    def options(self, mode: str) -> list[str]:
        if mode == "direct":
            return ["--runner=DirectRunner"]
        backend, _, extra = mode.partition("+")
        return (
            ["--runner=PortableRunner", f"--job_endpoint={self.job_server(backend)}"]
            + self.environment_options()
            + ([PRE_OPTIMIZE] if extra else [])
        )

    def stop(self) -> None:
        for process in self.processes:  # each leads its own process group: a pool's workers go too
            os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


# ---------------------------------------------------------------- running


@dataclass
class Result:
    example: str
    mode: str
    verdict: str  # oracle (direct) | same | DIFFERENT | FAILED | TIMEOUT | NO ORACLE | SDK FAILED | REFUSED | skipped
    seconds: float
    detail: str = ""


def run_once(example: Example, options: list[str], inputs: str, run_dir: str, timeout: float):
    """Runs the example with `options` in `run_dir`/work; returns (exit code or None on timeout,
    seconds, last lines of its stderr)."""
    work = os.path.join(run_dir, "work")
    os.makedirs(os.path.join(work, "out"), exist_ok=True)
    command = [part.format(inputs=inputs, out=os.path.join(work, "out")) for part in example.command()] + options
    with open(os.path.join(run_dir, "command.txt"), "w") as f:
        f.write(" ".join(command) + "\n")
    started = time.perf_counter()
    with open(os.path.join(run_dir, "stdout.txt"), "w") as out, open(os.path.join(run_dir, "stderr.txt"), "w") as err:
        process = subprocess.Popen(
            command, cwd=work, stdout=out, stderr=err, env=example.environ(), start_new_session=True
        )
        try:
            code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGABRT)  # its stacks go to stderr.txt
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            code = None
    seconds = time.perf_counter() - started
    with open(os.path.join(run_dir, "stderr.txt"), errors="replace") as f:
        tail = f.read().splitlines()[-12:]
    return code, seconds, "\n".join(tail)


def collect_outputs(example: Example, run_dir: str, servers: Servers) -> Outputs:
    """What the run wrote: under its work directory, and the example's relative outputs that
    landed in the servers' working directory (moved under work/from-workers)."""
    work = os.path.join(run_dir, "work")
    for name in example.relative_outputs:
        landed = os.path.join(servers.cwd, name)
        if os.path.exists(landed):
            shutil.move(landed, os.path.join(work, "from-workers", name))
    return read_outputs(work)


def _read(path: str) -> str:
    with open(path, errors="replace") as f:
        return f.read()


def failed_before_submission(stderr_path: str) -> bool:
    """PortableRunner's own pre-optimization (--experiments=pre_optimize=...) raised: the job
    never reached a job server, so no runner is involved."""
    text = _read(stderr_path)
    trace = text[text.rfind("Traceback (most recent call last)") :]
    return "in _optimize_pipeline" in trace and "portable_runner.py" in trace


def run_example(
    example: Example, modes: list[str], servers: Servers, inputs: str, base: str, timeout: float
) -> list[Result]:
    missing = [m for m in example.needs if not any(importlib.util.find_spec(n) for n in m.split("|"))]
    if missing:
        return [Result(example.name, mode, "skipped", 0.0, f"needs {', '.join(missing)}") for mode in modes]
    results, oracle = [], None
    for mode in ["direct"] + [m for m in modes if m != "direct"]:
        if mode != "direct" and oracle is None:
            results.append(Result(example.name, mode, "NO ORACLE", 0.0, "not run: DirectRunner failed"))
            continue
        print(f"{example.name} [{mode}] ...", file=sys.stderr, flush=True)
        run_dir = os.path.join(base, re.sub(r"[^\w.+-]+", "_", example.name), mode)
        try:
            options = servers.options(mode)
        except RuntimeError as e:
            results.append(Result(example.name, mode, "FAILED", 0.0, f"could not start its server: {e}"))
            continue
        code, seconds, tail = run_once(example, options, inputs, run_dir, timeout)
        outputs = collect_outputs(example, run_dir, servers)
        refusal = example.refused_by.get(mode.partition("+")[0])
        if code is None:
            result = Result(example.name, mode, "TIMEOUT", seconds, f"no exit within {timeout:.0f} s\n{tail}")
        elif code != 0 and failed_before_submission(os.path.join(run_dir, "stderr.txt")):
            result = Result(
                example.name,
                mode,
                "SDK FAILED",
                seconds,
                f"the SDK failed preparing the pipeline, before it reached the job server\n{tail}",
            )
        elif code != 0 and refusal and "cannot run this pipeline" in _read(os.path.join(run_dir, "stderr.txt")):
            result = Result(example.name, mode, "REFUSED", seconds, f"refused up front: {refusal}")
        elif code != 0:
            result = Result(example.name, mode, "FAILED", seconds, f"exit code {code}\n{tail}")
        else:
            lines = sorted(example.normalise(outputs))
            if mode == "direct":
                oracle = lines or None
                result = Result(
                    example.name, mode, "oracle" if lines else "FAILED", seconds, "" if lines else "wrote no output"
                )
            elif lines == oracle:
                result = Result(example.name, mode, "same", seconds)
            else:
                result = Result(example.name, mode, "DIFFERENT", seconds, difference(oracle, lines))
        print(f"  {result.verdict} in {result.seconds:.1f} s", file=sys.stderr, flush=True)
        if mode in modes:
            results.append(result)
    return results


def print_table(results: Iterable[Result], environment: str) -> None:
    results = list(results)
    width = max([len(r.example) for r in results] + [7])
    print(f"{'example':{width}}  {'mode':24}  {'verdict':9}  seconds   (portable modes: {environment.upper()})")
    for r in results:
        print(f"{r.example:{width}}  {r.mode:24}  {r.verdict:9}  {r.seconds:7.1f}")
    for r in results:
        if r.detail and r.verdict != "skipped":
            print(f"\n{r.example} [{r.mode}] {r.verdict}:\n{r.detail}")


def select(only: list[str] | None) -> list[Example]:
    if not only:
        return list(EXAMPLES)
    chosen = [e for e in EXAMPLES if any(re.search(pattern, e.name) for pattern in only)]
    if not chosen:
        raise SystemExit(f"no example matches {only}; --list shows them")
    return chosen


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.sdk_examples",
        description=__doc__.split("\n\n")[0],
        epilog="\n\n".join(__doc__.split("\n\n")[1:]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--only",
        action="append",
        metavar="REGEX",
        help="run the examples whose name matches REGEX (repeatable; default: all)",
    )
    parser.add_argument(
        "--modes",
        default=",".join(MODES),
        help=f"comma-separated modes to run (default: all of {','.join(MODES)}); direct always runs, as the oracle",
    )
    parser.add_argument(
        "--environment",
        choices=["loopback", "external", "process"],
        default="loopback",
        help="SDK worker environment of the portable modes: LOOPBACK (workers in the submitting "
        "process), EXTERNAL (a Beam worker pool this starts), PROCESS (the job server "
        "starts `python -m reference_runner.worker.boot` through a boot script)",
    )
    parser.add_argument("--timeout", type=float, default=300, help="seconds one run may take (default 300)")
    parser.add_argument(
        "--keep",
        metavar="DIR",
        default=None,
        help="run in DIR and keep it: inputs, each run's command, stdout, stderr and outputs, "
        "the servers' logs (default: a temporary directory, removed)",
    )
    parser.add_argument("--json", metavar="PATH", default=None, help="also write the results as JSON to PATH")
    parser.add_argument("--list", action="store_true", help="list the examples and the skipped ones, then exit")
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.list:
        for e in EXAMPLES:
            print(f"{e.name:45} {e.module}" + (f"  ({e.note})" if e.note else ""))
        print("\nskipped:")
        for names, reason in SKIPPED.items():
            print(f"  {names}: {reason}")
        return 0
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = set(modes) - set(MODES)
    if unknown:
        raise SystemExit(f"unknown modes {sorted(unknown)}; choose from {MODES}")
    examples = select(args.only)
    base = args.keep or tempfile.mkdtemp(prefix="sdk-examples-")
    os.makedirs(base, exist_ok=True)
    inputs = os.path.join(base, "inputs")
    make_inputs(inputs)
    servers = Servers(base, args.environment)
    results = []
    try:
        for example in examples:
            results.extend(run_example(example, modes, servers, inputs, os.path.join(base, "runs"), args.timeout))
    finally:
        servers.stop()
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    print_table(results, args.environment)
    write_json(args.json, {"environment": args.environment, "results": [r.__dict__ for r in results]})
    bad = [r for r in results if r.verdict not in ("oracle", "same", "skipped", "SDK FAILED", "REFUSED")]
    compared = [r for r in results if r.mode != "direct" and r.verdict != "skipped"]
    print(
        f"\n{sum(r.verdict == 'same' for r in compared)} of {len(compared)} runs gave DirectRunner's output; "
        f"{len(bad)} failed or differed",
        file=sys.stderr,
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
