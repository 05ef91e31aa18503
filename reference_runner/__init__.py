"""A minimal, deterministic reference runner for the Beam model."""

from reference_runner.runner import ReferenceOptions, ReferenceRunner

__all__ = ["ReferenceOptions", "ReferenceRunner"]
