"""Our Spark backend (reference_runner.spark): ``spark`` (its default master), with options after a colon,
comma-separated: ``master=URL`` and the settings a job may set (``bundle_size=N``: elements per
bundle inside a partition, as --spark_bundle_size, the reference target's knob of that name;
``seed=N``: streaming's seeded micro-batch boundaries and bundle sizes, as --spark_seed; ...),
as spark/settings.SparkSettings declares them."""

from __future__ import annotations

from conformance.session.targets.base import Target, TargetUnavailable
from conformance.session.targets.own_job_server import InProcessJobServer
from reference_runner.option_table import split_spec, target_syntax
from reference_runner.spark.settings import DEFAULT_MASTER, SPARK_OPTIONS, OptionError, SparkSettings

# A target name sets the master and what a job may set; the Spark configuration is the session's.
TARGET_OPTIONS = ["master"] + [name for name, knob in SPARK_OPTIONS.items() if knob.remote]


class SparkTarget(Target):
    name = "spark"
    help = (
        f"our Spark backend through PySpark: spark ({DEFAULT_MASTER}), or options after a colon, "
        f"any of: spark:{target_syntax(SparkSettings, TARGET_OPTIONS)}"
    )
    in_process_worker = False  # bundles run in Spark's Python workers: checks confirm through metrics
    # Beam's TestStream-heavy Java ParDoTests (--java-vr-selection all) take minutes each on local[2]:
    # testRequiresTimeSortedInputWithTestStream, ...WithLateData, ...WithLateDataAndAllowedLateness,
    # testTwoRequiresTimeSortedInputWithLateData 149-164 s and testWatermarkUpdateMidBundle 88 s on
    # two loaded cores (2026-12-02), too close to the kit's 180 s cap to pass on a busier machine. The
    # price: the known failure ViewTest.testTriggeredLatestSingleton (findings T2) fails after 600 s
    java_vr_timeout = 600.0

    def __init__(self, spec, settings):
        super().__init__(spec, settings)
        options = split_spec(spec.partition(":")[2])
        unknown = set(options) - set(TARGET_OPTIONS)
        if unknown:
            known = target_syntax(SparkSettings, TARGET_OPTIONS).replace(",", ", ")
            raise TargetUnavailable(f"unknown Spark target option {min(unknown)!r} in {spec!r}; known: {known}")
        try:
            settings_ = SparkSettings.parse(options)
        except OptionError as e:
            raise TargetUnavailable(f"Spark target {spec!r}: {e}") from None
        self.master = settings_.master
        # the per-job settings the name gives, as read (the others: the runner's defaults)
        self.options = {name: getattr(settings_, name) for name in options if name != "master"}
        self._job_server = InProcessJobServer(backend="spark", spark_master=self.master)

    def sdk_job_endpoint(self) -> str:
        return self._job_server.endpoint()

    def preflight(self) -> None:
        from reference_runner.spark import session

        try:
            session.require_pyspark()
        except session.PySparkMissing as e:
            raise TargetUnavailable(str(e)) from None

    def start(self) -> None:
        from reference_runner.spark import session

        self.preflight()
        session.get(self.master)  # the JVM starts once per session, not per case

    def stop(self) -> None:
        from reference_runner.spark import session

        self._job_server.stop()
        session.stop()

    def beam_runner(self):
        from reference_runner.spark import SparkRunner

        return SparkRunner(master=self.master, **self.options)

    def describe(self) -> dict:
        return {**super().describe(), "master": self.master, **self.options}
