"""Everything a case needs, in one import.

    from conformance.api import *

    @capability("pardo.basic")
    def test_map(runner):
        p = runner.pipeline()
        check(p | beam.Create([1, 2]) | beam.Map(lambda x: x * 10), [10, 20])
        runner.run(p)
"""
from __future__ import annotations

import pytest

from conformance.checks import check, check_all, sort_values, sorted_groups
from conformance.inputs import keyed_input, stamped_by_value, value_at_time
from conformance.elements import (ANY, END_OF_GLOBAL_WINDOW_MS, GLOBAL, NO_FIRING, ON_TIME_ONLY, W, el,
                                  one_of, pane, satisfies)
from conformance.targets import CaseFailure
from apache_beam.utils.timestamp import MAX_TIMESTAMP, MIN_TIMESTAMP, Timestamp

# As a Beam Timestamp: a float of seconds cannot hold it to the millisecond.
END_OF_GLOBAL_WINDOW = Timestamp(micros=END_OF_GLOBAL_WINDOW_MS * 1000)


def capability(capability_id: str):
    """Tag a case with the capability it exercises (see conformance/capabilities.py)."""
    return pytest.mark.capability(capability_id)


__all__ = ["ANY", "CaseFailure", "END_OF_GLOBAL_WINDOW", "GLOBAL", "MAX_TIMESTAMP", "MIN_TIMESTAMP", "NO_FIRING", "ON_TIME_ONLY", "W",
           "capability", "check", "check_all", "el", "keyed_input", "one_of", "pane", "satisfies", "sort_values", "sorted_groups",
           "stamped_by_value", "value_at_time"]
