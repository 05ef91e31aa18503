"""Mistakes in a case itself, as opposed to a runner's failures: raised while the case builds its
pipelines, before any runner sees them, and recorded as the case's ``error``, never as a verdict
on the runner."""

from __future__ import annotations


class CaseDefinitionError(Exception):
    """The case is wrong (its author's mistake): the plugin records the outcome ``error``."""

    # read by the plugin (session/plugin.py) to record an error rather than a failure
    conformance_outcome = "error"


class MalformedExpectation(CaseDefinitionError, ValueError):
    """A check's expectation the kit cannot compare output with (fields given on some expected
    elements only, an expectation of the wrong type)."""
