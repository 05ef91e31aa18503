"""Our Spark backend (reference_runner.spark): ``spark`` (local[2]), with options after a colon,
comma-separated: ``master=URL``, ``bundle_size=N`` (elements per bundle inside a partition, as
--spark_bundle_size; the reference target's knob of that name), ``seed=N`` (streaming: seeded
micro-batch boundaries and bundle sizes, as --spark_seed)."""

from __future__ import annotations

from conformance.targets.base import Target, TargetUnavailable


class SparkTarget(Target):
    name = "spark"
    in_process_worker = False  # bundles run in Spark's Python workers: checks confirm through metrics

    def __init__(self, spec, settings):
        super().__init__(spec, settings)
        _, _, rest = spec.partition(":")
        self.master = "local[2]"
        self.bundle_size: int | None = None  # None: the backend's default
        self.seed: int | None = None
        for part in filter(None, rest.split(",")):
            key, _, value = part.partition("=")
            if key == "master" and value:
                self.master = value
            elif key == "bundle_size":
                self.bundle_size = _positive(value, part, spec)
            elif key == "seed":
                if not value.isdigit():
                    raise TargetUnavailable(f"Spark target option {part!r} in {spec!r}: seed must be an integer")
                self.seed = int(value)
            else:
                raise TargetUnavailable(
                    f"unknown Spark target option {part!r} in {spec!r}; known: master=URL, bundle_size=N, seed=N"
                )

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

        return SparkRunner(master=self.master, bundle_size=self.bundle_size, seed=self.seed)

    def describe(self) -> dict:
        described = {**super().describe(), "master": self.master}
        if self.bundle_size is not None:
            described["bundle_size"] = self.bundle_size
        if self.seed is not None:
            described["seed"] = self.seed
        return described


def _positive(value: str, part: str, spec: str) -> int:
    if value.isdigit() and int(value) > 0:
        return int(value)
    raise TargetUnavailable(f"Spark target option {part!r} in {spec!r}: bundle_size must be a positive integer")
