"""How each SDK's program is built into the cache and invoked.

Every program takes ``--case=NAME --endpoint=HOST:PORT --output=PATH``: it runs pipeline NAME on
the Job API endpoint with a LOOPBACK environment (the SDK's worker runs inside the program, so the
runner must reach back to it), and appends one JSON line per element of the pipeline's final
PCollection to PATH: ``{"value", "timestamp_ms", "window": null | [start_ms, end_ms], "pane":
{"first", "last", "timing", "index", "nonspec"}}``. It exits 0 when the job ended DONE, 1 when
it did not (the reason on stderr), 2 on a usage error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from conformance.peers import artifacts

SOURCES = Path(__file__).parent


@dataclass(frozen=True)
class SdkProgram:
    sdk: str  # as in case ids, and the name of its directory here: java, go, typescript
    beam: str  # the SDK release the program is built with
    cases: tuple[str, ...]  # the kit's cases this SDK can express
    build_steps: tuple[tuple[list[str], str], ...]  # (argv, what it does), run in the cache's copy
    command: Callable[[Path], list[str]]  # the built copy's directory -> the argv that runs it

    def build(self, progress: artifacts.Progress) -> list[str]:
        """Build the program into the cache if needed; the argv that runs it."""
        return self.command(artifacts.source_build(self.sdk, SOURCES / self.sdk, list(self.build_steps), progress))


def _java_command(home: Path) -> list[str]:
    classpath = f"{home / 'target' / 'classes'}:{(home / 'classpath.txt').read_text().strip()}"
    return ["java", "-cp", classpath, "beamconformance.SdkPipelines"]


_ALL = (
    "pardo",
    "flatten",
    "group_by_key",
    "combine_per_key",
    "side_input",
    "state_timer",
    "windowed_trigger",
    "map_state",
    "set_state",
)
# Python's SDK has no map state and keeps a set in bag state: the Java and Go pipelines are the
# ones that reach map and set state as multimap state. Java's MultimapState is not among them: the
# Java SDK harness of Beam 2.65.0 refuses it ("Multimap is not currently supported with Fn API").
_STATEFUL = ("state_timer", "map_state", "set_state")
# Cases of one SDK: a re-encoding only that SDK can do, a TestStream as that SDK encodes its events,
# a user's own merging WindowFn, Create.windowedValues (elements with their own panes), schemas
# on PCollections
_JAVA_ONLY = ("flatten_coders", "custom_merging_window", "reshuffle_metadata", "schema_pardo")
_GO_ONLY = ("test_stream", "test_stream_int16")

PROGRAMS = {
    p.sdk: p
    for p in (
        SdkProgram(
            "java",
            "2.65.0",
            _ALL + _JAVA_ONLY,
            (
                (["mvn", "-q", "-B", "package", "-DskipTests"], "building the Java pipelines"),
                (
                    ["mvn", "-q", "-B", "dependency:build-classpath", "-Dmdep.outputFile=classpath.txt"],
                    "resolving the Java pipelines' classpath",
                ),
            ),
            _java_command,
        ),
        SdkProgram(
            "go",
            "2.77.0",
            _ALL + _GO_ONLY,
            ((["go", "build", "-o", "pipelines", "."], "building the Go pipelines"),),
            lambda home: [str(home / "pipelines")],
        ),
        SdkProgram(
            "typescript",
            "2.49.0",
            tuple(c for c in _ALL if c not in _STATEFUL),  # the TypeScript SDK has no user state or timers
            ((["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"], "installing the TypeScript SDK"),),
            lambda home: ["node", str(home / "pipelines.js")],
        ),
    )
}
