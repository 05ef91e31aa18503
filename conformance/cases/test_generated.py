"""Generated pipelines (conformance/generated), each judged by the executable model of
conformance/model: exactly where the model fixes the output, by constraints where the runner may
choose (SEMANTICS 3 to 10). Collected only when asked for with ``-m generated``; how many, and
from which seed: ``--generated-examples``, ``--generated-seed``. Results go to
``results-<target>.generated.json``."""

import pytest

from conformance.generated import cases


@pytest.mark.generated
def test_pipeline(runner, generated_program, request):
    # SEMANTICS 3 to 10, as conformance/model states them: every rule there cites its section.
    config = request.config
    cases.judge(
        runner,
        generated_program,
        config.getoption("generated_shrink_runs"),
        config.getoption("results_dir") + "/generated",
        f"generated/pipeline[{generated_program.id}]",
    )
