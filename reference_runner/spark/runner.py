"""SparkRunner: run a Beam pipeline on Apache Spark through PySpark (batch, and streaming as micro-batches)."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.portability.api import metrics_pb2
from apache_beam.runners.runner import PipelineRunner

from reference_runner import knobs
from reference_runner.backends import Control
from reference_runner.graph.plan import Plan
from reference_runner.spark import plan as planning
from reference_runner.spark import session, streaming
from reference_runner.spark.translate import Translation
from reference_runner.spark.user_code import EMBEDDED_CODE, UserCode

MiB = 1 << 20


class SparkOptions(PipelineOptions):
    @classmethod
    def _add_argparse_args(cls, parser):
        parser.add_argument(
            "--spark_master",
            default="local[2]",
            help="Spark master URL: local[N] (default local[2]) or spark://HOST:PORT, ...",
        )
        parser.add_argument(
            "--spark_parallelism",
            type=int,
            default=None,
            help="partitions after a shuffle (default: Spark's default parallelism)",
        )
        parser.add_argument(
            "--spark_conf",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="a Spark configuration setting; repeat for several",
        )
        parser.add_argument(
            "--spark_bundle_size",
            type=int,
            default=1000,
            help="elements per bundle inside a partition (default 1000); outputs leave the partition bundle by bundle",
        )
        parser.add_argument(
            "--spark_seed",
            type=int,
            default=None,
            help="streaming: seeded micro-batch boundaries. Each TestStream event's elements arrive "
            "over a seeded number of micro-batches (cut at seeded points) and each pass's bundles "
            "take seeded sizes of at most --spark_bundle_size; the same seed, the same boundaries. "
            "Default: one micro-batch per event, bundles of --spark_bundle_size",
        )
        parser.add_argument(
            "--spark_max_side_input_mib",
            type=int,
            default=256,
            help="largest side input broadcast to executors, in MiB (default 256)",
        )


class SparkRunner(PipelineRunner):
    """``beam.Pipeline(runner=SparkRunner(master="local[4]"))``; None falls back to SparkOptions."""

    def __init__(
        self,
        master: str | None = None,
        parallelism: int | None = None,
        conf: dict | None = None,
        bundle_size: int | None = None,
        seed: int | None = None,
    ):
        self.master, self.parallelism, self.conf, self.bundle_size = master, parallelism, conf, bundle_size
        self.seed = seed

    def run_pipeline(self, pipeline, options):
        return self.run_portable_pipeline(pipeline.to_runner_api(), options)

    def run_portable_pipeline(self, proto, options):
        """Run a Runner API pipeline (Beam's hook for runners of protos)."""
        opts = options.view_as(SparkOptions)
        conf = dict(item.split("=", 1) for item in opts.spark_conf)
        conf.update(self.conf or {})
        settings = SparkSettings(
            self.master or opts.spark_master,
            self.parallelism or opts.spark_parallelism,
            conf,
            self.bundle_size or opts.spark_bundle_size,
            opts.spark_max_side_input_mib * MiB,
            self.seed if self.seed is not None else opts.spark_seed,
        )
        from reference_runner.backends import SparkBackend
        from reference_runner.runner import run_on

        return run_on(SparkBackend(settings), proto, streaming=options.view_as(StandardOptions).streaming)


@dataclass
class SparkSettings:
    master: str = "local[2]"
    parallelism: int | None = None
    conf: dict = field(default_factory=dict)
    bundle_size: int = 1000
    max_side_input_bytes: int = 256 * MiB
    seed: int | None = None  # streaming: seeded micro-batch boundaries (--spark_seed)

    def for_job(self, options) -> SparkSettings:
        """These (a job server's) settings with the per-job options a Job API client sent
        (knobs.SPARK_OPTIONS); ScheduleError names a bad value. The master and the Spark
        configuration stay the server's: its jobs share one SparkSession."""
        sent = knobs.job_options(options, "spark_", knobs.SPARK_OPTIONS)
        changes = knobs.read(sent, knobs.SPARK_OPTIONS, "spark_")
        if "max_side_input_mib" in changes:
            changes["max_side_input_bytes"] = changes.pop("max_side_input_mib") * MiB
        return dataclasses.replace(self, **changes)


def run_plan(
    prepared: Plan, settings: SparkSettings, control: Control, user_code: UserCode = EMBEDDED_CODE, held=None
) -> bool:
    """Run a prepared pipeline on Spark; its user metrics go to ``control`` as committed (in
    batch each stage partition's latest complete run counts once, however often Spark ran it:
    retries, recomputation; tasks.PartitionRun) and attempted. The run is Spark job group
    ``control.job_id`` when given, which ``control.cancel()`` cancels. Pipelines that stream
    (TestStreams, unbounded input, splittable DoFns) run as micro-batches (spark/streaming.py).
    ``user_code``: where the user code runs (spark/user_code.py); ``held``: the registry of the
    environment workers executors keep (held_workers.Registry), whose workers of this run are
    stopped when it ends, before this returns. True when the run ended because it was drained."""
    job_id = Translation.job_id()
    try:
        return _run(prepared, settings, control, planning.plan(prepared, job_id, user_code))
    finally:
        if held is not None and not user_code.embedded:
            held.release(job_id)


def _run(prepared: Plan, settings: SparkSettings, control: Control, plans: list) -> bool:
    spark = session.get(settings.master, settings.conf)
    parallelism = settings.parallelism or spark.sparkContext.defaultParallelism
    if control.job_id:
        spark.sparkContext.setJobGroup(control.job_id, f"Beam job {control.job_id}", interruptOnCancel=True)
        control.attach(_JobGroup(control.job_id))
    if streaming.needs_streaming(prepared):
        run = streaming.StreamingRun(
            spark, prepared, plans, parallelism, settings.bundle_size, control, seed=settings.seed
        )
        control.attach(run)
        try:
            return run.run()
        except streaming.StreamCancelled:
            raise
        except streaming.StreamStuck as e:
            raise SparkJobFailed(str(e)) from None
        except Exception as e:
            if control.cancelled.is_set():
                raise streaming.StreamCancelled("the job was cancelled") from None
            raise SparkJobFailed(_python_error(e)) from None
    translation = Translation(spark, plans, parallelism, settings.bundle_size, settings.max_side_input_bytes)
    try:
        infos = translation.run()
    except Exception as e:
        raise SparkJobFailed(_python_error(e)) from None
    infos = [metrics_pb2.MonitoringInfo.FromString(b) for b in infos]
    control.keep_metrics(prepared.graph.with_step_names(infos), committed=True)
    return False


class _JobGroup:
    def __init__(self, job_group: str):
        self._group = job_group

    def cancel(self) -> None:
        cancel_job_group(self._group)

    def drain(self) -> None:
        pass  # a bounded job just finishes


def cancel_job_group(job_group: str) -> None:
    running = session.current()
    if running is not None:
        running.sparkContext.cancelJobGroup(job_group)


class SparkJobFailed(RuntimeError):
    pass


def _python_error(e: Exception) -> str:
    """The user's Python error out of a Py4J/Spark failure, without the JVM's stack: what a
    failed stage said (its first line the error, then the user's whole traceback, nested frames
    included), or else the Python worker's last traceback."""
    text = str(e)
    stage = text.rfind(_STAGE_FAILED)
    if stage >= 0:
        return _JVM_STACK.split(text[stage + len(_STAGE_FAILED) :], maxsplit=1)[0].strip()
    found = re.findall(r"(?ms)^Traceback \(most recent call last\):.*?(?=^\s+at |\Z)", text)
    return found[-1].strip() if found else text


_STAGE_FAILED = "reference_runner.spark.tasks.StageFailed: "
_JVM_STACK = re.compile(r"(?m)^\s+at ")  # where the JVM's frames start
