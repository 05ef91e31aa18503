"""Beam's Java examples (beam-examples-java) that run on local files only: the input each is given,
its command-line arguments, and what it must write, computed here from that input alone.

Each check reads the files the example wrote (or, for DebuggingWordCount, the lines its DoFn
logged) and returns None when they are what the example's code says they must be, else one line
saying what differs. Nothing here looks at any runner's output to decide what is right.
"""

from __future__ import annotations

import collections
import datetime
import itertools
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from zoneinfo import ZoneInfo

# One text serves WordCount, DebuggingWordCount and WindowedWordCount. DebuggingWordCount asserts
# (PAssert, in the example itself) that its filter "Flourish|stomach" keeps exactly Flourish: 3
# and stomach: 1, so the text has those counts; "flourish" in lower case is another word.
WORDS_TEXT = """\
KING LEAR. Flourish! Enter the King, with attendants.
The king is come; Flourish, trumpets, flourish.

Our stomach is full -- 42 times over; the café was naïve, über-naïve.
Flourish once more: the end, the END.
"""

# TfIdf reads every file of a directory; each document's words are split on \\W+ and lower-cased.
TFIDF_DOCS = {
    "alpha.txt": "The quick brown fox.\nThe lazy dog sleeps; the fox runs!\n",
    "beta.txt": "A lazy afternoon: the dog and the cat.\n",
    "gamma.txt": "Quick, quick -- the cat runs away from the dog.\nNo fox here.\n",
}

DISTINCT_TEXT = "apple\nbanana\napple\ncherry\n\nbanana\nDate\ndate\napple\n\n"

# The gaming examples' CSV: user,team,score,timestamp_ms,readable_time; two lines do not parse
# (the examples count and skip them).
_GAME_BASE_MS = 1_447_700_000_000  # 2015-11-16 18:53:20 UTC
GAME_EVENTS = [
    ("user1_AmberKoala", "AmberKoala", 12, _GAME_BASE_MS + 60_000),
    ("user2_AmberKoala", "AmberKoala", 7, _GAME_BASE_MS + 120_000),
    ("user1_AmberKoala", "AmberKoala", 5, _GAME_BASE_MS + 3_700_000),
    ("user3_BisqueBilby", "BisqueBilby", 20, _GAME_BASE_MS + 200_000),
    ("user3_BisqueBilby", "BisqueBilby", 1, _GAME_BASE_MS + 7_300_000),
    ("user4_BisqueBilby", "BisqueBilby", 9, _GAME_BASE_MS + 7_400_000),
    ("user2_AmberKoala", "AmberKoala", 3, _GAME_BASE_MS + 7_500_000),
    ("user5_CrimsonCat", "CrimsonCat", 15, _GAME_BASE_MS + 3_800_000),
]
GAME_CSV = (
    "".join(f"{u},{t},{s},{ts},2015-11-16 00:00:00.000\n" for u, t, s, ts in GAME_EVENTS)
    + "not,a,number,here\n"
    + "too-short\n"
)

# WindowedWordCount gives each line a random timestamp in [min, max): three 10-minute windows.
WINDOWED_MIN_MS = 1_700_000_400_000  # 2023-11-14 22:20:00 UTC, a multiple of 10 minutes
WINDOWED_MAX_MS = WINDOWED_MIN_MS + 30 * 60_000

_LA = ZoneInfo("America/Los_Angeles")


def java_words(line: str) -> list[str]:
    """ExampleUtils.TOKENIZER_PATTERN "[^\\p{L}]+": the words are the runs of letters (str.isalpha
    is Unicode's category L, as \\p{L} is)."""
    return ["".join(run) for is_letter, run in itertools.groupby(line, str.isalpha) if is_letter]


def word_counts(text: str) -> collections.Counter:
    counts: collections.Counter = collections.Counter()
    for line in text.splitlines():
        counts.update(java_words(line))
    return counts


def _read_lines(files: list[Path]) -> list[str]:
    lines: list[str] = []
    for f in files:
        lines.extend(f.read_text(encoding="utf-8").splitlines())
    return lines


def _shards(directory: Path, prefix: str, suffix: str = "") -> list[Path]:
    pattern = re.compile(re.escape(prefix) + r"-\d{5}-of-\d{5}" + re.escape(suffix) + "$")
    return sorted(p for p in directory.iterdir() if pattern.match(p.name))


