"""``python -m reference_runner.jobserver`` / ``reference-runner serve``: serve our runner over the Beam Job API."""

from __future__ import annotations

import argparse
import gc
import logging
import signal
import sys

from reference_runner.jobserver.served_backends import BACKENDS, DEFAULT
from reference_runner.spark.settings import DEFAULT_MASTER, PREFIX, SPARK_OPTIONS


def _per_job_spark_options() -> str:
    names = [f"--{PREFIX}{name}" for name, option in SPARK_OPTIONS.items() if option.remote]
    return ", ".join(names[:-1]) + f" and {names[-1]}"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="reference-runner",
        description="Serve the reference runner over the Beam Job API, so that pipelines from any "
        "Beam SDK can run on it (PortableRunner: --runner=PortableRunner "
        "--job_endpoint=localhost:8099 --environment_type=LOOPBACK).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="start the job server and run until interrupted")
    serve.add_argument("--port", type=int, default=8099, help="Job API port (default 8099; 0 picks a free one)")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    serve.add_argument(
        "--backend",
        choices=list(BACKENDS),
        default=DEFAULT,
        help=f"which engine runs the jobs (default {DEFAULT}): "
        + "; ".join(f"{name} ({kind.help})" for name, kind in BACKENDS.items()),
    )
    serve.add_argument(
        "--spark-master",
        default=None,
        help=f"Spark master URL for --backend spark (default {DEFAULT_MASTER}); every job shares it. A job "
        f"may set {_per_job_spark_options()} as pipeline options (its SDK must know them: import "
        "reference_runner.spark)",
    )
    serve.add_argument(
        "--staging-dir", default=None, help="where staged artifacts go (default: a temporary directory removed at exit)"
    )
    serve.add_argument("--max-pipeline-mib", type=int, default=64, help="largest pipeline accepted (MiB)")
    serve.add_argument("--max-artifact-mib", type=int, default=1024, help="largest artifact accepted (MiB)")
    serve.add_argument(
        "--worker-timeout", type=float, default=60, help="seconds a started SDK worker has to connect (default 60)"
    )
    serve.add_argument(
        "--bundle-timeout", type=float, default=600, help="seconds a bundle may run before the job fails (default 600)"
    )
    serve.add_argument(
        "--spare-workers",
        type=int,
        default=4,
        metavar="N",
        help="when a job ends its SDK workers stop (so DoFn teardown runs then) and a "
        "fresh spare is started for its environment if that can serve again (a PROCESS "
        "command, or an EXTERNAL pool a second job has used; never a LOOPBACK pool, which "
        "leaves with its job), at most N spares in all (default 4; 0: none, every job "
        "waits for its worker to start)",
    )
    serve.add_argument(
        "--spare-idle-seconds",
        type=float,
        default=300,
        metavar="S",
        help="a spare worker no job took within S seconds is stopped when the next job starts (default 300)",
    )
    serve.add_argument(
        "--keep-jobs",
        type=int,
        default=100,
        metavar="N",
        help="ended jobs kept with their state, messages and metrics for late GetState, "
        "GetJobMetrics and message-stream calls; older ones are forgotten and their staged "
        "artifacts deleted (default 100)",
    )
    serve.add_argument("--log-level", default="INFO", help="Python logging level (default INFO)")
    return parser


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0].startswith("-") and argv[0] not in ("-h", "--help"):
        argv.insert(0, "serve")  # `python -m reference_runner.jobserver --port N` serves
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.backend == "spark":
        from reference_runner.spark.session import PySparkMissing, require_pyspark

        try:
            require_pyspark()
        except PySparkMissing as e:
            print(f"reference-runner: --backend spark: {e}", file=sys.stderr)
            return 2
    from reference_runner.jobserver.server import JobServer

    server = JobServer(
        host=args.host,
        port=args.port,
        staging_dir=args.staging_dir,
        max_pipeline_bytes=args.max_pipeline_mib << 20,
        max_artifact_bytes=args.max_artifact_mib << 20,
        worker_timeout=args.worker_timeout,
        bundle_timeout=args.bundle_timeout,
        spare_workers=args.spare_workers,
        backend=args.backend,
        spark_master=args.spark_master,
        keep_jobs=args.keep_jobs,
        spare_idle_seconds=args.spare_idle_seconds,
    ).start()
    # What the server imported and built so far lives as long as it does. Frozen, it is left out
    # of the collector's count of old objects, so the reference cycles each ended job leaves (its
    # record, engine and worker) are collected every few hundred jobs (measured: ~330 tiny jobs,
    # ~70 MiB) rather than every few thousand (Beam's modules are several hundred thousand objects).
    gc.collect()
    gc.freeze()
    print(f"reference job server listening on {server.address}", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: server.stop())
    try:
        server.wait()
    except KeyboardInterrupt:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
