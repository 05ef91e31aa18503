"""Our findings against programs the trials run: a program whose check asks for something the Beam
model does not support, so that our runner fails it while doing what the model says. Each names
the page (under docs/findings/) that gives the model's sources; the trials table shows it next to
the program, and --strict does not count the program's failure on our runner, since it is
expected. A program with a finding that passes on ours is flagged: the finding is stale, or our
runner changed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

GO_TESTS = "docs/findings/go-sdk-tests.md"


@dataclass(frozen=True)
class Finding:
    name: str  # its heading's label on the page, e.g. G1
    page: str  # the page, from the repository's root
    anchor: str  # its heading's anchor there
    says: str  # in a few words

    def link(self, table_dir: Path) -> str:
        """The finding's address from the directory of the table that links to it."""
        return f"{Path(os.path.relpath(ROOT / self.page, table_dir)).as_posix()}#{self.anchor}"


#: (sdk, program) -> the finding against it
FINDINGS: dict[tuple[str, str], Finding] = {
    ("go", "TestTriggerAfterProcessingTime"): Finding(
        "G1",
        GO_TESTS,
        "g1-testtriggerafterprocessingtime-wants-an-element-that-arrives-after-the-trigger-finished",
        "wants a pane for an element that arrives after its window's once-trigger finished",
    ),
    ("go", "TestTriggerAfterSynchronizedProcessingTime"): Finding(
        "G2",
        GO_TESTS,
        "g2-testtriggeraftersynchronizedprocessingtime-asserts-a-pane-count-the-runner-chooses",
        "asserts 2 panes where the model allows 2 to 5 (when the trigger fires is the runner's choice)",
    ),
    **{
        ("go", test): Finding(
            "G3",
            GO_TESTS,
            "g3-testtimers_processingtime_infinity-and-_bounded-want-timers-of-an-expired-window-to-fire",
            "wants processing-time timers that come due after their window expired to fire",
        )
        for test in ("TestTimers_ProcessingTime_Infinity", "TestTimers_ProcessingTime_Bounded")
    },
    ("go", "TestTimers_ProcessingTime_Unbounded"): Finding(
        "G4",
        GO_TESTS,
        "g4-testtimers_processingtime_unbounded-wants-the-runners-processing-time-to-be-the-wall-clock",
        "depends on the runner's processing time passing with the SDK's wall clock",
    ),
}


def expected_failure(sdk: str, program: str, status: str) -> bool:
    """Is this outcome of ours one a finding explains (a failure of a program with a finding)?"""
    return status == "fail" and (sdk, program) in FINDINGS


def note(sdk: str, program: str, status: str, table_dir: Path) -> str:
    """The table's cell for the finding against a program (empty without one); ``status``: ours."""
    finding = FINDINGS.get((sdk, program))
    if finding is None:
        return ""
    cell = f"[{finding.name}]({finding.link(table_dir)}): {finding.says}"
    if status == "pass":
        cell += " (but it passes on ours: is the finding stale?)"
    return cell