def _compare_counts(got: dict, want: dict, what: str) -> str | None:
    if got == want:
        return None
    missing = sorted(set(want) - set(got), key=str)
    extra = sorted(set(got) - set(want), key=str)
    wrong = sorted((k for k in set(want) & set(got) if want[k] != got[k]), key=str)
    parts = []
    if missing:
        parts.append(f"missing {missing[:5]}")
    if extra:
        parts.append(f"unexpected {extra[:5]}")
    if wrong:
        parts.append("wrong " + ", ".join(f"{k!r}: {got[k]} (want {want[k]})" for k in wrong[:5]))
    return f"{what}: " + "; ".join(parts)


def _parse_word_count_lines(lines: list[str]) -> tuple[dict, str | None]:
    """WordCount.FormatAsTextFn: "word: count", one line per word."""
    got: dict = {}
    for line in lines:
        word, sep, count = line.rpartition(": ")
        if not sep or not count.isdigit():
            return got, f"a line not of the form 'word: count': {line!r}"
        if word in got:
            return got, f"{word!r} written twice"
        got[word] = int(count)
    return got, None


@dataclass(frozen=True)
class Context:
    """Where one run of an example happens: its working directory, and what it printed."""

    work: Path
    stdout: str
    stderr: str


@dataclass(frozen=True)
class JavaExample:
    name: str  # the row's name: the class without org.apache.beam.examples.
    main_class: str
    prepare: Callable[[Path], list[str]]  # writes the inputs into the work dir; the example's own arguments
    check: Callable[[Context], str | None]
    jvm_flags: tuple[str, ...] = ()


# ---------------------------------------------------------------------------------------------
# WordCount: TextIO read, ParDo, Count.perElement, TextIO write.


def _prepare_words(work: Path) -> list[str]:
    (work / "input.txt").write_text(WORDS_TEXT, encoding="utf-8")
    (work / "out").mkdir()
    return [f"--inputFile={work / 'input.txt'}", f"--output={work / 'out' / 'counts'}"]


def _check_word_count(ctx: Context) -> str | None:
    files = _shards(ctx.work / "out", "counts")
    if not files:
        return "no output file counts-SSSSS-of-NNNNN was written"
    got, problem = _parse_word_count_lines(_read_lines(files))
    return problem or _compare_counts(got, dict(word_counts(WORDS_TEXT)), "word counts")


# ---------------------------------------------------------------------------------------------
# DebuggingWordCount: PAssert inside the example (the job fails if Flourish: 3 and stomach: 1 are
# not exactly what its filter keeps); its FilterTextFn logs "Matched: WORD" at debug level for
# each word it keeps, which slf4j-simple prints on stderr (the LOOPBACK worker runs in this JVM).


def _check_debugging(ctx: Context) -> str | None:
    matched = re.findall(r"Matched: (\S+)", ctx.stderr)
    want = sorted(w for w in word_counts(WORDS_TEXT) if re.fullmatch("Flourish|stomach", w))
    if sorted(matched) != want:
        return f"FilterTextFn logged Matched: {sorted(matched)}, want {want}"
    return None


# ---------------------------------------------------------------------------------------------
# WindowedWordCount: random timestamps in [min, max), 10-minute fixed windows, one file set per
# window named by WriteOneFilePerWindow: PREFIX-HH:MM-HH:MM-SHARD-of-N (UTC hours and minutes).


def _prepare_windowed(work: Path) -> list[str]:
    args = _prepare_words(work)
    return [
        args[0],
        f"--output={work / 'out' / 'windowed'}",
        f"--minTimestampMillis={WINDOWED_MIN_MS}",
        f"--maxTimestampMillis={WINDOWED_MAX_MS}",
    ]


def _window_label(start_ms: int, minutes: int) -> str:
    start = datetime.datetime.fromtimestamp(start_ms / 1000, datetime.timezone.utc)
    end = start + datetime.timedelta(minutes=minutes)
    return f"{start:%H:%M}-{end:%H:%M}"


def _check_windowed(ctx: Context) -> str | None:
    labels = {_window_label(ms, 10) for ms in range(WINDOWED_MIN_MS, WINDOWED_MAX_MS, 600_000)}
    pattern = re.compile(r"windowed-(\d\d:\d\d-\d\d:\d\d)-(\d+)-of-(\d+)$")
    per_window: dict[str, list[Path]] = collections.defaultdict(list)
    for f in (ctx.work / "out").iterdir():
        m = pattern.match(f.name)
        if m:
            per_window[m.group(1)].append(f)
    if not per_window:
        return "no output file windowed-HH:MM-HH:MM-S-of-N was written"
    strange = sorted(set(per_window) - labels)
    if strange:
        return f"files for windows outside [min, max): {strange}, want among {sorted(labels)}"
    totals: collections.Counter = collections.Counter()
    for label, files in per_window.items():
        got, problem = _parse_word_count_lines(_read_lines(files))
        if problem:
            return f"window {label}: {problem}"
        totals.update(got)
    # Each line lands in one window, so each word's counts over the windows add up to its total.
    return _compare_counts(dict(totals), dict(word_counts(WORDS_TEXT)), "word counts summed over the windows")


