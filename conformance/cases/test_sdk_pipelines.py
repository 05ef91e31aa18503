"""Pipelines of Beam's other SDKs: Java, Go and TypeScript (selected with --sdks).

A portable runner runs every SDK's pipelines. It decodes only the model's standard coders, and
it leaves the SDK's own coders, functions and window functions to that SDK's workers. Each case
here is one small pipeline written in each SDK (conformance/sdk_pipelines/), submitted over the
target's Job API with a LOOPBACK environment; what the pipeline's last PCollection held comes
back as records, and is compared with what the Beam model says of that pipeline.

The pipelines are the same in every SDK, so their expectations are written once:
- Create gives each element the minimum timestamp, the global window and no pane (NO_FIRING);
  element-wise transforms keep all three.
- A batch GroupByKey or Combine with the default trigger emits one ON_TIME pane per key and
  window, at the window's max timestamp (END_OF_WINDOW is every SDK's default timestamp combiner).
- An event-time timer's output carries the timer's timestamp.
- AfterWatermark with early count firings, accumulating, in batch: see _early_count_panes.
- Map and set state are per key and window (a window's state starts empty), and what one bundle
  wrote, removed or cleared is what the next bundle of that key and window reads: see _phases.

Where an SDK's own output differs from the model for a reason of that SDK (its Create, its
rounding of Beam's extreme instants), the program or sdk_pipelines/capture.py says so.
"""

import collections
import dataclasses
import subprocess
import sys

import pytest

from conformance.api import (
    ANY,
    GLOBAL,
    NO_FIRING,
    ON_TIME_ONLY,
    CaseFailure,
    W,
    capability,
    created,
    el,
    grouped,
    pane,
    satisfies,
)
from conformance.authoring.elements import compare
from conformance.peers.artifacts import ArtifactUnavailable
from conformance.sdk_pipelines import capture
from conformance.sdk_pipelines.programs import PROGRAMS
from conformance.targets import TargetUnavailable

_JOB_TIMEOUT_S = 300  # a program's whole run: submission, the job, and its LOOPBACK worker's start


def _early_count_panes(records) -> bool:
    """AfterWatermark(early=AfterCount(2)), accumulating, allowed lateness 0, in batch, over
    a: 1..5 at 1..5 s and 11 at 11 s, b: 7 at 3 s, in 10 s fixed windows. Per key and window: any
    EARLY panes (each with at least 2 elements more than the pane before), then exactly one ON_TIME
    pane, the last, holding every element of the window; indices from 0; every pane at the
    window's max timestamp (test_triggers_batch.py says why no EARLY pane is required)."""
    expected = {("a", 0): [1, 2, 3, 4, 5], ("a", 10_000): [11], ("b", 0): [7]}
    panes = collections.defaultdict(list)
    for r in records:
        key, _, values = r.value.partition(":")
        panes[(key, r.window.start_ms)].append((r, sorted(int(v) for v in values.split(",") if v)))
    assert set(panes) == set(expected), f"panes for {sorted(panes)}, windows with data {sorted(expected)}"
    for where, found in sorted(panes.items()):
        found.sort(key=lambda rv: rv[0].pane.index)
        label = f"key {where[0]!r}, window at {where[1] / 1000:g}s"
        assert [r.pane.index for r, _ in found] == list(range(len(found))), f"{label}: pane indices not 0..n-1"
        previous: list = []
        for r, values in found:
            final = r is found[-1][0]
            assert r.pane.first == (r.pane.index == 0) and r.pane.last == final, f"{label}: first/last wrong in {r!r}"
            assert r.timestamp_ms == r.window.end_ms - 1, f"{label}: {r!r} is not at the window's max timestamp"
            timing = ("ON_TIME", 0) if final else ("EARLY", -1)
            assert (r.pane.timing, r.pane.nonspec) == timing, f"{label}: {r!r} should be {timing[0]}"
            new = collections.Counter(values) - collections.Counter(previous)
            assert sum(new.values()) == len(values) - len(previous), f"{label}: {r!r} does not contain the pane before"
            assert final or len(values) - len(previous) >= 2, f"{label}: EARLY pane {r!r} fired before 2 new elements"
            previous = values
        assert previous == expected[where], f"{label}: the last pane holds {previous}, the window {expected[where]}"
    return True


