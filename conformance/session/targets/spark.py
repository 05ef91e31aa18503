"""Our Spark backend (reference_runner.spark): ``spark`` (local[2]), with options after a colon,
comma-separated: ``master=URL``, ``bundle_size=N`` (elements per bundle inside a partition, as
--spark_bundle_size; the reference target's knob of that name), ``seed=N`` (streaming: seeded
micro-batch boundaries and bundle sizes, as --spark_seed)."""

from __future__ import annotations

from conformance.session.targets.base import Target, TargetUnavailable
from conformance.session.targets.own_job_server import InProcessJobServer


class SparkTarget(Target):
    name = "spark"
    help = (
        "our Spark backend through PySpark: spark (local[2]), spark:master=spark://HOST:PORT, "
        "spark:bundle_size=N, spark:seed=N (seeded micro-batch boundaries); options combine with commas"
    )
    in_process_worker = False  # bundles run in Spark's Python workers: checks confirm through metrics

    def __init__(self, spec, settings):
        super().__init__(spec, settings)
        from reference_runner import knobs
        from reference_runner.bundling import ScheduleError

        _, _, rest = spec.partition(":")
        options = dict(part.partition("=")[::2] for part in filter(None, rest.split(",")))
        self.master = options.pop("master", None) or "local[2]"
        unknown = set(options) - {"bundle_size", "seed"}
        if unknown:
            known = "master=URL, bundle_size=N, seed=N"
            raise TargetUnavailable(f"unknown Spark target option {min(unknown)!r} in {spec!r}; known: {known}")
        try:
            read = knobs.read(options, knobs.SPARK_OPTIONS)
        except ScheduleError as e:
            raise TargetUnavailable(f"Spark target {spec!r}: {e}") from None
        self.bundle_size: int | None = read.get("bundle_size")  # None: the backend's default
        self.seed: int | None = read.get("seed")
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
