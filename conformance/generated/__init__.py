"""Pipelines the kit generates and judges against conformance.model (docs/testing-your-runner.md,
"Generated pipelines"). The defaults of the session's options live here, so that the plugin reads
them without importing the generator (hypothesis, Beam) into every session."""

DEFAULT_EXAMPLES = 50
DEFAULT_SEED = 1
DEFAULT_SHRINK_RUNS = 100
