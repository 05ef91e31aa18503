"""Our findings against the programs trials/ runs (trials/findings.py): each links a heading that
exists, the trials table shows it in the program's row, and --strict expects that failure only."""

from __future__ import annotations

import datetime
from pathlib import Path
from types import SimpleNamespace

from tests.test_docs import _headings
from trials import findings, run_trials

ROOT = Path(__file__).resolve().parent.parent


def test_every_finding_links_a_heading_of_its_page():
    for (sdk, program), finding in findings.FINDINGS.items():
        page = ROOT / finding.page
        assert page.exists(), (sdk, program, finding.page)
        assert finding.anchor in _headings(page), (sdk, program, finding.anchor)
        assert finding.anchor.startswith(finding.name.lower() + "-"), (sdk, program, finding.name)


def _row(program: str, status: str) -> run_trials.Row:
    return run_trials.Row("go", program, outcomes={"ours": run_trials.Outcome(status)})


def test_strict_expects_a_failure_a_finding_explains_and_no_other():
    [(sdk, program)] = [k for k in findings.FINDINGS if k[1] == "TestTriggerAfterProcessingTime"]
    assert not run_trials._unexpected(_row(program, "fail"))
    assert run_trials._unexpected(_row(program, "timeout"))  # a finding explains a failure, not a hang
    assert run_trials._unexpected(_row("TestTriggerRepeat", "fail"))
    assert not run_trials._unexpected(_row("TestTriggerRepeat", "pass"))


def test_the_table_links_the_finding_from_the_tables_directory(tmp_path):
    out = tmp_path / "reports" / "sdk-trials"
    args = SimpleNamespace(
        backend="reference", peer=[], peers_from=None, out=str(out), only=["go"], timeout=None, peers_copied=""
    )
    rows = [_row("TestTriggerAfterProcessingTime", "fail"), _row("TestTriggerAfterSynchronizedProcessingTime", "pass")]
    at = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    table = run_trials.render(args, ["ours"], rows, [], at, at)
    [line] = [line for line in table.splitlines() if "`TestTriggerAfterProcessingTime`" in line]
    finding = findings.FINDINGS[("go", "TestTriggerAfterProcessingTime")]
    assert f"[G1]({finding.link(out)})" in line
    assert (out / finding.link(out).partition("#")[0]).resolve() == ROOT / finding.page
    [line] = [line for line in table.splitlines() if "`TestTriggerAfterSynchronizedProcessingTime`" in line]
    assert "[G2](" in line and "passes on ours" in line
