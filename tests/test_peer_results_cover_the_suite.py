"""The committed results cover the suite, and the committed expectations name only its cases.

Every case the suite defines is in the committed results of every target that has them: ours
(reference, spark) and the peers' (reports/results-<target>.json), and every cross-SDK case in
reports/sdk-pipelines/. A case added without running the peers leaves their columns silent on
it, and their gates red wherever it fails; run the new cases on each peer and merge them in
(`beam-conformance merge`, docs/other-runners-and-sdks.md). An entry of an expectations file that
names no case (misspelled, or its case removed) is refused by a session; here every committed file
is checked without one.

The case ids come from the suite itself: one collection (`--collect-only`, no pipeline runs) of
the packaged cases, named by the plugin's own case_id_of.
"""

import glob
import json
import os
import subprocess
import sys

import pytest

from conformance.session import results
from conformance.session.expectations import Expectations, ExpectationsError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPORTS = os.path.join(ROOT, "reports")
SDK_REPORTS = os.path.join(REPORTS, "sdk-pipelines")
EXPECTATIONS = os.path.join(ROOT, "conformance", "expectations")

# Run in a process of its own: collect every packaged case (the other SDKs' ones too) and print
# each one's case id and whether it is a case of another SDK's pipeline (run only with --sdks).
_COLLECT = """
import json, sys
import pytest
from conformance.session.plugin import _is_case, case_id_of, packaged_case_modules

class Collect:
    def pytest_collection_finish(self, session):
        self.cases = [
            {"id": case_id_of(i), "sdk": i.get_closest_marker("sdk") is not None}
            for i in session.items if _is_case(i)
        ]

collect = Collect()
code = pytest.main(
    ["--pyargs", "conformance", "--target", "reference", "--expectations", "none", "--sdks", "all",
     "--collect-only", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"],
    plugins=[collect],
)
modules = sorted(name.removeprefix("test_") for name in packaged_case_modules())
print("CASES " + json.dumps({"code": int(code), "cases": collect.cases, "modules": modules}))
"""


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    """The suite's cases: {"cases": [{"id", "sdk"}], "modules": [case module names]}."""
    done = subprocess.run(
        [sys.executable, "-c", _COLLECT],
        cwd=tmp_path_factory.mktemp("collect"),  # away from the checkout's own pytest settings
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("CASES ")]
    assert done.returncode == 0 and lines, done.stdout[-3000:] + done.stderr[-3000:]
    found = json.loads(lines[-1][len("CASES ") :])
    assert found["code"] == 0, done.stdout[-3000:]
    ids = [c["id"] for c in found["cases"]]
    assert len(ids) == len(set(ids)) and len(ids) > 400, f"{len(ids)} cases collected"
    return found


def _cases_of_the_default_run(suite) -> set[str]:
    return {c["id"] for c in suite["cases"] if not c["sdk"]}


def _cases_of_other_sdks(suite) -> set[str]:
    return {c["id"] for c in suite["cases"] if c["sdk"]}


def _results_files() -> list[str]:
    """The committed results of the kit's cases (a Java ValidatesRunner run is another suite)."""
    paths = glob.glob(os.path.join(REPORTS, "results-*.json")) + glob.glob(os.path.join(SDK_REPORTS, "results-*.json"))
    return sorted(os.path.relpath(p, ROOT) for p in paths if results.suite_of(results.load(p)) == "cases")


def _gaps(document: dict, expected: set[str]) -> list[str]:
    held = {r["id"] for r in document["cases"]}
    missing = [f"  lacks {i}" for i in sorted(expected - held)]
    unknown = [f"  holds {i}, a case the suite no longer defines" for i in sorted(held - expected)]
    return missing + unknown


@pytest.mark.parametrize("path", _results_files())
def test_committed_results_hold_every_case_of_the_suite(suite, path):
    document = results.load(os.path.join(ROOT, path))
    in_sdk_reports = os.path.dirname(path) == os.path.relpath(SDK_REPORTS, ROOT)
    expected = _cases_of_other_sdks(suite) if in_sdk_reports else _cases_of_the_default_run(suite)
    gaps = _gaps(document, expected)
    assert not gaps, (
        f"{path} ({document['target']}) does not match the suite's {len(expected)} cases: run the missing "
        "cases on that target and merge them in (beam-conformance merge)\n" + "\n".join(gaps)
    )


def _java_vr_ids(target: str) -> list[str]:
    """The Java ValidatesRunner tests of the target's committed Java run (its Beam release's), if any."""
    path = os.path.join(REPORTS, results.results_file_name(target, "java-vr"))
    return [r["id"] for r in results.load(path)["cases"]] if os.path.exists(path) else []


@pytest.mark.parametrize("name", sorted(os.listdir(EXPECTATIONS)))
def test_committed_expectations_name_only_cases_the_suite_defines(suite, name):
    # the session's own check (Expectations.check_defined), given every case of the suite; an
    # entry for Beam's Java tests is checked against the tests of the target's committed Java run,
    # and left alone where there is none (listing the tests needs the Java build)
    expectations = Expectations.load(os.path.join(EXPECTATIONS, name))
    ids = [c["id"] for c in suite["cases"]] + _java_vr_ids(name.removesuffix(".yaml"))
    try:
        expectations.check_defined(ids, suite["modules"])
    except ExpectationsError as e:
        pytest.fail(str(e), pytrace=False)


def test_the_check_sees_a_missing_case_and_a_stale_one(suite):
    # the check itself, on a copy of a committed file with one case taken out and one made up
    document = results.load(os.path.join(REPORTS, "results-reference.json"))
    expected = _cases_of_the_default_run(suite)
    assert not _gaps(document, expected)
    taken = document["cases"].pop(0)
    document["cases"].append(dict(taken, id="gbk/no_such_case"))
    assert _gaps(document, expected) == [
        f"  lacks {taken['id']}",
        "  holds gbk/no_such_case, a case the suite no longer defines",
    ]


def test_an_entry_naming_no_case_is_refused(suite, tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text("known_failures:\n  - case: timers/no_such_case\n    reason: a typo\n")
    with pytest.raises(ExpectationsError, match="timers/no_such_case"):
        Expectations.load(str(path)).check_defined([c["id"] for c in suite["cases"]], suite["modules"])