# ---------------------------------------------------------------------------------------------
# complete.TfIdf: words split on \W+ and lower-cased; tf = count in doc / words in doc,
# df = docs with the word / docs; written "word,\tURI,\t%f" to PREFIX-SSSSS-of-NNNNN.csv.


def tfidf_expected() -> dict[tuple[str, str], float]:
    docs = {
        name: [w.lower() for line in text.splitlines() for w in re.split(r"[^A-Za-z0-9_]+", line) if w]
        for name, text in TFIDF_DOCS.items()
    }
    containing = collections.Counter(w for words in docs.values() for w in set(words))
    expected = {}
    for name, words in docs.items():
        for word, n in collections.Counter(words).items():
            expected[(word, name)] = n / len(words) * math.log(1 / (containing[word] / len(docs)))
    return expected


def _prepare_tfidf(work: Path) -> list[str]:
    (work / "docs").mkdir()
    for name, text in TFIDF_DOCS.items():
        (work / "docs" / name).write_text(text)
    (work / "out").mkdir()
    return [f"--input={work / 'docs'}/", f"--output={work / 'out' / 'tfidf'}"]


def _check_tfidf(ctx: Context) -> str | None:
    files = _shards(ctx.work / "out", "tfidf", ".csv")
    if not files:
        return "no output file tfidf-SSSSS-of-NNNNN.csv was written"
    got: dict[tuple[str, str], float] = {}
    for line in _read_lines(files):
        parts = line.split(",\t")
        if len(parts) != 3 or not parts[1].startswith("file:"):
            return f"a line not of the form 'word,\\tURI,\\tvalue': {line!r}"
        key = (parts[0], parts[1].rsplit("/", 1)[-1])
        if key in got:
            return f"{key} written twice"
        got[key] = float(parts[2])
    want = tfidf_expected()
    if set(got) != set(want):
        return _compare_counts(dict.fromkeys(got, 0), dict.fromkeys(want, 0), "(word, document) pairs")
    off = [(k, got[k], want[k]) for k in sorted(want) if abs(got[k] - want[k]) > 1e-6]
    if off:
        return "tf-idf off: " + ", ".join(f"{k}: {g} (want {w:.6f})" for k, g, w in off[:5])
    return None


# ---------------------------------------------------------------------------------------------
# cookbook.DistinctExample: each distinct line once.


def _prepare_distinct(work: Path) -> list[str]:
    (work / "input.txt").write_text(DISTINCT_TEXT)
    (work / "out").mkdir()
    return [f"--input={work / 'input.txt'}", f"--output={work / 'out' / 'deduped'}"]


def _check_distinct(ctx: Context) -> str | None:
    files = _shards(ctx.work / "out", "deduped")
    if not files:
        return "no output file deduped-SSSSS-of-NNNNN was written"
    got = collections.Counter(_read_lines(files))
    want = collections.Counter(set(DISTINCT_TEXT.splitlines()))
    return _compare_counts(dict(got), dict(want), "lines (each distinct line once)")


# ---------------------------------------------------------------------------------------------
# complete.game.UserScore and HourlyTeamScore: WriteToText rows "field: value, ..." (fields in
# a HashMap's order, so they are read by name).


def _prepare_game(work: Path, output: str) -> list[str]:
    (work / "gaming.csv").write_text(GAME_CSV)
    (work / "out").mkdir()
    return [f"--input={work / 'gaming.csv'}", f"--output={work / 'out' / output}"]


def _check_user_score(ctx: Context) -> str | None:
    files = _shards(ctx.work / "out", "user_scores")
    if not files:
        return "no output file user_scores-SSSSS-of-NNNNN was written"
    got: dict = {}
    for line in _read_lines(files):
        fields = dict(part.partition(": ")[::2] for part in line.split(", "))
        if set(fields) != {"user", "total_score"}:
            return f"a row not of fields user, total_score: {line!r}"
        if fields["user"] in got:
            return f"user {fields['user']!r} written twice"
        got[fields["user"]] = int(fields["total_score"])
    want: collections.Counter = collections.Counter()
    for user, _team, score, _ts in GAME_EVENTS:
        want[user] += score
    return _compare_counts(got, dict(want), "user score sums")


