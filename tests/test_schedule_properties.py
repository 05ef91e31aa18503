"""Hypothesis draws reference-runner schedules (seed, bundle sizes, splits, faults, fusion) and
runs the suite's property-based cases under each: every schedule must give the model's result."""

import inspect
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance import targets
from conformance.authoring.case_runner import CaseRunner
from conformance.cases import test_properties
from conformance.targets import TargetSettings

PROPERTY_CASES = sorted(
    (name, fn) for name, fn in inspect.getmembers(test_properties, inspect.isfunction) if name.startswith("test_")
)

SCHEDULES = st.builds(
    lambda seed, size, splits, faults, fuse: (
        f"reference:seed={seed},bundle_size={size},splits={splits},faults={faults},fuse={fuse}"
    ),
    seed=st.integers(0, 2**31),
    size=st.sampled_from(["whole", "1", "2", "3", "random"]),
    splits=st.sampled_from(["none", "random"]),
    faults=st.sampled_from(["0", "0.2", "0.5"]),
    fuse=st.sampled_from(["true", "false"]),
)


# CI draws six schedules a run (each a property case of several pipelines); tox -e tests-full twelve
EXAMPLES = 12 if os.environ.get("BEAM_CONFORMANCE_FULL_RUNS") == "1" else 6


def test_there_are_property_cases_to_drive():
    assert len(PROPERTY_CASES) >= 10


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.nested_given, HealthCheck.too_slow],
)
@given(spec=SCHEDULES, case=st.sampled_from(PROPERTY_CASES))
def test_every_schedule_gives_the_models_result(spec, case):
    _, run_case = case
    target = targets.create(spec, TargetSettings())
    run_case(runner=CaseRunner(target, streaming=False))
