"""Generated programs as cases of the session (``-m generated``): which programs a run draws, the
capability each counts under, and what a case does when its program deviates: shrink it with
hypothesis, name the deviation by its signature and write the minimal program as a repro file."""

from __future__ import annotations

import os
from dataclasses import dataclass

import pytest

from conformance.authoring.case_runner import CaseFailure, CaseRunner
from conformance.generated import repro, running, sampling
from conformance.generated.programs import Program, primary_capability


@dataclass(frozen=True)
class Drawn:
    """One program of a run: drawn ``index``-th of ``examples`` from ``seed``."""

    program: Program
    seed: int
    index: int
    examples: int

    @property
    def id(self) -> str:
        return f"s{self.seed}-{self.index:05d}"


def params(seed: int, examples: int) -> list:
    drawn = sampling.sample(seed, examples)
    return [
        pytest.param(
            Drawn(p, seed, i, examples),
            id=Drawn(p, seed, i, examples).id,
            marks=[pytest.mark.capability(primary_capability(p.capabilities())), pytest.mark.generated],
        )
        for i, p in enumerate(drawn)
    ]


def signature_of(rule: str, program: Program) -> str:
    """A deviation's signature: the rule broken and the transforms of its minimal program."""
    return f"{rule} @ {'+'.join(sorted(set(program.transforms())))}"


# signatures found in this process: a further deviation of the same rule whose program holds a
# known signature's transforms is that bug again, and is not shrunk again
_FOUND: dict[str, list[tuple[frozenset, str, Program]]] = {}


class GeneratedDeviation(CaseFailure):
    def __init__(self, message: str, signature: str, summary: str):
        super().__init__(message, summary=summary)
        self.signature = signature


def judge(runner: CaseRunner, drawn: Drawn, shrink_runs: int, repro_dir: str, case_id: str) -> None:
    __tracebackhide__ = True
    pipeline = runner.pipeline(*running.OPTIONS)
    running.add_program(pipeline, drawn.program, "generated")
    try:
        runner.run(pipeline)
        return
    except CaseFailure as failure:
        if getattr(runner, "shares_job", False):
            raise  # in a shared job: the case runs alone in its own turn, and shrinks there
        text = str(failure)
    rule = running.rule_of_failure(text)
    kinds = frozenset(drawn.program.transforms())
    known = next((f for f in _FOUND.get(rule, []) if f[0] <= kinds), None)
    if known is not None:
        signature, minimal, runs = known[1], known[2], 0
    else:
        minimal, runs = sampling.shrink(
            drawn.seed,
            drawn.examples,
            drawn.program,
            lambda candidate: running.run(runner, candidate) == rule,
            max_runs=shrink_runs,
        )
        signature = signature_of(rule, minimal)
        _FOUND.setdefault(rule, []).append((frozenset(minimal.transforms()), signature, minimal))
    path = repro.write(repro_dir, minimal, signature, case_id)
    shrunk = (
        f"shrunk to {minimal.size} transforms in {runs} runs"
        if runs
        else "the minimal program of a signature found before"
    )
    raise GeneratedDeviation(
        f"deviation {signature} ({shrunk}; standalone program: {os.path.relpath(path)}):\n"
        f"{text}\n\nminimal program:\n{minimal.source_text()}\nthe model's output for it:\n{repro.model_text(minimal)}",
        signature,
        summary=f"deviation {signature}",
    )
