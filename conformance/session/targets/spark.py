"""Our Spark backend (reference_runner.spark): ``spark`` (its default master), with options after a colon,
comma-separated: ``master=URL``, ``bundle_size=N`` (elements per bundle inside a partition, as
--spark_bundle_size; the reference target's knob of that name), ``seed=N`` (streaming: seeded
micro-batch boundaries and bundle sizes, as --spark_seed)."""

from __future__ import annotations

from conformance.session.targets.base import Target, TargetUnavailable
from conformance.session.targets.own_job_server import InProcessJobServer
from reference_runner.spark.settings import DEFAULT_MASTER


class SparkTarget(Target):
    name = "spark"
    help = (
        f"our Spark backend through PySpark: spark ({DEFAULT_MASTER}), spark:master=spark://HOST:PORT, "
        "spark:bundle_size=N, spark:seed=N (seeded micro-batch boundaries); options combine with commas"
    )
    in_process_worker = False  # bundles run in Spark's Python workers: checks confirm through metrics

    def __init__(self, spec, settings):
        super().__init__(spec, settings)
        from reference_runner.spark.settings import OptionError, SparkSettings

        _, _, rest = spec.partition(":")
        options = dict(part.partition("=")[::2] for part in filter(None, rest.split(",")))
        unknown = set(options) - {"master", "bundle_size", "seed"}
        if unknown:
            known = "master=URL, bundle_size=N, seed=N"
            raise TargetUnavailable(f"unknown Spark target option {min(unknown)!r} in {spec!r}; known: {known}")
        try:
            settings_ = SparkSettings.parse(options)
        except OptionError as e:
            raise TargetUnavailable(f"Spark target {spec!r}: {e}") from None
        self.master = settings_.master
        self.bundle_size: int | None = settings_.bundle_size if "bundle_size" in options else None
        self.seed: int | None = settings_.seed
        self._job_server = InProcessJobServer(backend="spark", spark_master=self.master)

    def sdk_job_endpoint(self) -> str:
        return self._job_server.endpoint()

    def start(self) -> None:
        try:
            from reference_runner.spark import session
        except ImportError as e:
            raise TargetUnavailable(f"the Spark backend needs pyspark: {e}") from None
        session.get(self.master)  # the JVM starts once per session, not per case

    def stop(self) -> None:
        from reference_runner.spark import session

        self._job_server.stop()
        session.stop()

    def beam_runner(self):
        from reference_runner.spark import SparkRunner

        return SparkRunner(master=self.master, bundle_size=self.bundle_size, seed=self.seed)

    def describe(self) -> dict:
        described = {**super().describe(), "master": self.master}
        if self.bundle_size is not None:
            described["bundle_size"] = self.bundle_size
        if self.seed is not None:
            described["seed"] = self.seed
        return described
