"""Pipeline shapes: a case's pipeline as the Python SDK submits it after pre-optimizing it.

Beam's PortableRunner can rewrite a batch pipeline before submitting it
(``--experiments=pre_optimize=SETTING``): pack and lift combiners, expand splittable DoFns,
transcode Flatten inputs, even fuse stages into beam:runner:executable_stage:v1 transforms. A
runner behind a Job API receives whatever shape its users' clients chose, so the suite can
re-run any selection in each shape (``--pipeline-shape``), and test_pipeline_shapes.py re-runs
a representative set of cases in all of them.

The rewrite is the SDK's own (PortableRunner's), applied as it applies it: grpc targets get the
experiment, in-process targets the rewritten proto through Beam's run_portable_pipeline.
"""

from __future__ import annotations

from apache_beam.options.pipeline_options import DebugOptions, PipelineOptions, TypeOptions

#: the pre_optimize settings Beam 2.77's PortableRunner offers, and what each does
SHAPES = {
    "none": "no rewrite",
    "default": "PortableRunner's default: pack and lift combiners",
    "all_except_fusion": "every phase but fusion: packed and lifted combiners, expanded splittable DoFns, "
    "transcoded Flatten inputs",
    "all": "every phase: the pipeline arrives as fused executable stages",
    "pack_combiners": "combiners packed",
    "lift_combiners": "combiners lifted (precombine, GroupByKey, merge, extract)",
    "expand_sdf": "splittable DoFns expanded into their parts",
}


class ShapeNotApplicable(Exception):
    """The target runs Python pipeline objects, not submitted protos: no shape applies."""


def check_shape(shape: str) -> str:
    if shape not in SHAPES:
        raise ValueError(f"unknown pipeline shape {shape!r}; known: {', '.join(SHAPES)}")
    return shape


def ask_for(options: PipelineOptions, shape: str) -> PipelineOptions:
    """Set the experiment that asks for the shape on ``options`` (a case's own, used once)."""
    debug = options.view_as(DebugOptions)
    debug.experiments = [e for e in (debug.experiments or []) if not e.startswith("pre_optimize=")]
    debug.add_experiment(f"pre_optimize={shape}")
    return options


def pre_optimized(pipeline, options: PipelineOptions, default_environment=None):
    """The pipeline's proto as PortableRunner submits it: GroupByKey inputs given deterministic key
    coders (what every runner's run_pipeline does first), then the SDK's rewrite.
    ``default_environment``: the environment of transforms that name none (the runner's)."""
    from apache_beam.runners.pipeline_utils import group_by_key_input_visitor
    from apache_beam.runners.portability.portable_runner import PortableRunner

    deterministic = not options.view_as(TypeOptions).allow_non_deterministic_key_coders
    pipeline.visit(group_by_key_input_visitor(deterministic))
    proto = pipeline.to_runner_api(default_environment=default_environment)
    return PortableRunner._optimize_pipeline(proto, options)  # noqa: SLF001 - the SDK's own rewrite
