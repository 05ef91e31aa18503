"""The capability matrix Beam publishes on its website, as data of our own, and how it lines up
with ours.

Beam keeps its matrix in ``website/www/site/data/capability_matrix.yaml``. From it we keep facts
only: each row's name, each column's class and the first-level verdict (``l1``) that column gives
the row. The qualifiers and notes Beam writes beside the verdicts (``l2``, ``l3``) are not copied;
read them at SOURCE. The categories are named here with labels of our own.

A verdict is 'Yes', 'Partially', 'No', 'Unverified' (one row uses it), '' (the entry is there
and its l1 is empty or null) or None (the row gives that column no entry at all: Beam's Where,
When and How rows have none for its two direct runners).

BEAM_TO_OURS maps Beam's rows onto rows of conformance.capabilities.ROWS (optionally narrowed to
some of their capabilities); NO_COUNTERPART lists, with the reason, every Beam row our suite has
nothing to compare with. COLUMN_TARGETS maps Beam's columns onto our target names.
"""

from __future__ import annotations

from dataclasses import dataclass

from conformance import capabilities

SOURCE = {
    "repository": "apache/beam",
    "path": "website/www/site/data/capability_matrix.yaml",
    "commit": "06f56f5126567f65ad6b44c444a581546a556233",
}
SOURCE_URL = f"https://github.com/{SOURCE['repository']}/blob/{SOURCE['commit']}/{SOURCE['path']}"

# Beam's column classes, in the order its file lists them.
COLUMNS = (
    "dataflow",
    "flink",
    "spark-rdd",
    "spark-dataset",
    "samza",
    "nemo",
    "jet",
    "twister2",
    "python direct",
    "go direct",
)

SUPPORT = ("Yes", "Partially")  # verdicts that claim some support
NONE_CLAIMED = "No"

# Our labels for Beam's categories (its SDF categories share the anchor "what", so we name them).
CATEGORIES = {
    "what": "What",
    "sdf-bounded": "Splittable DoFn, bounded",
    "sdf-unbounded": "Splittable DoFn, unbounded",
    "where": "Where",
    "when": "When",
    "how": "How",
    "misc": "Beyond the model",
}


@dataclass(frozen=True)
class BeamRow:
    category: str  # a key of CATEGORIES
    name: str  # the row's name in Beam's file
    claims: dict[str, str | None]  # column class -> l1 verdict

    @property
    def key(self) -> str:
        return f"{self.category}/{self.name}"

    @property
    def label(self) -> str:
        if self.category.startswith("sdf-"):
            return f"{CATEGORIES[self.category]}: {self.name}"
        return self.name

    def claim(self, column: str) -> str | None:
        return self.claims.get(column)


Y, P, N, U, E = "Yes", "Partially", "No", "Unverified", ""
_EVERY_ENGINE = (Y, Y, Y, P, Y, Y, Y, Y)  # the eight engine columns' verdicts most Where/When/How rows share


def _row(category: str, name: str, *verdicts: str | None) -> BeamRow:
    """A row from its verdicts in COLUMNS order; columns past the last verdict given have no entry."""
    assert len(verdicts) <= len(COLUMNS), name
    padded = tuple(verdicts) + (None,) * (len(COLUMNS) - len(verdicts))
    return BeamRow(category, name, dict(zip(COLUMNS, padded, strict=True)))


