"""Generated pipelines: the model stays independent of our runner, the reference runner agrees
with it on a fixed-seed sample, and one-bug copies of the reference runner (planted_runners.py,
registered through register()) are caught and shrunk to a small program."""

import ast
import os
import sys

import pytest

from conformance.authoring.case_runner import CaseRunner
from conformance.generated import cases, grammar, running, sampling
from conformance.session import targets

sys.path.insert(0, os.path.dirname(__file__))
import planted_runners  # noqa: E402

MODEL = os.path.join(os.path.dirname(__file__), "..", "conformance", "model")


def test_the_model_imports_no_runner():
    for name in sorted(os.listdir(MODEL)):
        if not name.endswith(".py"):
            continue
        tree = ast.parse(open(os.path.join(MODEL, name)).read())
        for node in ast.walk(tree):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom):
                modules = [node.module or ""]
            for module in modules:
                assert module.startswith("conformance.model") or module.split(".")[0] in sys.stdlib_module_names, (
                    f"conformance/model/{name} imports {module}: the model imports only itself and the standard library"
                )


def _first_deviation(kind, programs, drawn=None, strategy=None):
    target = targets.create(kind, targets.TargetSettings())
    target.start()
    try:
        for i, p in enumerate(programs):
            rule = running.run(CaseRunner(target, p.streaming), p)
            if rule is not None:
                minimal, _ = sampling.shrink(
                    1,
                    drawn or len(programs),
                    p,
                    lambda c, rule=rule: running.run(CaseRunner(target, c.streaming), c) == rule,
                    strategy=strategy,
                    max_runs=60,
                )
                return i, rule, minimal
        return None
    finally:
        target.stop()


def test_reference_agrees_with_the_model_on_a_fixed_seed_sample():
    programs = sampling.sample(1, 60)
    assert _first_deviation("reference", programs) is None


def _event_time_programs():
    """What --capabilities triggers.event_time draws: an empty ON_TIME pane needs an AfterWatermark
    (or the default trigger) whose early panes took every element, which a run of every shape
    reaches rarely."""
    return cases.strategy(("triggers.event_time",))


# (the planted runner, the shape of program drawn, the index of the first catching program in seed
# 1's draw of 200 of that shape, as measured). State: the Python SDK writes combining state either
# blind or read-modify-write, at random (CombiningValueRuntimeState.add), so program 2 shows the
# lost bag contents through its sum on about half the runs; program 5 shows them through its bag's
# count on every run.
@pytest.mark.parametrize(
    "planted, shape, within",
    [
        (planted_runners.LatenessIgnored, grammar.triggered_programs, 18),
        (planted_runners.CountOneLate, grammar.triggered_programs, 3),
        (planted_runners.EmptyOnTimeDropped, _event_time_programs, 67),
        (planted_runners.BagForgetsEarlierBundles, grammar.stateful_programs, 5),
    ],
    ids=["lateness", "count", "empty-on-time", "state-across-bundles"],
)
def test_a_planted_bug_is_caught_and_shrunk(planted, shape, within):
    programs = sampling.sample(1, 200, shape())[: within + 1]  # as drawn 200 at a time
    found = _first_deviation(planted.name, programs, drawn=200, strategy=shape())
    assert found is not None, f"{planted.name}: no deviation in {within + 1} generated pipelines"
    index, rule, minimal = found
    assert index <= within and minimal.size <= 6, (index, rule, minimal.transforms())
