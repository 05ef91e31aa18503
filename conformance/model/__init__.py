"""An executable statement of the Beam model (conformance/SEMANTICS.md, sections 3 to 10), kept apart
from every runner: nothing here imports ``reference_runner``, Beam's runners or the kit's session
(tests/test_model_independent.py holds it to that). Generated pipelines are judged against it, so a
bug it shared with our runner would be blessed in both; its trigger rules are checked against the
kit's trigger transcripts and the Python SDK's own (tests/test_model_transcripts.py).

Everything is plain Python over integer milliseconds:
- ``time``: Beam's time constants;
- ``windows``: the standard WindowFns, merging, and the side-input window mapping;
- ``batch``: on-time data (Create, WindowInto, GroupByKey, Combine, Flatten, CoGroupByKey);
- ``triggers``: every standard trigger as a per-window state machine;
- ``streaming``: a TestStream script replayed through a triggered GroupByKey, exactly where the
  model fixes the panes and as constraints where the runner may choose (``constraints``);
- ``stateful``: a stateful DoFn with bag, combining and value state and an event-time timer.
"""