# Verdicts per row in COLUMNS order: dataflow, flink, spark-rdd, spark-dataset, samza, nemo, jet,
# twister2, python direct, go direct.
BEAM_ROWS = [
    _row("what", "ParDo", Y, Y, Y, P, Y, Y, Y, Y, E, E),
    _row("what", "GroupByKey", Y, Y, P, P, Y, Y, Y, Y, E, E),
    _row("what", "Flatten", Y, Y, Y, P, Y, Y, Y, Y, E, E),
    _row("what", "Combine", Y, Y, Y, P, Y, Y, Y, Y, E, E),
    _row("what", "Composite Transforms", P, P, P, P, P, Y, P, P, E, E),
    _row("what", "Side Inputs", Y, Y, Y, P, Y, Y, P, Y, E, E),
    _row("what", "Source API", Y, Y, Y, P, Y, Y, Y, Y, E, E),
    _row("what", "Metrics", P, P, P, P, P, N, P, N, E, E),
    _row("what", "Stateful Processing", P, P, P, N, P, N, P, N, E, E),
    _row("sdf-bounded", "Base", P, P, E, E, E, E, E, E, Y, Y),
    _row("sdf-bounded", "Side Inputs", P, P, E, E, E, E, E, E, E, Y),
    _row("sdf-bounded", "Splittable DoFn Initiated Checkpointing", P, P, E, E, E, E, E, E, Y, N),
    _row("sdf-bounded", "Dynamic Splitting", P, N, E, E, E, E, E, E, Y, N),
    _row("sdf-bounded", "Bundle Finalization", P, N, E, E, E, E, E, E, Y, N),
    _row("sdf-unbounded", "Base", Y, Y, E, E, E, E, E, E, Y, N),
    _row("sdf-unbounded", "Side Inputs", Y, P, E, E, E, E, E, E, E, Y),
    _row("sdf-unbounded", "Splittable DoFn Initiated Checkpointing", Y, Y, E, E, E, E, E, E, Y, N),
    _row("sdf-unbounded", "Dynamic Splitting", N, N, E, E, E, E, E, E, N, N),
    _row("sdf-unbounded", "Bundle Finalization", P, P, E, E, E, E, E, E, Y, N),
    # From here on Beam's rows give no entry for the two direct runners.
    _row("where", "Global windows", *_EVERY_ENGINE),
    _row("where", "Fixed windows", *_EVERY_ENGINE),
    _row("where", "Sliding windows", *_EVERY_ENGINE),
    _row("where", "Session windows", *_EVERY_ENGINE),
    _row("where", "Custom windows", *_EVERY_ENGINE),
    _row("where", "Custom merging windows", *_EVERY_ENGINE),
    _row("where", "Timestamp control", *_EVERY_ENGINE),
    _row("when", "Configurable triggering", *_EVERY_ENGINE),
    _row("when", "Event-time triggers", *_EVERY_ENGINE),
    _row("when", "Processing-time triggers", *_EVERY_ENGINE),
    _row("when", "Count triggers", *_EVERY_ENGINE),
    _row("when", "Composite triggers", Y, Y, Y, P, Y, Y, Y, P),
    _row("when", "Allowed lateness", Y, Y, N, N, Y, Y, Y, P),
    _row("when", "Timers", P, P, P, N, P, N, P, P),
    _row("how", "Discarding", *_EVERY_ENGINE),
    _row("how", "Accumulating", Y, Y, N, N, Y, Y, Y, Y),
    _row("misc", "Drain", P, P, E, E, E, E, E, E),
    _row("misc", "Checkpoint", N, P, P, N, P, E, E, E),
    # Beam's file also gives this row a value for a class its column list does not have (ibmstreams).
    _row("misc", "Key-ordered delivery", P, P, U, U, P, U, U, U),
]
BEAM_ROWS_BY_KEY = {r.key: r for r in BEAM_ROWS}


@dataclass(frozen=True)
class Counterpart:
    """Where a Beam row's claim is checked in our matrix: the cases of these rows, or only of these
    capabilities (of those rows) when a row of ours covers more than Beam's row is about."""

    rows: tuple[str, ...]
    capabilities: tuple[str, ...] = ()
    note: str = ""


def _same(name: str) -> Counterpart:
    return Counterpart((name,))


BEAM_TO_OURS: dict[str, Counterpart] = {
    "what/ParDo": _same("ParDo"),
    "what/GroupByKey": _same("GroupByKey"),
    "what/Flatten": _same("Flatten"),
    "what/Combine": _same("Combine"),
    "what/Side Inputs": _same("Side Inputs"),
    "what/Metrics": _same("Metrics"),
    "what/Stateful Processing": _same("Stateful Processing"),
    "sdf-bounded/Base": _same("Bounded splittable DoFn"),
    "sdf-bounded/Splittable DoFn Initiated Checkpointing": Counterpart(
        ("Unbounded splittable DoFn",),
        ("sdf.self_checkpoint",),
        "our self-checkpointing cases run over bounded and unbounded-per-element restrictions alike",
    ),
    "sdf-bounded/Bundle Finalization": Counterpart(
        ("Bundle finalization",), note="our bundle finalization cases are all bounded pipelines"
    ),
    "sdf-unbounded/Base": _same("Unbounded splittable DoFn"),
    "sdf-unbounded/Splittable DoFn Initiated Checkpointing": Counterpart(
        ("Unbounded splittable DoFn",),
        ("sdf.self_checkpoint",),
        "our self-checkpointing cases run over bounded and unbounded-per-element restrictions alike",
    ),
    "where/Global windows": _same("Global windows"),
    "where/Fixed windows": _same("Fixed windows"),
    "where/Sliding windows": _same("Sliding windows"),
    "where/Session windows": _same("Session windows"),
    "where/Custom windows": _same("Custom windows"),
    "where/Custom merging windows": _same("Custom merging windows"),
    "where/Timestamp control": _same("Timestamp control"),
    "when/Event-time triggers": _same("Event-time triggers"),
    "when/Processing-time triggers": _same("Processing-time triggers"),
    "when/Count triggers": _same("Count triggers"),
    "when/Composite triggers": _same("Composite triggers"),
    "when/Allowed lateness": _same("Allowed lateness"),
    "when/Timers": _same("Timers"),
    "how/Discarding": _same("Discarding"),
    "how/Accumulating": _same("Accumulating"),
}

