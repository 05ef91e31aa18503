"""A deviation's minimal program as a standalone Python file: Beam only, no kit. It runs the program
on the runner its command line names (``python repro.py --runner PortableRunner --job_endpoint
HOST:PORT --environment_type LOOPBACK``), prints every element the runner produced with its
timestamp, window and pane, then what the Beam model expects, side by side."""

from __future__ import annotations

import os
import re

from conformance.generated.programs import Exact, Program
from conformance.generated.running import OPTIONS

_PRINT = """

class _Show(beam.DoFn):
    def process(self, element, ts=beam.DoFn.TimestampParam, w=beam.DoFn.WindowParam, pane=beam.DoFn.PaneInfoParam):
        if isinstance(element[1], (list, tuple)) or hasattr(element[1], "__iter__"):
            element = (element[0], sorted(element[1]))
        timing = {0: "EARLY", 1: "ON_TIME", 2: "LATE", 3: "UNKNOWN"}[pane.timing]
        print(f"  runner: {element!r} @ {ts.micros // 1000}ms in {w} {timing} "
              f"first={pane.is_first} last={pane.is_last} index={pane.index} nonspec={pane.nonspeculative_index}",
              flush=True)


def main(argv=None):
    import sys

    from apache_beam.options.pipeline_options import PipelineOptions

    args = list(sys.argv[1:] if argv is None else argv)
    args += [a for a in EXTRA_OPTIONS if a not in args]
    print("the runner's output (its order is not part of the model):")
    with beam.Pipeline(options=PipelineOptions(args)) as p:
        build(p) | "Show" >> beam.ParDo(_Show())
    print("the Beam model's:")
    print(MODEL)


if __name__ == "__main__":
    main()
"""


def model_text(program: Program) -> str:
    expectation = program.expectation()
    if isinstance(expectation, Exact):
        lines = [
            f"  model:  {e.value!r} @ {e.timestamp}ms in {e.window!r}" + ("" if e.pane is None else f" {_pane(e.pane)}")
            for e in expectation.elems
        ]
        return "\n".join(lines) or "  model:  (no elements)"
    replay = expectation.replay
    lines = [
        f"  model:  ({f.key!r}, {list(f.values)}) @ {f.timestamp}ms in {f.window!r} {_pane(f.pane)}"
        for f in replay.firings
    ]
    open_windows = [f"{f.key!r} in {f.window!r}" for f in replay.facts.values() if f.open]
    if open_windows:
        lines.append(
            "  (the panes of " + ", ".join(open_windows) + " depend on how the runner bundled elements that arrived "
            "together: any panes meeting the constraints of conformance/model/constraints.py are allowed; "
            "the model's above assume one bundle per event)"
        )
    return "\n".join(lines) or "  model:  (no panes)"


def _pane(p) -> str:
    return f"{p.timing} first={p.first} last={p.last} index={p.index} nonspec={p.nonspec}"


def text(program: Program, signature: str, case_id: str) -> str:
    header = (
        f'"""A generated pipeline that deviates from the Beam model: {signature}.\n\n'
        f"Found by {case_id}, shrunk to {program.size} transforms. Run it with the options of the runner to test.\n"
        '"""\n\n'
    )
    return (
        header
        + program.source_text()
        + f"\n\nEXTRA_OPTIONS = {list(OPTIONS)!r}\nMODEL = {model_text(program)!r}\n"
        + _PRINT
    )


def slug(signature: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", signature).strip("-").lower()[:90]


def write(directory: str, program: Program, signature: str, case_id: str) -> str:
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"repro-{slug(signature)}.py")
    with open(path, "w") as f:
        f.write(text(program, signature, case_id))
    return path
