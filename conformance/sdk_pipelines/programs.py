"""How each SDK's program is built into the cache and invoked.

Every program takes ``--case=NAME --endpoint=HOST:PORT --output=PATH``: it runs pipeline NAME on
the Job API endpoint with a LOOPBACK environment (the SDK's worker runs inside the program, so the
runner must reach back to it), and appends one JSON line per element of the pipeline's final
PCollection to PATH: ``{"value", "timestamp_ms", "window": null | [start_ms, end_ms], "pane":
{"first", "last", "timing", "index", "nonspec"}}``. It exits 0 when the job ended DONE, 1 when
it did not (the reason on stderr), 2 on a usage error.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from conformance.peers import artifacts

SOURCES = Path(__file__).parent


@dataclass(frozen=True)
class SdkProgram:
    sdk: str  # as it appears in case ids: java, go, typescript
    directory: str  # under conformance/sdk_pipelines/
    beam: str  # the SDK release the program is built with
    cases: tuple[str, ...]  # the kit's cases this SDK can express
    why_not: str = ""  # why the SDK has no version of the other cases

    def build(self, progress: artifacts.Progress) -> list[str]:
        """Build the program into the cache if needed; the argv that runs it."""
        if self.sdk == "typescript":
            home = artifacts.source_build(
                "typescript",
                SOURCES / self.directory,
                [(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"], "installing the TypeScript SDK")],
                progress,
            )
            return ["node", str(home / "pipelines.js")]
        if self.sdk == "go":
            home = artifacts.source_build(
                "go",
                SOURCES / self.directory,
                [(["go", "build", "-o", "pipelines", "."], "building the Go pipelines")],
                progress,
            )
            return [str(home / "pipelines")]
        home = artifacts.source_build(
            "java",
            SOURCES / self.directory,
            [
                (["mvn", "-q", "-B", "package", "-DskipTests"], "building the Java pipelines"),
                (
                    ["mvn", "-q", "-B", "dependency:build-classpath", "-Dmdep.outputFile=classpath.txt"],
                    "resolving the Java pipelines' classpath",
                ),
            ],
            progress,
        )
        classpath = f"{home / 'target' / 'classes'}:{(home / 'classpath.txt').read_text().strip()}"
        return ["java", "-cp", classpath, "beamconformance.SdkPipelines"]


_ALL = ("pardo", "flatten", "group_by_key", "combine_per_key", "side_input", "state_timer", "windowed_trigger")

PROGRAMS = {
    p.sdk: p
    for p in (
        SdkProgram("java", "java", "2.65.0", _ALL),
        SdkProgram("go", "go", "2.77.0", _ALL),
        SdkProgram(
            "typescript",
            "typescript",
            "2.49.0",
            tuple(c for c in _ALL if c != "state_timer"),
            why_not="the TypeScript SDK has no user state or timers",
        ),
    )
}
