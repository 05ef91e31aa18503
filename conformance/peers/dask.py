"""Beam's DaskRunner, in process, on a Dask cluster the session starts and stops.

DaskRunner makes a new ``distributed.Client()`` (a new local cluster) for every pipeline unless
told an address; the session starts one cluster and gives every pipeline its address. The
cluster's workers are threads of this process, so the suite's checks confirm in process: the
DaskRunner reports no metrics at all (``DaskRunnerResult.metrics`` raises NotImplementedError).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging

from conformance.peers import artifacts, pins
from conformance.targets import Target, TargetUnavailable


def _installed() -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for requirement in pins.DASK:
        name = requirement.split("==")[0]
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


class DaskTarget(Target):
    """Beam's DaskRunner, in process, on a local Dask cluster (threads) started per session"""

    name = "beam-dask"

    def __init__(self, spec, settings):
        if ":" in spec:
            raise TargetUnavailable(f"target beam-dask takes no options: {spec!r}")
        super().__init__(spec, settings)
        self.cluster = None

    def fetch(self, progress) -> None:
        wanted = {r.split("==")[0]: r.split("==")[1] for r in pins.DASK}
        if _installed() == wanted:
            return
        try:
            artifacts.pip_install(list(pins.DASK), progress)
        except artifacts.ArtifactUnavailable as e:
            raise TargetUnavailable(str(e)) from None
        importlib.invalidate_caches()

    def start(self) -> None:
        self.fetch(lambda line: None)
        from distributed import LocalCluster

        # threads, not processes: the suite's checks then confirm in this process (no metrics)
        self.cluster = LocalCluster(
            n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0", silence_logs=40
        )
        # its scheduler still logs every cancelled key at INFO through the root logger: not the suite's news
        logging.getLogger("distributed").setLevel(logging.WARNING)

    def stop(self) -> None:
        if self.cluster is not None:
            self.cluster.close()

    def beam_runner(self):
        from apache_beam.runners.dask.dask_runner import DaskRunner

        return DaskRunner()

    def option_args(self, streaming: bool) -> list[str]:
        assert self.cluster is not None, "the session starts the cluster before any case runs"
        return [f"--dask_client_address={self.cluster.scheduler_address}", *super().option_args(streaming)]

    def describe(self) -> dict:
        versions = _installed()
        return {**super().describe(), "runner_version": ", ".join(f"{k} {v}" for k, v in versions.items())}
