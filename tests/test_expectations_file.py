"""Known-failure files: parsing, validation and matching."""

import pytest

from conformance.session.expectations import Expectations, ExpectationsError, parse


def test_case_globs_and_capability_groups_match():
    entries = parse(
        {
            "known_failures": [
                {"case": "triggers/after_count_*", "reason": "fires late"},
                {"capability": "state", "reason": "no state support"},
                {"capability": "timers.looping", "reason": "no looping timers", "issue": "https://example.org/1"},
            ]
        }
    )
    exp = Expectations(entries)
    assert exp.lookup("triggers/after_count_repeated", "triggers.count").reason == "fires late"
    assert exp.lookup("state/bag_clear", "state.bag").reason == "no state support"
    assert exp.lookup("timers/loop", "timers.looping").describe() == "no looping timers (https://example.org/1)"
    assert exp.lookup("timers/event_time_order", "timers.event_time") is None
    # "state" names the group; it must not match a capability that merely starts with the same letters.
    assert exp.lookup("x/y", "statefulness.other") is None


def test_case_entries_win_over_capability_entries():
    exp = Expectations(
        parse(
            {
                "known_failures": [
                    {"capability": "gbk", "reason": "group-wide"},
                    {"case": "gbk/sessions_merge", "reason": "specific"},
                ]
            }
        )
    )
    assert exp.lookup("gbk/sessions_merge", "gbk.sessions").reason == "specific"


def test_unused_entries_are_reported():
    exp = Expectations(parse({"known_failures": [{"case": "a/b", "reason": "r1"}, {"case": "c/d", "reason": "r2"}]}))
    ran = [{"id": "a/b", "capability": "pardo.basic", "outcome": "expected-failure"}]
    assert [e.case for e in exp.stale(ran, java=False)] == ["c/d"]


@pytest.mark.parametrize(
    "data, message",
    [
        ({"known_failures": [{"case": "a/b"}]}, "needs a 'reason'"),
        ({"known_failures": [{"case": "a/b", "reason": "  "}]}, "needs a 'reason'"),
        ({"known_failures": [{"reason": "r"}]}, "exactly one of 'case' or 'capability'"),
        ({"known_failures": [{"case": "a", "capability": "gbk", "reason": "r"}]}, "exactly one"),
        ({"known_failures": [{"capability": "no.such", "reason": "r"}]}, "unknown capability 'no.such'"),
        (
            {"known_failures": [{"case": "a/b", "reason": "r", "sikp": True}]},
            "unknown key 'sikp' \\(did you mean 'skip'",
        ),
        (
            {"known_failures": [{"case": "a/b", "reason": "r", "isue": "x"}]},
            "did you mean .issue.*allowed keys: capability, case, flaky, issue, lies_in, property, reason, "
            "signature, skip",
        ),
        ({"known_failures": [{"case": "a/b", "reason": "r", "lies_in": "TestStream order"}]}, "names no property"),
        ({"known_failures": "a/b"}, "must be a list"),
        ({"knwon_failures": []}, "unknown key 'knwon_failures' \\(did you mean 'known_failures'.*allowed keys: "),
        (["a"], "top level must be a mapping"),
    ],
)
def test_malformed_files_are_rejected_with_the_reason(data, message):
    with pytest.raises(ExpectationsError, match=message):
        parse(data, "x.yaml")


def test_load_reports_yaml_errors_and_missing_files(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("known_failures: [\n")
    with pytest.raises(ExpectationsError, match="not valid YAML"):
        Expectations.load(str(bad))
    with pytest.raises(ExpectationsError, match="cannot read"):
        Expectations.load(str(tmp_path / "missing.yaml"))


def test_committed_expectation_files_are_valid():
    import glob
    import os

    import conformance

    files = glob.glob(os.path.join(os.path.dirname(conformance.__file__), "expectations", "*.yaml"))
    for path in files:
        exp = Expectations.load(path)
        assert all(e.reason for e in exp.entries), path


def test_include_adds_the_entries_of_another_file(tmp_path):
    (tmp_path / "base.yaml").write_text("known_failures:\n  - capability: triggers\n    reason: base\n")
    (tmp_path / "more.yaml").write_text("include: base.yaml\nknown_failures:\n  - case: 'gbk/x'\n    reason: more\n")
    loaded = Expectations.load(str(tmp_path / "more.yaml"))
    assert [e.reason for e in loaded.entries] == ["more", "base"]
    assert loaded.lookup("triggers/y", "triggers.after_count").reason == "base"


def test_java_vr_ids_are_matched_only_by_java_vr_entries():
    exp = Expectations(
        parse(
            {
                "known_failures": [
                    {"capability": "pardo", "reason": "the kit's ParDo cases fail"},
                    {"case": "*", "reason": "every case of the kit"},
                    {"case": "java_vr/org.apache.beam.sdk.transforms.ParDoTest$*", "reason": "Beam's ParDo tests"},
                ]
            }
        )
    )
    java = "java_vr/org.apache.beam.sdk.transforms.ParDoTest$BasicTests.testParDo"
    assert exp.lookup(java, "pardo.basic").reason == "Beam's ParDo tests"
    assert exp.lookup("java_vr/org.apache.beam.sdk.transforms.ViewTest.testX", "pardo.basic") is None
    assert exp.lookup("pardo/map", "pardo.basic").reason == "every case of the kit"


def test_lies_in_names_the_property_a_failure_lies_in():
    (entry,) = parse({"known_failures": [{"case": "a/*", "reason": "r", "lies_in": "TestStream event order"}]})
    assert entry.lies_in == "TestStream event order"
    assert parse({"known_failures": [{"case": "a/*", "reason": "r"}]})[0].lies_in is None


def test_a_signature_entry_covers_a_generated_deviation_of_that_signature():
    entries = parse(
        {"known_failures": [{"signature": "pane timing @ *", "reason": "the runner's ON_TIME rule"}]}, "x.yaml"
    )
    exp = Expectations(entries, "x.yaml")
    covered = exp.judge(None, True, None, "pane timing @ GroupByKey+TestStream+WindowInto")
    assert covered.outcome == "expected-failure" and covered.entry is entries[0]
    assert exp.judge(None, True, None, "pane contents @ GroupByKey+TestStream").outcome == "failed"
    assert not entries[0].matches("generated/pipeline[s1-00001]", "triggers.count")  # decided after the run
