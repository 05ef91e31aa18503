"""In-pipeline verification of a PCollection's contents.

``check(pcoll, expected)`` appends transforms that capture every element with its
timestamp, window and pane, gather them in one place, and compare them with the
expectation inside the SDK worker. Verifying inside the pipeline (the way Beam's
own assert_that does) works for every runner, including remote workers whose
memory the test process cannot see; it relies only on ParDo, Flatten, Create and a
global-window GroupByKey.

Two safeguards keep a check from passing vacuously:
- a sentinel element is flattened in, so the comparison runs even when the
  checked PCollection is empty;
- a passing comparison reports itself (a counter in namespace CONFIRM_NAMESPACE,
  and an in-process registry), and the case runner fails a case whose checks were
  never confirmed, e.g. because the runner skipped part of the pipeline.
"""

from __future__ import annotations

import logging
import re
import threading
import uuid

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.transforms import trigger, window
from apache_beam.utils.windowed_value import PaneInfoTiming

from conformance.authoring import elements
from conformance.authoring.elements import Pane, Record, Window

CONFIRM_NAMESPACE = "beam_conformance_checks"
# A check whose output differs from the model only in a cross-cutting property (pane metadata)
# does not fail the job: it reports the deviation here (counter name: CHECK_ID|PROPERTY|SUMMARY)
# and the case fails once everything else it checks has been checked (CaseRunner).
DEVIATION_NAMESPACE = "beam_conformance_deviations"
DEVIATION_SEPARATOR = "|"
DIFF_BEGIN = "<<<conformance-diff"
DIFF_END = "conformance-diff>>>"

# Beam's loggers that log a failed bundle's exception: a failed check's diff, which the case's
# failure shows once already
_BEAM_LOGGERS_OF_FAILURES = (
    "apache_beam.runners.common",
    "apache_beam.runners.worker.bundle_processor",
    "apache_beam.runners.worker.sdk_worker",
    "apache_beam.runners.portability.fn_api_runner.fn_runner",
    "apache_beam.runners.portability.portable_runner",
    "apache_beam.runners.portability.local_job_service",
    "apache_beam.runners.direct.executor",
)
_DIFF_BLOCK = re.compile(re.escape(DIFF_BEGIN) + ".*?" + re.escape(DIFF_END), re.DOTALL)
SHOWN_ABOVE = "<the check's diff, shown in the failure above>"


class _CheckFailuresNotLogged(logging.Filter):
    """Drops Beam's log record of a bundle that failed for a check's diff."""

    def filter(self, record: logging.LogRecord) -> bool:
        if DIFF_BEGIN in str(record.msg):
            return False
        exc = record.exc_info[1] if record.exc_info else None
        return exc is None or DIFF_BEGIN not in str(exc)


def _quiet_check_failures() -> None:
    for name in _BEAM_LOGGERS_OF_FAILURES:
        logger = logging.getLogger(name)
        if not any(isinstance(f, _CheckFailuresNotLogged) for f in logger.filters):
            logger.addFilter(_CheckFailuresNotLogged())


_quiet_check_failures()


def without_diffs(text: str) -> str:
    """Captured output (a worker's stderr, a job server's log) with each check diff replaced by a
    pointer to the failure, which shows it once."""
    return _DIFF_BLOCK.sub(SHOWN_ABOVE, text) if DIFF_BEGIN in text else text


_confirmed: set[str] = set()
_deviations: dict[str, tuple[str, str]] = {}  # check id -> (property, diff text), for in-process workers
# check id -> diff text, for checks of a shared job (a batch of cases): a failing check there must
# not fail the job its neighbours share, so it records its diff instead (failure_in_process)
_failures: dict[str, str] = {}
_confirmed_lock = threading.Lock()


def confirmed_in_process(check_id: str) -> bool:
    with _confirmed_lock:
        return check_id in _confirmed


