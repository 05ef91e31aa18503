"""Pipelines as the SDK submits them after pre-optimizing them (conformance/authoring/shapes.py).

Beam's PortableRunner rewrites a batch pipeline before submitting it when asked
(``--experiments=pre_optimize=...``): combiners packed and lifted, splittable DoFns expanded,
Flatten inputs transcoded by ``beam:dofn:identity:0.1`` transforms, or the whole pipeline fused
into ``beam:runner:executable_stage:v1`` transforms. A runner must run every such shape with the
same results. Here a representative set of the suite's cases (ParDo, GroupByKey, Flatten with
mixed coders, Combine, side inputs, state, timers, splittable DoFns, processing-time timers)
runs again in each shape the SDK offers; ``--pipeline-shape`` re-runs any selection in one.
"""

import pytest

from conformance.api import capability
from conformance.authoring.shapes import SHAPES
from conformance.cases import (
    test_combine,
    test_flatten,
    test_gbk,
    test_pardo,
    test_processing_time_bounded,
    test_sdf,
    test_side_inputs,
    test_state,
    test_timers,
)

REPRESENTATIVE = [
    test_pardo.test_tagged_outputs_carry_timestamps_and_windows,
    test_gbk.test_sessions_java_vector,
    test_gbk.test_python_equal_keys_with_different_encodings_stay_apart,
    test_flatten.test_ints_and_strs_with_different_coders_then_gbk,
    test_combine.test_lifted_combine_keys_by_encoded_bytes,
    test_combine.test_globally_on_empty_input_yields_default,
    test_combine.test_combine_per_key_with_singleton_side_input,
    test_side_inputs.test_fixed_main_fixed_side_window_mapping,
    test_side_inputs.test_multimap_side_input_groups_values_per_key,
    test_state.test_value_state_partitioned_per_fixed_window,
    test_timers.test_timer_callback_flushes_buffered_state_per_window,
    test_sdf.test_split_outputs_group_downstream,
    test_processing_time_bounded.test_group_into_batches_full_batches_then_remainder,
]

# "none" is how in-process targets run every case already; the others rewrite the pipeline.
REWRITING_SHAPES = [s for s in SHAPES if s != "none"]


def _case_id(case) -> str:
    return f"{case.__module__.rsplit('.', 1)[-1][5:]}.{case.__name__[5:]}"


# shape by shape (ids stay case-shape): consecutive cases ask for one shape, so that where cases
# share jobs (--batch-size) the cases of a shape share one
@capability("shapes.pre_optimized")
@pytest.mark.parametrize(
    "case,shape",
    [
        pytest.param(case, shape, id=f"{_case_id(case)}-{shape}")
        for shape in REWRITING_SHAPES
        for case in REPRESENTATIVE
    ],
)
def test_pre_optimized(runner, case, shape):
    # The expectations are the representative cases' own, each citing the section it rests on
    # (between them SEMANTICS 3, 4, 6, 7, 8 and 10); a shape must not change them.
    case(runner.shaped(shape))