def _phases(key: str, window, phase_1: str, phase_2: str, phase_3: str) -> list:
    """The map_state and set_state pipelines: each element of a key in a 10 s fixed window sets
    three event-time timers, 2 s, 1 s and 0 s before the window's max timestamp (its end less
    1 ms), whose callbacks emit what
    the state holds then, at the timer's timestamp in that window. Phase 1 then removes apple,
    phase 2 clears the state. A timer fires once the watermark passes it, after every element of
    the window, and a key's timers fire in timestamp order (SEMANTICS 7), so each phase reads what
    the one before left, across bundles where the runner fires them in bundles of their own."""
    max_ms = window.end_ms - 1
    return [
        el(f"{key}:{v}", (max_ms - (3 - i) * 1000) / 1000, window) for i, v in enumerate((phase_1, phase_2, phase_3), 1)
    ]


# The words of map_state and set_state, per key and window: a has apple (twice) and pear in
# [0 s, 10 s) and fig in [10 s, 20 s); b has apple and kiwi in [20 s, 30 s). No two keys share a
# window (the Java SDK of Beam 2.65.0 leaves the user key out of a map's state key: see its
# program); that state is per key as well is left to the runner's unit tests
# (tests/test_reference_state.py).
_FIRST, _SECOND, _THIRD = W(0, 10), W(10, 20), W(20, 30)

# case -> (capability, what the model says the pipeline's last PCollection holds)
EXPECTED = {
    # SEMANTICS 10
    "pardo": ("pardo.basic", created(["a", "b", "b", "c", "c"])),
    # SEMANTICS 3
    "flatten": ("flatten.basic", created(["x", "y", "z"])),
    # SEMANTICS 5 and 8
    "group_by_key": ("gbk.global", grouped(["a:1,3", "b:2"])),
    # SEMANTICS 5 and 8
    "combine_per_key": ("combine.per_key", grouped(["a:4", "b:2"])),
    # SEMANTICS 6
    "side_input": ("side_inputs.singleton", created(["11", "12", "13"])),
    # SEMANTICS 7
    "state_timer": ("timers.event_time", [el("a:3", 1, GLOBAL), el("b:5", 1, GLOBAL)]),
    # SEMANTICS 5
    "windowed_trigger": (
        "triggers.batch_accumulating",
        satisfies(_early_count_panes, "per key and window: EARLY panes of 2 or more new elements, then one ON_TIME"),
    ),
    # Each element in [t, t + 1 s); a key's windows that start in the same 10 s bucket merge into
    # their span (the SDK's merge: no runner knows this WindowFn), so a@1 and a@9 share [1 s, 10 s)
    # and a@11 stays apart though nearer to a@9; one ON_TIME pane per merged window, at its end (SEMANTICS 4).
    "custom_merging_window": (
        "window.custom_merging",
        [
            el("a:1,9", 9.999, W(1, 10), ON_TIME_ONLY),
            el("a:11", 11.999, W(11, 12), ON_TIME_ONLY),
            el("a:25", 25.999, W(25, 26), ON_TIME_ONLY),
            el("b:4", 4.999, W(4, 5), ON_TIME_ONLY),
        ],
    ),
    # Elements created with their own timestamp, window and pane keep all three through a
    # Reshuffle (Java's Create.windowedValues; its first PCollection's elements are windowed values; SEMANTICS 10).
    "reshuffle_metadata": (
        "reshuffle",
        [el("a", 5, GLOBAL, NO_FIRING), el("b", 7, GLOBAL, pane(False, False, "LATE", 1, 1))],
    ),
    # Java: a Flatten of BigEndianLongCoder and NullableCoder(VarLongCoder) inputs into a
    # SerializableCoder output; what it holds does not depend on its coders (SEMANTICS 3)
    "flatten_coders": ("flatten.heterogeneous_coders", created(["1", "2", "3"])),
    # Go: TestStream events at 1 s and 2 s, then the watermark to +infinity; each element at its
    # event's timestamp, in the global window, with no pane (SEMANTICS 9)
    "test_stream": (
        "teststream",
        [el("a", 1, GLOBAL, NO_FIRING), el("b", 2, GLOBAL, NO_FIRING), el("c", 2, GLOBAL, NO_FIRING)],
    ),
    # SEMANTICS 1 and 9
    "test_stream_int16": ("teststream", [el("-7", 1, GLOBAL, NO_FIRING), el("300", 1, GLOBAL, NO_FIRING)]),
    # Java: ParDos read and write schema'd elements as Rows; the SDK needs the schema coders it
    # declared on the PCollections between its fused ParDos (SEMANTICS 1 and 10)
    "schema_pardo": ("pardo.basic", created(["apple:4", "pear:6"])),
    # word -> count in map state; phase 1 removes apple, phase 2 clears the map (SEMANTICS 7)
    "map_state": (
        "state.map",
        _phases("a", _FIRST, "apple=2,pear=1", "pear=1", "")
        + _phases("a", _SECOND, "fig=1", "fig=1", "")
        + _phases("b", _THIRD, "apple=1,kiwi=1", "kiwi=1", ""),
    ),
    # the distinct words in set state, and whether it contains apple; phase 1 removes apple,
    # phase 2 clears the set (SEMANTICS 7)
    "set_state": (
        "state.set",
        _phases("a", _FIRST, "apple,pear;apple=true", "pear;apple=false", ";apple=false")
        + _phases("a", _SECOND, "fig;apple=false", "fig;apple=false", ";apple=false")
        + _phases("b", _THIRD, "apple,kiwi;apple=true", "kiwi;apple=false", ";apple=false"),
    ),
}