def _la(ms: int) -> str:
    """GameConstants.DATE_TIME_FORMATTER: yyyy-MM-dd HH:mm:ss.SSS in America/Los_Angeles."""
    t = datetime.datetime.fromtimestamp(ms / 1000, _LA)
    return f"{t:%Y-%m-%d %H:%M:%S}.{ms % 1000:03d}"


def _check_hourly(ctx: Context) -> str | None:
    files = [p for p in (ctx.work / "out").iterdir() if re.match(r"hourly-.*-\d+-of-\d+$", p.name)]
    if not files:
        return "no output file hourly-START-END-S-of-N was written"
    got: dict = {}
    for line in _read_lines(files):
        fields = dict(part.partition(": ")[::2] for part in line.split(", "))
        if set(fields) != {"team", "total_score", "window_start"}:
            return f"a row not of fields team, total_score, window_start: {line!r}"
        key = (fields["team"], fields["window_start"])
        if key in got:
            return f"{key} written twice"
        got[key] = int(fields["total_score"])
    want: collections.Counter = collections.Counter()
    for _user, team, score, ts in GAME_EVENTS:  # 60-minute windows; every event is inside start/stop
        want[(team, _la(ts - ts % 3_600_000))] += score
    return _compare_counts(got, dict(want), "team score sums per hour")


# ---------------------------------------------------------------------------------------------
# complete.TopWikipediaSessions: JSON rows {timestamp (s), contributor_username}; users kept when
# |String.hashCode()| <= Integer.MAX_VALUE * 0.1; one-hour session windows, merged; the session
# counted; re-windowed into calendar months by the count's timestamp (its session's last
# millisecond); the top session (by count, then key) of each month written
# "USER : [START..END) : COUNT : MONTH_START".

_NOV = 1_447_000_000  # 2015-11-08 16:26:40 UTC
_DEC = 1_449_500_000  # 2015-12-07 14:53:20 UTC
_MONTH_END = 1_448_928_000  # 2015-12-01 00:00:00 UTC
WIKI_EDITS = (
    [("Alice", _NOV + s) for s in (0, 1800, 3000, 20_000)]  # a session of 3, then one of 1
    + [("Bob", _NOV + s) for s in (100, 200, 300, 400)]  # 4
    + [("Carol", _NOV + s) for s in (50_000, 52_000, 55_000, 58_000, 61_000)]  # a chain that merges: 5
    + [("Mallory", _NOV + s) for s in range(0, 600, 100)]  # 6, but not sampled
    + [("Dave", _DEC), ("Dave", _DEC + 4000)]  # two sessions of 1 (the gap is over an hour)
    + [("Erin", _DEC + 100), ("Erin", _DEC + 200)]  # 2
    + [("Frank", _MONTH_END + s) for s in (-1800, 0, 600)]  # 3, across the month's end: December's
    + [("Olivia", _DEC + s) for s in range(0, 400, 100)]  # 4, but not sampled
)


def java_string_hash(s: str) -> int:
    h = 0
    for unit in s.encode("utf-16-be").hex(" ", 2).split():
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _joda(seconds: float) -> str:
    """Joda's Instant.toString(): ISO 8601 in UTC with milliseconds."""
    t = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
    return f"{t:%Y-%m-%dT%H:%M:%S}.{int(round(seconds * 1000)) % 1000:03d}Z"


def top_sessions_expected() -> set[str]:
    by_user: dict[str, list[int]] = collections.defaultdict(list)
    for user, ts in WIKI_EDITS:
        if abs(java_string_hash(user)) <= 2_147_483_647 * 0.1:
            by_user[user].append(ts)
    by_month: dict[str, list[tuple[int, str]]] = collections.defaultdict(list)
    for user, times in by_user.items():
        sessions: list[list[int]] = []  # [start, end, count]
        for t in sorted(times):
            if sessions and t < sessions[-1][1]:  # [t, t + 1 h) overlaps the session: merged
                sessions[-1][1] = max(sessions[-1][1], t + 3600)
                sessions[-1][2] += 1
            else:
                sessions.append([t, t + 3600, 1])
        for start, end, count in sessions:
            last = datetime.datetime.fromtimestamp(end - 0.001, datetime.timezone.utc)
            month = datetime.datetime(last.year, last.month, 1, tzinfo=datetime.timezone.utc).timestamp()
            by_month[_joda(month)].append((count, f"{user} : [{_joda(start)}..{_joda(end)})"))
    return {f"{key} : {count} : {month}" for month, entries in by_month.items() for count, key in [max(entries)]}