def failure_in_process(check_id: str) -> str | None:
    """The diff of a check of a shared job that ran in this process and failed (see share_job)."""
    with _confirmed_lock:
        return _failures.get(check_id)


def share_job(pipeline: beam.Pipeline) -> None:
    """The checks this pipeline gets from now on run in a job shared with other cases: a failing
    one records its diff in this process (failure_in_process) instead of failing the job. Only for
    targets whose workers run in this process."""
    pipeline.__dict__["_conformance_shared_job"] = True


def deviation_in_process(check_id: str) -> tuple[str, str] | None:
    """(property, diff text) of a check that ran in this process and deviated only in that property."""
    with _confirmed_lock:
        return _deviations.get(check_id)


class CheckFailed(AssertionError):
    """Raised in the worker when produced elements differ from the expectation."""


_TIMING_NAMES = {
    PaneInfoTiming.EARLY: "EARLY",
    PaneInfoTiming.ON_TIME: "ON_TIME",
    PaneInfoTiming.LATE: "LATE",
    PaneInfoTiming.UNKNOWN: "UNKNOWN",
}


def _window_of(w) -> Window:
    if isinstance(w, window.GlobalWindow):
        return elements.GLOBAL
    start, end = getattr(w, "start", None), getattr(w, "end", None)
    if start is None or end is None:
        raise TypeError(f"cannot describe window {w!r}: it has no start and end")
    return Window(elements.to_ms(start), elements.to_ms(end))


def _plain(value):
    """Materialise lazy iterables (GroupByKey results) so records encode and print."""
    if isinstance(value, (str, bytes, dict, int, float, type(None))):
        return value
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if hasattr(value, "__iter__") and not isinstance(value, (set, frozenset)):
        return [_plain(v) for v in value]
    return value


class _Reify(beam.DoFn):
    """An element -> (part, Record): ``part`` says which checked PCollection it came from."""

    def __init__(self, part: int):
        self._part = part

    def process(self, value, ts=beam.DoFn.TimestampParam, w=beam.DoFn.WindowParam, pane_info=beam.DoFn.PaneInfoParam):
        pane = Pane(
            pane_info.is_first,
            pane_info.is_last,
            _TIMING_NAMES[pane_info.timing],
            pane_info.index,
            pane_info.nonspeculative_index,
        )
        yield self._part, Record(_plain(value), elements.to_ms(ts), _window_of(w), pane)


_SENTINEL = "<conformance-sentinel>"


class _Verify(beam.DoFn):
    def __init__(self, check_id: str, label: str, expected: list, shared_job: bool = False):
        self._check_id = check_id
        self._label = label
        self._expected = expected
        self._shared_job = shared_job
        self._passed = Metrics.counter(CONFIRM_NAMESPACE, check_id)

    def process(self, keyed_records):
        _, records = keyed_records
        actual: list[list] = [[] for _ in self._expected]
        sentinels = 0
        for r in records:
            if isinstance(r, str) and r == _SENTINEL:
                sentinels += 1
            else:
                part, record = r
                actual[part].append(record)
        failures = []
        properties = set()
        for part, (expected, produced) in enumerate(zip(self._expected, actual, strict=True)):
            verdict = elements.compare(expected, produced)
            if not verdict.ok:
                where = f"check '{self._label}'" + (f" part {part}" if len(self._expected) > 1 else "")
                failures.append(f"{where}: {verdict.text}")
                properties.add(verdict.only_in)
        if failures and sentinels != 1:
            failures.append(
                f"(the check's own gathering, a Flatten into a GroupByKey, delivered its one sentinel element "
                f"{sentinels} times: the runner repeats elements there, so the elements above may be repeated "
                "by the gathering rather than by the transform under test; see the flatten.into_gbk cases)"
            )
            properties.add(None)
        text = "\n".join(failures)
        if failures and (None in properties or len(properties) > 1):
            if self._shared_job:
                with _confirmed_lock:
                    _failures[self._check_id] = text
                return
            raise CheckFailed(f"{DIFF_BEGIN}\n{text}\n{DIFF_END}")
        if failures:
            (prop,) = properties
            summary = text.splitlines()[-1].strip()  # "only the pane metadata differs (last); ..."
            name = DEVIATION_SEPARATOR.join((self._check_id, prop, summary))
            Metrics.counter(DEVIATION_NAMESPACE, name).inc()
            with _confirmed_lock:
                _deviations[self._check_id] = (prop, text)
            return
        self._passed.inc()
        with _confirmed_lock:
            _confirmed.add(self._check_id)


