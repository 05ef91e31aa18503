"""The taxonomy and the cases agree: every case names a known capability, and every capability
has cases unless it says why none can exist."""

import importlib
import inspect
import pkgutil

import conformance.cases
from conformance import capabilities


def _case_capabilities() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for module_info in pkgutil.iter_modules(conformance.cases.__path__):
        if module_info.name == "test_java_vr":
            # Beam's Java tests, parametrized at collection: conformance/java_vr/placement.py gives
            # each its capability (checked there against the taxonomy, and in tests/test_java_vr.py)
            continue
        if module_info.name == "test_generated":
            # generated pipelines, parametrized at collection: each counts under its program's primary
            # capability (conformance/generated/programs.py; checked below, test_generated_capabilities_are_known)
            continue
        module = importlib.import_module(f"conformance.cases.{module_info.name}")
        for name, func in inspect.getmembers(module, inspect.isfunction):
            if not name.startswith("test_") or func.__module__ != module.__name__:
                continue
            marks = [m.args[0] for m in getattr(func, "pytestmark", []) if m.name == "capability"]
            if not marks:  # a parametrized case may tag each of its parameters instead
                for param in _params(func):
                    [cap] = [m.args[0] for m in param.marks if m.name == "capability"] or [None]
                    assert cap, f"{module.__name__}.{name}[{param.id}] needs a capability mark"
                    found.setdefault(cap, []).append(f"{module_info.name}.{name}[{param.id}]")
                if _params(func):
                    continue
            assert len(marks) == 1, f"{module.__name__}.{name} needs exactly one @capability, has {marks}"
            found.setdefault(marks[0], []).append(f"{module_info.name}.{name}")
    return found


def _params(func) -> list:
    return [
        p for m in getattr(func, "pytestmark", []) if m.name == "parametrize" for p in m.args[1] if hasattr(p, "marks")
    ]


def test_every_case_names_a_known_capability():
    unknown = {cap: cases for cap, cases in _case_capabilities().items() if cap not in capabilities.BY_ID}
    assert not unknown


def test_every_capability_has_cases_or_says_why_not():
    covered = _case_capabilities()
    missing = [c.id for c in capabilities.CAPABILITIES if c.id not in covered and not c.untestable]
    assert not missing, f"capabilities without cases: {missing}"
    stale = [c.id for c in capabilities.CAPABILITIES if c.id in covered and c.untestable]
    assert not stale, f"capabilities marked untestable that have cases: {stale}"


def test_every_row_has_a_capability():
    rows_used = {c.row for c in capabilities.CAPABILITIES}
    assert rows_used == {r.name for r in capabilities.ROWS}


def test_generated_capabilities_are_known():
    from conformance.generated import programs, sampling

    assert set(programs.PRIMARY) <= set(capabilities.BY_ID)
    for program in sampling.sample(1, 200):
        assert set(program.capabilities()) <= set(capabilities.BY_ID), program.capabilities()
