"""Every version of every runner we did not write, pinned in this one place.

The Python SDK that submits the pipelines is the kit's own dependency (``apache-beam`` in
pyproject.toml). Each runner is the newest release this machine's registries serve whole:
- Prism comes from the Go module proxy at the SDK's own version.
- Beam's Java job servers: Maven Central serves no ``beam-runners-*-job-server`` jar of any recent
  release here, so the job server is run from the runner's own jar (its ``*JobServerDriver`` main
  class) on the classpath Maven resolves. The newest Beam release whose Flink and Spark runner
  jars resolve with all their dependencies is 2.62.0 (2.70.0's runner jars are served, but their
  ``beam-runners-java-job-service`` 2.70.0 is not; nor are 2.63-2.69 and 2.71-2.77).
- Beam's Java ValidatesRunner suite (conformance/java_vr/): the newest release whose tests jar,
  portable runner (``beam-runners-portability-java``, with its ``beam-runners-java-job-service``)
  and Java SDK harness all resolve here is 2.65.0 (the portable runner and the job service are
  served only up to 2.65.0; the core tests jar up to 2.75.0, the harness up to 2.73.0). The
  launcher's pom (conformance/java_vr/launcher/pom.xml) names the same release. A Beam job server
  of an older release (flink, beam-spark-job-server: 2.62.0) runs the tests of its own release, as
  Beam's Gradle tasks do: a newer SDK's Java-serialized coders and functions do not deserialize in
  an older job server ("local class incompatible"), which would fail the tests for the version gap,
  not for the runner.
- Samza: ``beam-runners-samza`` is served only at 2.14.0 (2019), too old for this SDK's
  pipelines; see samza_status below.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class GoTool:
    module: str
    version: str


@dataclass(frozen=True)
class JavaJobServer:
    """A Beam job server run as ``java -cp <classpath of the coordinates> MAIN``."""

    beam_version: str
    runner_artifact: str  # org.apache.beam:<this>:<beam_version> holds the driver class
    main_class: str
    engine: str  # the engine and the version it runs, for the results
    extra_coordinates: tuple[str, ...] = field(default=())  # "provided" dependencies the jar needs

    @property
    def coordinates(self) -> list[str]:
        return [f"org.apache.beam:{self.runner_artifact}:{self.beam_version}", *self.extra_coordinates]


PRISM = GoTool("github.com/apache/beam/sdks/v2/go/cmd/prism", "v2.77.0")

BEAM_JAVA = "2.62.0"

FLINK = JavaJobServer(
    beam_version=BEAM_JAVA,
    runner_artifact="beam-runners-flink-1.19",
    main_class="org.apache.beam.runners.flink.FlinkJobServerDriver",
    engine="Flink 1.19.0 (embedded local cluster)",
)

# Beam's Spark 3 runner compiles against Spark 3.2 and declares Spark "provided"; 3.5.0 is the newest
# Spark its build tests against, and the first of them to run on Java 17.
SPARK_FOR_BEAM_JOB_SERVER = "3.5.0"
BEAM_SPARK_JOB_SERVER = JavaJobServer(
    beam_version=BEAM_JAVA,
    runner_artifact="beam-runners-spark-3",
    main_class="org.apache.beam.runners.spark.SparkJobServerDriver",
    engine=f"Spark {SPARK_FOR_BEAM_JOB_SERVER} (local[2])",
    extra_coordinates=(
        f"org.apache.spark:spark-core_2.12:{SPARK_FOR_BEAM_JOB_SERVER}",
        f"org.apache.spark:spark-streaming_2.12:{SPARK_FOR_BEAM_JOB_SERVER}",
    ),
)

# Beam's Java ValidatesRunner suite: these three, resolved with their dependencies (and the tests'
# own test dependencies, which the test-jar's pom leaves out) by the launcher's pom.
BEAM_JAVA_VR = "2.65.0"


def java_vr_artifacts(beam_version: str = BEAM_JAVA_VR) -> tuple[str, ...]:
    return (
        f"org.apache.beam:beam-sdks-java-core:{beam_version}:tests",  # the tests (test-jar)
        f"org.apache.beam:beam-runners-portability-java:{beam_version}",  # TestUniversalRunner
        f"org.apache.beam:beam-sdks-java-harness:{beam_version}",  # the LOOPBACK worker in the test JVM
    )


# Beam's DaskRunner is part of apache-beam; these are the packages it runs on.
DASK = ("dask==2026.8.0", "distributed==2026.8.0")
