"""Runners we did not write, in every CI run: Prism and Beam's Flink job server, each fetched into the
cache (or found there) and started by the test session as a runner author's target is, run a small
selection of cases, about one per capability section, and give the verdicts of their committed
expectations: a case that passed fails, or a known failure passes, and this test fails.

Their full runs take longer than CI allows; `tox -e conformance-peers` makes them, and their results
and expectations are committed (reports/results-<target>.json, conformance/expectations/).
"""

import pytest

from suite_run import run_suite, unexpected

# case id -> the section it stands for (one or two each; the pane and TestStream rows besides)
SELECTION = {
    "pardo/map_applies_function_to_every_element": "what",
    "gbk/global_window_groups_many_keys": "what",
    "side_inputs/singleton_value_seen_by_every_element": "what",
    "combine/per_key_builtins": "what",
    "state/value_counter_per_key": "what",
    "metrics/counter_counts_processed_elements": "what",
    "gbk/fixed_windows_group_per_key_and_window": "where",
    "gbk/sessions_java_vector": "where",
    "timers/event_time_timer_in_global_window": "when",
    "lateness/element_exactly_at_lateness_horizon_is_kept": "when",
    "triggers/default_trigger_fires_one_final_on_time_pane_per_window": "when/how",
    "sdf/offset_range_split_in_pieces_emits_every_offset_once": "sdf",
    "impulse/one_element": "misc",
    "panes/group_by_key_pane_in_fixed_windows_is_on_time_first_and_last": "misc",
    "teststream/elements_arrive_with_their_timestamps": "misc",
}


def _keyword() -> str:
    return " or ".join(case_id.split("/", 1)[1] for case_id in SELECTION)


@pytest.mark.parametrize("target", ["prism", "flink"])
def test_selection_gives_the_committed_verdicts(target, tmp_path):
    done, doc = run_suite(["--target", target], tmp_path, "-k", _keyword(), timeout=1200)
    outcomes = {c["id"]: c for c in doc["cases"]}
    # -k matches by name: the selection ran (and no other case with a like name hid one)
    assert set(SELECTION) <= set(outcomes), sorted(set(SELECTION) - set(outcomes))
    bad = unexpected(doc, width=400)
    assert done.returncode == 0 and not bad, "\n".join(bad) or done.stdout[-3000:]
    # the selection holds both: cases the runner passes and known failures, so a change either way shows
    kinds = {outcomes[c]["outcome"] for c in SELECTION}
    assert {"passed", "expected-failure"} <= kinds, kinds
    assert doc["target_info"].get("runner_version"), doc["target_info"]
