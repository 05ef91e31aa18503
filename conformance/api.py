"""Everything a case needs, in one import: the one module case authors import. It gathers the
modules of conformance.authoring: the runner fixture's class (CaseRunner, RunResult, CaseFailure),
check() and expected elements, timestamped inputs, the TestStreams streaming cases are fed by
(TestStream, TaggedTestStream: standard coders, so runners of every SDK decode them) and the
shared pane helpers (group_panes and the PaneInfo of each timing).

from conformance.api import *

@capability("pardo.basic")
def test_map(runner):
    p = runner.pipeline()
    check(p | beam.Create([1, 2]) | beam.Map(lambda x: x * 10), [10, 20])
    runner.run(p)
"""

from __future__ import annotations

import pytest
from apache_beam.utils.timestamp import MAX_TIMESTAMP, MIN_TIMESTAMP, Timestamp

from conformance.authoring.case_errors import CaseDefinitionError, MalformedExpectation
from conformance.authoring.case_runner import CaseFailure, CaseRunner, RunResult
from conformance.authoring.checks import check, check_all, sort_values, sorted_groups
from conformance.authoring.elements import (
    ANY,
    END_OF_GLOBAL_WINDOW_MS,
    GLOBAL,
    NO_FIRING,
    ON_TIME_ONLY,
    W,
    el,
    one_of,
    pane,
    satisfies,
)
from conformance.authoring.inputs import keyed_at, keyed_input, stamped_by_value, value_at_time
from conformance.authoring.panes import (
    ACCUMULATING,
    DISCARDING,
    early_pane,
    group_panes,
    late_pane,
    on_time_pane,
)
from conformance.authoring.streams import StreamInputError, TaggedTestStream, TestStream

# As a Beam Timestamp: a float of seconds cannot hold it to the millisecond.
END_OF_GLOBAL_WINDOW = Timestamp(micros=END_OF_GLOBAL_WINDOW_MS * 1000)


def created(values) -> list:
    """Elements as beam.Create gives them, and element-wise transforms keep them: each value at
    the minimum timestamp, in the global window, with no pane (no GroupByKey produced it)."""
    return [el(v, MIN_TIMESTAMP, GLOBAL, NO_FIRING) for v in values]


def grouped(values, window=GLOBAL) -> list:
    """Outputs of a batch GroupByKey or Combine (default trigger, END_OF_WINDOW timestamps), and
    element-wise transforms of them, in ``window``: each value at the window's max timestamp, in
    the window's one ON_TIME pane."""
    end = END_OF_GLOBAL_WINDOW if window.is_global else (window.end_ms - 1) / 1000
    return [el(v, end, window, ON_TIME_ONLY) for v in values]


DEFAULT_PROPERTY_EXAMPLES = 8
_property_examples = DEFAULT_PROPERTY_EXAMPLES


def property_examples() -> int:
    """Random examples per property-based case (each one a pipeline run): --property-examples."""
    return _property_examples


def set_property_examples(count: int) -> None:
    """Set by the plugin from --property-examples, before the cases are collected."""
    global _property_examples
    _property_examples = count


def capability(capability_id: str):
    """Tag a case with the capability it exercises (see conformance/capabilities.py)."""
    return pytest.mark.capability(capability_id)


__all__ = [
    "ACCUMULATING",
    "ANY",
    "CaseDefinitionError",
    "CaseFailure",
    "CaseRunner",
    "DISCARDING",
    "END_OF_GLOBAL_WINDOW",
    "GLOBAL",
    "MAX_TIMESTAMP",
    "MIN_TIMESTAMP",
    "MalformedExpectation",
    "NO_FIRING",
    "ON_TIME_ONLY",
    "RunResult",
    "StreamInputError",
    "TaggedTestStream",
    "TestStream",
    "W",
    "capability",
    "check",
    "check_all",
    "created",
    "early_pane",
    "el",
    "group_panes",
    "grouped",
    "keyed_at",
    "keyed_input",
    "late_pane",
    "on_time_pane",
    "one_of",
    "pane",
    "satisfies",
    "sort_values",
    "sorted_groups",
    "stamped_by_value",
    "value_at_time",
]
