"""Generated programs as cases of the session (``-m generated``): which programs a run draws, the
capability each counts under, and what a case does when its program deviates: shrink it with
hypothesis, name the deviation by its signature and write the minimal program as a repro file."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import pytest
from hypothesis.errors import Unsatisfiable

from conformance.authoring.case_runner import CaseFailure, CaseRunner
from conformance.generated import DEFAULT_SHRINK_RUNS, grammar, repro, running, sampling, selection
from conformance.generated.programs import PRIMARY, Program, primary_capability


def strategy(wanted: tuple[str, ...] = ()):
    """What a run draws from: every program, or those touching the ``wanted`` capabilities. The
    draw and the shrink of one run use the same strategy, or the shrink would not replay the draw."""
    everything = grammar.programs()
    return everything if not wanted else everything.filter(lambda p: selection.touches(p.capabilities(), wanted))


@dataclass(frozen=True)
class Judging:
    """How a run judges its programs: the shrink's budget, where repro programs go, and when the
    run's time budget ends (time.time(); None: no budget). Carried by every drawn program, so that
    a case takes nothing but the runner and its program, and may share a job (--batch-size)."""

    shrink_runs: int = DEFAULT_SHRINK_RUNS
    repro_dir: str = os.path.join("reports", "generated")
    deadline: float | None = None


@dataclass(frozen=True)
class Drawn:
    """One program of a run: drawn ``index``-th of ``examples`` from ``seed`` (among the programs
    touching ``wanted``, when the run is narrowed to capabilities)."""

    program: Program
    seed: int
    index: int
    examples: int
    wanted: tuple[str, ...] = ()
    judging: Judging = Judging()

    @property
    def id(self) -> str:
        return f"s{self.seed}-{self.index:05d}"

    @property
    def case_id(self) -> str:
        return f"generated/pipeline[{self.id}]"


def params(seed: int, examples: int, wanted: tuple[str, ...] = (), judging: Judging = Judging()) -> list:
    try:
        programs = sampling.sample(seed, examples, strategy(wanted))
    except Unsatisfiable:
        programs = []
    drawn = [Drawn(p, seed, i, examples, wanted, judging) for i, p in enumerate(programs)]
    if not drawn:
        raise ValueError(
            f"--generated-capabilities: the generator writes no pipeline touching {', '.join(wanted)}; "
            f"it reaches {', '.join(sorted(PRIMARY))} and the capabilities they sit beside"
        )
    return [
        pytest.param(
            d,
            id=d.id,
            marks=[pytest.mark.capability(primary_capability(d.program.capabilities())), pytest.mark.generated],
        )
        for d in drawn
    ]


def signature_of(rule: str, program: Program) -> str:
    """A deviation's signature: the rule broken and the transforms of its minimal program."""
    return f"{rule} @ {'+'.join(sorted(set(program.transforms())))}"


# signatures found in this process: a further deviation of the same rule whose program holds a
# known signature's transforms is that bug again, and is not shrunk again
_FOUND: dict[str, list[tuple[frozenset, str, Program]]] = {}


class GeneratedDeviation(CaseFailure):
    """A generated program's deviation: its signature, and the capability its minimal program is
    counted under (the row of the matrix the deviation counts against)."""

    def __init__(self, message: str, signature: str, counts_against: str, summary: str):
        super().__init__(message, summary=summary)
        self.signature = signature
        self.counts_against = counts_against


def judge(runner: CaseRunner, drawn: Drawn) -> None:
    """Run ``drawn`` and judge it; on a deviation, shrink it and raise GeneratedDeviation. A program
    whose turn comes after the run's deadline (--generated-minutes) is skipped unrun."""
    __tracebackhide__ = True
    deadline = drawn.judging.deadline
    if deadline is not None and time.time() > deadline:
        pytest.skip("not run: the run's time budget (--generated-minutes) was spent before its turn")
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
            # each candidate in a runner of its own streaming-ness: a shrink may turn a Create
            # program into a TestStream one (the grammar's first shape), which a batch case refuses
            lambda candidate: running.run(CaseRunner(runner.target, candidate.streaming), candidate) == rule,
            strategy=strategy(drawn.wanted),
            max_runs=drawn.judging.shrink_runs,
        )
        signature = signature_of(rule, minimal)
        _FOUND.setdefault(rule, []).append((frozenset(minimal.transforms()), signature, minimal))
    path = repro.write(drawn.judging.repro_dir, minimal, signature, drawn.case_id)
    shrunk = (
        f"shrunk to {minimal.size} transforms in {runs} runs"
        if runs
        else "the minimal program of a signature found before"
    )
    raise GeneratedDeviation(
        f"deviation {signature} ({shrunk}; standalone program: {os.path.relpath(path)}):\n"
        f"{text}\n\nminimal program:\n{minimal.source_text()}\nthe model's output for it:\n{repro.model_text(minimal)}",
        signature,
        primary_capability(minimal.capabilities()),
        summary=f"deviation {signature}",
    )
