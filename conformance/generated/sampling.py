"""Drawing programs from a seed, and shrinking a failing one, with hypothesis's own engine.

``sample(seed, n)`` runs hypothesis's generate phase with ``@seed(seed)`` and keeps what it draws:
the same programs, in the same order, on every machine with the same hypothesis release (the kit
pins it). ``shrink`` replays that generation up to the failing program, lets it fail, and hands the
shrink phase a predicate that runs each smaller candidate: hypothesis's shrinker, not ours, finds
the minimal program.
"""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed

from conformance.generated import grammar
from conformance.generated.programs import Program

_SETTINGS = dict(
    deadline=None,
    database=None,
    derandomize=False,
    suppress_health_check=list(HealthCheck),
    report_multiple_bugs=False,
)


def sample(seed: int, n: int, strategy=None) -> list[Program]:
    """The first ``n`` programs hypothesis draws from ``seed``."""
    drawn: list[Program] = []
    strategy = grammar.programs() if strategy is None else strategy

    @hypothesis_seed(seed)
    @settings(max_examples=n, phases=(Phase.generate,), **_SETTINGS)
    @given(strategy)
    def collect(program):
        drawn.append(program)

    collect()
    return drawn


class _Found(Exception):
    pass


def shrink(
    seed: int,
    n: int,
    failing: Program,
    fails: Callable[[Program], bool],
    strategy=None,
    max_runs: int = 150,
) -> tuple[Program, int]:
    """The smallest program hypothesis's shrinker reaches from ``failing`` (drawn from ``seed``
    among the first ``n``) for which ``fails`` still holds, and how many candidates it ran.
    ``fails`` runs a candidate; it is called at most ``max_runs`` times."""
    strategy = grammar.programs() if strategy is None else strategy
    state = {"reached": False, "runs": 0, "best": failing}

    @hypothesis_seed(seed)
    @settings(max_examples=n, phases=(Phase.generate, Phase.shrink), **_SETTINGS)
    @given(strategy)
    def replay(program):
        if not state["reached"]:
            # generation before the failing program runs nothing; the failing one fails as found
            state["reached"] = failing_now = program == failing
        elif state["runs"] >= max_runs:
            failing_now = False
        else:
            state["runs"] += 1
            failing_now = fails(program)
            if failing_now and program.size <= state["best"].size:
                state["best"] = program
        if failing_now:  # one place of failure: hypothesis shrinks toward one bug
            raise _Found

    try:
        replay()
    except (_Found, BaseExceptionGroup):  # noqa: F821 - a builtin since Python 3.11
        pass
    return state["best"], state["runs"]
