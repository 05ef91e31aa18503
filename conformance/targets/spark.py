"""Our Spark backend (reference_runner.spark): ``spark`` (local[2]) or ``spark:master=URL``."""

from __future__ import annotations

from conformance.targets.base import Target, TargetUnavailable


class SparkTarget(Target):
    name = "spark"
    in_process_worker = False  # bundles run in Spark's Python workers: checks confirm through metrics

    def __init__(self, spec, settings):
        super().__init__(spec, settings)
        _, _, rest = spec.partition(":")
        self.master = "local[2]"
        for part in filter(None, rest.split(",")):
            key, _, value = part.partition("=")
            if key != "master" or not value:
                raise TargetUnavailable(f"unknown Spark target option {part!r} in {spec!r}; known: master=URL")
            self.master = value

    def start(self) -> None:
        try:
            from reference_runner.spark import session
        except ImportError as e:
            raise TargetUnavailable(f"the Spark backend needs pyspark: {e}") from None
        session.get(self.master)  # the JVM starts once per session, not per case

    def stop(self) -> None:
        from reference_runner.spark import session

        session.stop()

    def runner(self):
        from reference_runner.spark import SparkRunner

        return SparkRunner(master=self.master)

    def describe(self) -> dict:
        return {**super().describe(), "master": self.master}
