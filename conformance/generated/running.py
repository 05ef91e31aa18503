"""Running one generated program on a target through the case runner, and reading its verdict."""

from __future__ import annotations

import re

from conformance.authoring.case_runner import CaseFailure, CaseRunner
from conformance.authoring.checks import check
from conformance.authoring.elements import satisfies
from conformance.generated import judging
from conformance.generated.programs import Program

# Python refuses, at construction, triggers that may finish before their window is collected
OPTIONS = ("--allow_unsafe_triggers",)
JUDGED_BY = "the output the Beam model allows (conformance.model)"


def build_into(pipeline, program: Program, prefix: str):
    """Applies the program to ``pipeline`` by executing its own source text."""
    namespace: dict = {"__name__": "generated_program"}
    exec(compile(program.source_text(), f"<generated program {prefix}>", "exec"), namespace)  # noqa: S102
    return namespace["build"](pipeline, prefix)


def add_program(pipeline, program: Program, label: str) -> str:
    out = build_into(pipeline, program, f"{label}/")
    return check(out, satisfies(judging.judge_for(program.expectation()), JUDGED_BY), label=label)


def rule_of_failure(text: str) -> str:
    """The property a failed run broke: the model rule its check names, or how the job failed."""
    rule = judging.rule_of(text)
    if rule is not None:
        return rule
    if "never ran" in text:
        return "checks never ran"
    errors = re.findall(r"\b(\w+(?:Error|Exception))\b", text)
    return f"job failed ({errors[0]})" if errors else "job failed"


def run(runner: CaseRunner, program: Program, label: str = "generated") -> str | None:
    """Runs the program alone; None when its output is what the model allows, else the rule broken."""
    pipeline = runner.pipeline(*OPTIONS)
    add_program(pipeline, program, label)
    try:
        runner.run(pipeline)
    except CaseFailure as e:
        return rule_of_failure(str(e))
    return None
