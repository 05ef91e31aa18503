"""The Spark backend as a Backend (backends.py): batch pipelines as one Spark job, streaming ones
as micro-batches (spark/streaming.py). Where user code runs is decided once, on the driver
(spark/user_code.py)."""

from __future__ import annotations

import itertools
import re
import uuid

from apache_beam.portability.api import beam_runner_api_pb2, metrics_pb2

import reference_runner.spark.failure_inbox as failure_inbox
import reference_runner.spark.fair_pools as fair_pools
from reference_runner.backends import Control, JobCancelled, Outcome
from reference_runner.graph import plan as planning
from reference_runner.graph.check import UnsupportedPipeline
from reference_runner.graph.front_end import SPARK
from reference_runner.graph.plan import Plan
from reference_runner.spark.session import current as current_session
from reference_runner.spark.session import get as get_session
from reference_runner.spark.settings import SparkSettings
from reference_runner.spark.shipped import stage_plans
from reference_runner.spark.streaming import StreamingRun, StreamStuck, runs_as_micro_batches
from reference_runner.spark.translate import Translation
from reference_runner.spark.user_code import EMBEDDED_CODE, UserCode, choose
from reference_runner.worker.pool import EnvironmentUnsupported


class SparkBackend:
    """Spark through PySpark (reference_runner/spark/): batch pipelines as one Spark job,
    streaming ones as micro-batches. User code runs where spark/user_code.py decides: on
    Spark's own Python workers, or, given the ``job_server``'s address and its registry of
    ``held`` workers (spark/held_workers.py), on the workers of the job's environment, which
    each executor starts."""

    profile = SPARK

    def __init__(self, settings: SparkSettings | None = None, job_server: str | None = None, held=None):
        self.settings = settings or SparkSettings()
        self.job_server, self.held = job_server, held  # None in process

    def plan(self, proto: beam_runner_api_pb2.Pipeline) -> planning.Plan:
        # embedded, the executors run every environment's user code themselves, as the in-process
        # runner does: the environments are judged alike (another SDK's is refused by name)
        code = self.user_code(proto.components)
        return planning.build_plan(proto, self.profile, environments=code.embedded)

    def run(self, plan: planning.Plan, control: Control) -> Outcome:
        code = self.user_code(plan.components)
        control.message(f"running on Spark ({self.settings.master}); user code on {code.description}")
        return Outcome(drained=run_plan(plan, self.settings, control, code, self.held))

    def user_code(self, components: beam_runner_api_pb2.Components) -> UserCode:
        try:
            return choose(components, self.job_server, self.settings.master)
        except EnvironmentUnsupported as e:
            raise UnsupportedPipeline([str(e)], self.profile.name) from None


def run_plan(
    prepared: Plan, settings: SparkSettings, control: Control, user_code: UserCode = EMBEDDED_CODE, held=None
) -> bool:
    """Run a prepared pipeline on Spark; its user metrics go to ``control`` as committed (in
    batch each stage partition's latest complete run counts once, however often Spark ran it:
    retries, recomputation; tasks.PartitionRun) and attempted. The run is a Spark job group of
    its own, which a cancel of ``control.token`` cancels, and so does the first bundle that fails
    deterministically (failure_inbox.py): the job then fails with that bundle's error. Pipelines
    that stream (TestStreams, unbounded input, splittable DoFns) run as micro-batches
    (spark/streaming.py). ``user_code``: where the user code runs (spark/user_code.py); ``held``:
    the registry of the environment workers executors keep (held_workers.Registry), whose
    workers of this run are stopped when it ends, before this returns. True when the run ended
    because it was drained."""
    job_group = _new_job_group()
    spark = get_session(settings.master, settings.conf)
    inbox = failure_inbox.for_session(spark)
    spark.sparkContext.setJobGroup(job_group, f"Beam job {control.job_id or job_group}", interruptOnCancel=True)
    control.token.on_cancel(lambda: cancel_job_group(job_group))  # running tasks are interrupted

    def release_workers() -> None:
        if held is not None and not user_code.embedded:
            held.release(job_group)

    def fail_now() -> None:
        release_workers()  # the job's workers stop before its tasks are interrupted
        cancel_job_group(job_group)

    inbox.watch(job_group, fail_now)
    try:
        with fair_pools.pool_of_its_own(spark.sparkContext):
            return _run(prepared, spark, settings, control, stage_plans(prepared, job_group, user_code, inbox.address))
    except Exception:
        failure = inbox.failure(job_group)
        if failure is None or control.token.cancelled:
            raise
        raise SparkJobFailed(failure) from None
    finally:
        inbox.forget(job_group)
        release_workers()


_JOB_GROUPS = itertools.count(1)


def _new_job_group() -> str:
    """The Spark job group one run's Spark jobs belong to (the one a cancel cancels); it also
    names the run to the executors: its failure inbox entry, its held workers and its stages'
    descriptor ids. Unique in the process, and apart from the Job API's job id, which an
    in-process run does not have."""
    return f"j{next(_JOB_GROUPS)}-{uuid.uuid4().hex[:8]}"


def _run(prepared: Plan, spark, settings: SparkSettings, control: Control, plans: list) -> bool:
    parallelism = settings.parallelism or spark.sparkContext.defaultParallelism
    if runs_as_micro_batches(prepared):
        run = StreamingRun(spark, prepared, plans, parallelism, settings.bundle_size, control, seed=settings.seed)
        try:
            return run.run()
        except JobCancelled:
            raise
        except StreamStuck as e:
            raise SparkJobFailed(str(e)) from None
        except Exception as e:
            if control.token.cancelled:
                raise JobCancelled("the job was cancelled") from None
            raise SparkJobFailed(_python_error(e)) from None
    translation = Translation(spark, plans, parallelism, settings.bundle_size, settings.max_side_input_bytes)
    try:
        infos = translation.run()
    except Exception as e:
        raise SparkJobFailed(_python_error(e)) from None
    infos = [metrics_pb2.MonitoringInfo.FromString(b) for b in infos]
    control.keep_metrics(prepared.graph.with_step_names(infos), committed=True)
    return False


def cancel_job_group(job_group: str) -> None:
    running = current_session()
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
