"""Generated pipelines (conformance/generated), each judged by the executable model of
conformance/model: exactly where the model fixes the output, by constraints where the runner may
choose (SEMANTICS 3 to 10). Collected only when asked for with ``-m generated``; how many, and
from which seed, within what time and for which capabilities: ``--generated-examples``,
``--generated-seed``, ``--generated-minutes``, ``--generated-capabilities``. Results go to
``results-<target>.generated.json``."""

import pytest

from conformance.generated import cases


@pytest.mark.generated
def test_pipeline(runner, generated_program):
    # SEMANTICS 3 to 10, as conformance/model states them: every rule there cites its section.
    cases.judge(runner, generated_program)
