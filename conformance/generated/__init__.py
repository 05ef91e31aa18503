"""Pipelines the kit generates and judges against conformance.model (docs/testing-your-runner.md,
"Generated pipelines"). The defaults of the options (the session's and ``beam-conformance
generate``'s) and their parsers live here, so that the plugin reads them without importing the
generator (hypothesis, Beam) into every session."""

import argparse

from conformance.generated import selection

DEFAULT_EXAMPLES = 50
DEFAULT_SEED = 1
DEFAULT_SHRINK_RUNS = 100


def at_least_one(text: str) -> int:
    """A count option's value: a whole number, 1 or more (argparse names the option on refusal)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {value}")
    return value


def positive_minutes(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of minutes") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 minutes, not {text}")
    return value


def capability_names(text: str) -> tuple[str, ...]:
    """--generated-capabilities: the capability ids a list of ids, groups and matrix rows stands for."""
    try:
        return selection.parse(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