def _prepare_wiki(work: Path) -> list[str]:
    rows = [{"timestamp": ts, "contributor_username": user} for user, ts in WIKI_EDITS]
    rows.append({"timestamp": _NOV, "contributor_ip": "192.0.2.1"})  # no user name: dropped
    (work / "edits.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (work / "out").mkdir()
    return [f"--wikiInput={work / 'edits.json'}", f"--output={work / 'out' / 'top'}"]


def _check_wiki(ctx: Context) -> str | None:
    files = _shards(ctx.work / "out", "top")
    if not files:
        return "no output file top-SSSSS-of-NNNNN was written"
    got = _read_lines(files)
    want = top_sessions_expected()
    if sorted(got) != sorted(want):
        return f"top sessions {sorted(got)}, want {sorted(want)}"
    return None


EXAMPLES = [
    JavaExample("WordCount", "org.apache.beam.examples.WordCount", _prepare_words, _check_word_count),
    JavaExample(
        "DebuggingWordCount",
        "org.apache.beam.examples.DebuggingWordCount",
        _prepare_words,
        _check_debugging,
        ("-Dorg.slf4j.simpleLogger.log.org.apache.beam.examples=debug",),
    ),
    JavaExample("WindowedWordCount", "org.apache.beam.examples.WindowedWordCount", _prepare_windowed, _check_windowed),
    JavaExample("complete.TfIdf", "org.apache.beam.examples.complete.TfIdf", _prepare_tfidf, _check_tfidf),
    JavaExample(
        "cookbook.DistinctExample",
        "org.apache.beam.examples.cookbook.DistinctExample",
        _prepare_distinct,
        _check_distinct,
    ),
    JavaExample(
        "complete.game.UserScore",
        "org.apache.beam.examples.complete.game.UserScore",
        lambda work: _prepare_game(work, "user_scores"),
        _check_user_score,
    ),
    JavaExample(
        "complete.game.HourlyTeamScore",
        "org.apache.beam.examples.complete.game.HourlyTeamScore",
        lambda work: _prepare_game(work, "hourly"),
        _check_hourly,
    ),
    JavaExample(
        "complete.TopWikipediaSessions",
        "org.apache.beam.examples.complete.TopWikipediaSessions",
        _prepare_wiki,
        _check_wiki,
    ),
]

# The jar's other examples, and why none of them is tried: each needs a service this machine does
# not have, or writes nothing a check could read.
EXCLUDED = [
    ("MinimalWordCount", "its input (gs://apache-beam-samples/...) and output are fixed in the code: needs GCS"),
    (
        "cookbook.BigQueryTornadoes, CombinePerKeyExamples, FilterExamples, JoinExamples, "
        "MaxPerKeyExamples, MinimalBigQueryTornadoes",
        "read BigQuery tables",
    ),
    (
        "cookbook.TriggerExample, complete.TrafficMaxLaneFlow, TrafficRoutes, StreamingWordExtract, AutoComplete",
        "write to BigQuery (AutoComplete: --outputToBigQuery defaults to true) or read Pub/Sub",
    ),
    ("complete.game.GameStats, LeaderBoard, StatefulTeamScore, game.injector.Injector", "read Pub/Sub"),
    (
        "KafkaWordCountJson, KafkaWordCountAvro, KafkaStreaming, KafkaPassengerCountJson, "
        "complete.kafkatopubsub.KafkaToPubsub",
        "need a Kafka broker (and Pub/Sub)",
    ),
    ("cookbook.IcebergTaxiExamples", "read Pub/Sub, write an Iceberg catalog on GCS"),
    ("complete.datatokenization.DataTokenization", "calls an external tokenization RPC service"),
    (
        "multilanguage.PythonDataframeWordCount, SklearnMnistClassification",
        "cross-language: need a Python expansion service (and GCS data)",
    ),
    ("subprocess.ExampleEchoPipeline", "runs binaries it first copies from a GCS bucket"),
    (
        "the ~30 transform snippets (CountExample, CombineExample, ...: Create.of, then LOG.info)",
        "write nothing but log lines; their transforms are the ones the trials above use",
    ),
]
