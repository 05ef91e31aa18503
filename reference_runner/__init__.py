"""A minimal, deterministic reference runner for the Beam model."""

from reference_runner.beam_import import quiet_beam_import

quiet_beam_import()  # before anything of ours imports Beam

from reference_runner.runner import ReferenceOptions, ReferenceRunner  # noqa: E402

__all__ = ["ReferenceOptions", "ReferenceRunner"]