NO_COUNTERPART: dict[str, str] = {
    "what/Composite Transforms": "Beam's row is about whether a runner keeps a composite's structure when it "
    "executes the pipeline or inlines it; our Library transforms row checks the results Beam's composites give, "
    "which an inlining runner gets right too, so it cannot confirm or refute the claim",
    "what/Source API": "no case reads through a BoundedSource or UnboundedSource: a Python pipeline on a portable "
    "runner reads a source through an Impulse and a splittable DoFn the SDK expands it into, which the "
    "splittable DoFn rows cover",
    "sdf-bounded/Side Inputs": "no case gives a splittable DoFn a side input",
    "sdf-bounded/Dynamic Splitting": "no case asks the runner to split a restriction while it is being processed "
    "(our splitting cases are initial splits, which the SDK makes)",
    "sdf-unbounded/Side Inputs": "no case gives a splittable DoFn a side input",
    "sdf-unbounded/Dynamic Splitting": "no case asks the runner to split a restriction while it is being processed",
    "sdf-unbounded/Bundle Finalization": "our bundle finalization cases are all bounded pipelines",
    "when/Configurable triggering": "every trigger case configures its trigger; ours has a row per kind of trigger "
    "(event-time, processing-time, count, composite), each compared with Beam's row of the same name, so a "
    "verdict over all of them would list the same failures twice",
    "misc/Drain": "no case drains a job (the kit's drain tests check our reference runner only)",
    "misc/Checkpoint": "no case takes or restores a runner checkpoint or savepoint",
    "misc/Key-ordered delivery": "no case checks the order in which a key's elements reach the next transform "
    "(Timers' strict-ordering and time-sorted-input cases are about timers and RequiresTimeSortedInput)",
}

# Rows of ours that Beam's matrix has no row for (they are not compared).
OURS_ONLY = tuple(r.name for r in capabilities.ROWS if not any(r.name in c.rows for c in BEAM_TO_OURS.values()))


@dataclass(frozen=True)
class ColumnTargets:
    targets: tuple[str, ...]  # our target names that run what Beam's column describes
    note: str


COLUMN_TARGETS: dict[str, ColumnTargets] = {
    "flink": ColumnTargets(("flink",), "Beam's Flink runner; our flink target runs its portable job server"),
    "spark-rdd": ColumnTargets(
        ("beam-spark-job-server",),
        "Beam's Java Spark runner (RDD/DStream based); our beam-spark-job-server target runs its portable job "
        "server (our own spark target is a different runner and is not compared)",
    ),
    "samza": ColumnTargets(
        ("samza",),
        "we have no Samza target: the registry serves beam-runners-samza only at a release too old for this SDK "
        "(conformance/peers/pins.py); results of a target named samza would be compared",
    ),
    "python direct": ColumnTargets(
        ("beam-direct", "beam-fnapi"),
        "Beam's Python direct runner: our beam-direct (DirectRunner, kept off Prism) and beam-fnapi (FnApiRunner)",
    ),
    "go direct": ColumnTargets(
        ("prism",),
        "Beam's Go direct runner, which Prism replaced as the Go SDK's local runner; Beam's column still "
        "carries the old runner's name, and our prism target runs Prism",
    ),
    "dataflow": ColumnTargets((), "a managed cloud service; no target of ours runs it"),
    "spark-dataset": ColumnTargets((), "Beam's Structured Streaming Spark runner; no target of ours runs it"),
    "nemo": ColumnTargets((), "no target of ours runs it"),
    "jet": ColumnTargets((), "no target of ours runs it"),
    "twister2": ColumnTargets((), "no target of ours runs it"),
}

TARGET_COLUMN = {t: column for column, c in COLUMN_TARGETS.items() for t in c.targets}


def _check_consistency() -> None:
    assert len(BEAM_ROWS_BY_KEY) == len(BEAM_ROWS), "duplicate Beam row"
    assert set(COLUMN_TARGETS) == set(COLUMNS)
    assert set(CATEGORIES) >= {r.category for r in BEAM_ROWS}
    for key, counterpart in BEAM_TO_OURS.items():
        assert key in BEAM_ROWS_BY_KEY, key
        assert key not in NO_COUNTERPART, key
        assert counterpart.rows and all(r in capabilities.ROWS_BY_NAME for r in counterpart.rows), key
        for cap in counterpart.capabilities:
            assert capabilities.get(cap).row in counterpart.rows, (key, cap)
    for key in NO_COUNTERPART:
        assert key in BEAM_ROWS_BY_KEY, key
    assert set(BEAM_TO_OURS) | set(NO_COUNTERPART) == set(BEAM_ROWS_BY_KEY)
    for row in BEAM_ROWS:
        assert set(row.claims) == set(COLUMNS), row.key
        assert all(v in (Y, P, N, U, E, None) for v in row.claims.values()), row.key


_check_consistency()