def check(pcoll: beam.PCollection, expected, label: str | None = None) -> str:
    """Verify ``pcoll`` against ``expected`` when the pipeline runs; returns the check id.

    ``expected`` is a list of plain values (only values are compared), a list of
    ``el(value, timestamp=..., window=..., pane=...)`` (the given fields are compared),
    ``one_of(list, list, ...)`` or ``satisfies(predicate, description)``.
    """
    return check_all([(pcoll, expected)], label)


def check_all(parts: list, label: str | None = None) -> str:
    """Verify several PCollections of one pipeline, each against its own expectation, in one
    gathering step (cheaper than a check() per PCollection); ``parts`` is [(pcoll, expected)].
    A failure names the part (its position in ``parts``)."""
    for _, expected in parts:
        elements.validate(expected)  # a malformed expectation is the case's error, found now
    pipeline = parts[0][0].pipeline
    checks = pipeline.__dict__.setdefault("_conformance_checks", [])
    label = label or f"check{len(checks) + 1}"
    check_id = f"{label}-{uuid.uuid4().hex[:10]}"
    checks.append(check_id)
    gathered = []
    for part, (pcoll, _) in enumerate(parts):
        # The default trigger where it is allowed, so that a runner without trigger support
        # can still run every batch check; on an unbounded input Python refuses a default
        # trigger in the global window, and AfterWatermark fires exactly once there too.
        gather_trigger = trigger.DefaultTrigger() if pcoll.is_bounded else trigger.AfterWatermark()
        name = label if len(parts) == 1 else f"{label}/part{part}"
        gathered.append(
            pcoll
            | f"{name}/Reify" >> beam.ParDo(_Reify(part))
            | f"{name}/Global"
            >> beam.WindowInto(
                window.GlobalWindows(), trigger=gather_trigger, accumulation_mode=trigger.AccumulationMode.DISCARDING
            )
            | f"{name}/Key" >> beam.Map(lambda r: (None, r))
        )
    sentinel = pipeline | f"{label}/Sentinel" >> beam.Create([(None, _SENTINEL)])
    # The sentinel last: the Flatten takes its windowing from its first input, the gathered
    # output's (an unbounded one's needs the AfterWatermark trigger above).
    _ = (
        (*gathered, sentinel)
        | f"{label}/Flatten" >> beam.Flatten()
        | f"{label}/Gather" >> beam.GroupByKey()
        | f"{label}/Verify"
        >> beam.ParDo(
            _Verify(
                check_id,
                label,
                [expected for _, expected in parts],
                shared_job=bool(pipeline.__dict__.get("_conformance_shared_job")),
            )
        )
    )
    return check_id


def checks_of(pipeline: beam.Pipeline) -> list[str]:
    return list(pipeline.__dict__.get("_conformance_checks", []))


class NormalizeGroups(beam.PTransform):
    """(key, iterable) -> (key, sorted list): GroupByKey gives no order within a group."""

    def expand(self, pcoll):
        return pcoll | beam.MapTuple(lambda k, vs: (k, sort_values(vs)))


def sort_values(values) -> list:
    """Sorted naturally when the values compare, by repr otherwise."""
    values = list(values)
    try:
        return sorted(values)
    except TypeError:
        return sorted(values, key=repr)


def sorted_groups() -> NormalizeGroups:
    return NormalizeGroups()