# Where an SDK itself, not the runner, makes its output differ from the model: that field is left
# unchecked for that SDK's case, and why is said here.
SDK_LOSES = {
    ("go", "combine_per_key"): (
        "pane",
        "the Go SDK (v2.77.0) builds a combine's outputs without the pane the runner gave them "
        "(sdks/go/pkg/beam/core/runtime/exec/combine.go): on every runner they read as EARLY, index 0",
    ),
}


def _expected(sdk: str, case: str):
    expected = EXPECTED[case][1]
    lost = SDK_LOSES.get((sdk, case))
    if lost is None:
        return expected
    return [dataclasses.replace(e, **{lost[0]: ANY}) for e in expected]


CASES = [
    pytest.param(
        program.sdk,
        case,
        marks=[capability(EXPECTED[case][0]), pytest.mark.sdk(program.sdk)],
        id=f"{program.sdk}-{case}",
    )
    for program in PROGRAMS.values()
    for case in program.cases
]


def _progress(line: str) -> None:
    print(line, file=sys.__stderr__, flush=True)


@pytest.mark.parametrize("sdk,case", CASES)
def test_sdk_pipeline(sdk, case, runner, tmp_path):
    # The expectation is EXPECTED[case], each entry citing the section it rests on (between them
    # SEMANTICS 1, 3, 4, 5, 6, 7, 8, 9 and 10).
    what = f"the {sdk} pipeline {case!r} (Beam {PROGRAMS[sdk].beam})"
    try:
        endpoint = runner.target.sdk_job_endpoint()
        argv = PROGRAMS[sdk].build(_progress)
    except (TargetUnavailable, ArtifactUnavailable) as e:  # no Job API endpoint, or no toolchain to build with
        pytest.skip(f"{what} cannot run here: {e}")
    output = tmp_path / "elements.jsonl"
    command = [*argv, f"--case={case}", f"--endpoint={endpoint}", f"--output={output}"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=_JOB_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise CaseFailure(f"{what} did not finish within {_JOB_TIMEOUT_S} s") from None
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-30:])
        raise CaseFailure(f"{what} failed (exit code {done.returncode}):\n{tail}")
    verdict = compare(_expected(sdk, case), capture.read(output))
    if not verdict.ok:
        raise CaseFailure(f"output of {what} differs from the Beam model:\n{verdict.text}")
