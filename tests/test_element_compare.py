"""The comparison and diff logic that runs inside the SDK worker."""

import pickle

import pytest
from apache_beam.utils.timestamp import Timestamp

from conformance.authoring import elements
from conformance.authoring.elements import (
    ANY,
    END_OF_GLOBAL_WINDOW_MS,
    GLOBAL,
    ON_TIME_ONLY,
    Pane,
    Record,
    W,
    el,
    one_of,
    pane,
    satisfies,
)
from conformance.capabilities import PANE_METADATA


def rec(value, ts_ms=0, window=GLOBAL, p=ON_TIME_ONLY):
    return Record(value, ts_ms, window, p)


def test_values_compare_as_multisets():
    assert elements.compare([1, 2, 2], [rec(2), rec(1), rec(2)]).ok
    verdict = elements.compare([1, 2, 2], [rec(2), rec(1), rec(1)])
    assert not verdict.ok
    assert "1 missing, 1 unexpected" in verdict.text
    assert [m.value for m in verdict.missing] == [2]
    assert [u.value for u in verdict.unexpected] == [1]


def test_lists_and_tuples_compare_equal_and_dicts_by_content():
    assert elements.compare([("k", [1, 2])], [rec(("k", (1, 2)))]).ok
    assert elements.compare([{"a": 1, "b": 2}], [rec({"b": 2, "a": 1})]).ok
    assert not elements.compare([("k", [1, 2])], [rec(("k", [2, 1]))]).ok


def test_timestamps_compare_at_millisecond_precision():
    # The max timestamp of [0, 10) is 9.999999 s in Python; on the wire (ms) it is 9.999 s.
    r = rec("a", ts_ms=elements.to_ms(Timestamp(micros=9_999_999)), window=W(0, 10))
    assert elements.compare([el("a", 9.999, W(0, 10))], [r]).ok
    assert not elements.compare([el("a", 9.998, W(0, 10))], [r]).ok


def test_end_of_global_window_tolerates_pythons_one_microsecond_offset():
    python_max = Timestamp(micros=END_OF_GLOBAL_WINDOW_MS * 1000 - 1)
    java_max = Timestamp(micros=END_OF_GLOBAL_WINDOW_MS * 1000)
    assert elements.to_ms(python_max) == elements.to_ms(java_max) == END_OF_GLOBAL_WINDOW_MS


def test_negative_timestamps_floor():
    assert elements.to_ms(Timestamp(micros=-1)) == -1
    assert elements.to_ms(-0.0015) == -2


def test_partial_pane_checks_only_given_fields():
    produced = [rec("a", p=Pane(True, False, "EARLY", 0, -1))]
    assert elements.compare([el("a", pane=pane(timing="EARLY"))], produced).ok
    assert not elements.compare([el("a", pane=pane(timing="EARLY", last=True))], produced).ok


def test_mixed_field_sets_are_an_authoring_error():
    with pytest.raises(ValueError, match="same fields"):
        elements.compare([el("a", 1), el("b")], [])


def test_one_of_accepts_any_alternative_and_reports_the_closest():
    assert elements.compare(one_of([1, 2], [3]), [rec(3)]).ok
    verdict = elements.compare(one_of([1, 2], [3, 4, 5]), [rec(1)])
    assert not verdict.ok and "closest" in verdict.text and "1 missing" in verdict.text


def test_satisfies_reports_predicate_and_listing():
    assert elements.compare(satisfies(lambda rs: len(rs) == 1, "one element"), [rec(1)]).ok
    verdict = elements.compare(satisfies(lambda rs: len(rs) == 2, "two elements"), [rec(1)])
    assert not verdict.ok and "two elements" in verdict.text and "produced (1)" in verdict.text


def test_diff_names_windows_timestamps_and_panes():
    verdict = elements.compare(
        [el("a", 9.999, W(0, 10), ON_TIME_ONLY)], [rec("a", 19999, W(10, 20), Pane(False, True, "LATE", 1, 1))]
    )
    assert "[0s, 10s)" in verdict.text and "[10s, 20s)" in verdict.text
    assert "LATE" in verdict.text and "9.999s" in verdict.text


def test_any_survives_pickling_as_the_same_object():
    assert pickle.loads(pickle.dumps(ANY)) is ANY
    spec = pickle.loads(pickle.dumps(el("a")))
    assert spec.fields() == ("value",)


def test_empty_expectation_against_empty_output():
    assert elements.compare([], []).ok
    assert not elements.compare([], [rec(1)]).ok


def test_el_rejects_misplaced_arguments_when_the_case_is_written():
    with pytest.raises(TypeError, match="timestamp must be seconds"):
        el("v", W(0, 10))
    with pytest.raises(TypeError, match="window must be"):
        el("v", 1.0, (0, 10))
    with pytest.raises(TypeError, match="pane must be"):
        el("v", 1.0, GLOBAL, "ON_TIME")


def test_a_deviation_only_in_pane_metadata_says_so_and_which_fields():
    right = el("a", 9.999, W(0, 10), pane(True, True, "ON_TIME", 0, 0))
    produced = [rec("a", 9999, W(0, 10), Pane(True, False, "ON_TIME", 0, 0))]
    verdict = elements.compare([right], produced)
    assert not verdict.ok and verdict.only_in == PANE_METADATA
    assert "only the pane metadata differs (last)" in verdict.text


def test_a_deviation_in_values_as_well_is_not_a_pane_deviation():
    right = el("a", 9.999, W(0, 10), pane(True, True, "ON_TIME", 0, 0))
    produced = [rec("b", 9999, W(0, 10), Pane(True, False, "ON_TIME", 0, 0))]
    assert elements.compare([right], produced).only_in is None
    # a value check without panes has nothing to attribute
    assert elements.compare(["a"], [rec("b")]).only_in is None


def test_one_of_reports_an_alternative_that_differs_only_in_panes():
    produced = [rec("a", 9999, W(0, 10), Pane(True, False, "EARLY", 0, -1))]
    expected = one_of(
        [el("z", 9.999, W(0, 10), pane(True, True, "ON_TIME", 0, 0))],
        [el("a", 9.999, W(0, 10), pane(True, True, "ON_TIME", 0, 0))],
    )
    verdict = elements.compare(expected, produced)
    assert verdict.only_in == PANE_METADATA and "(last, timing, nonspec)" in verdict.text
