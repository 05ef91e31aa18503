"""ReferenceRunner: run a Beam Python pipeline on the reference engine, in this process.

A bounded pipeline runs to completion inside ``run()`` (its errors raised from there). An
unbounded one (TestStream, unbounded PCollections, or ``--streaming``) may never end by itself:
``run()`` starts it on a thread of its own and returns a running result to wait for, cancel
or drain.
"""
from __future__ import annotations

import threading

from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.portability.api import beam_job_api_pb2
from apache_beam.runners.portability.portable_runner import PortableMetrics
from apache_beam.runners.runner import PipelineResult, PipelineRunner, PipelineState

from reference_runner.bundling import Schedule
from reference_runner.execute import Job, JobCancelled
from reference_runner.metrics import merge_user_metrics


class ReferenceOptions(PipelineOptions):
    """Every knob of the reference runner. Arguments given to ReferenceRunner(...) win over these."""

    @classmethod
    def _add_argparse_args(cls, parser):
        parser.add_argument("--reference_seed", type=int, default=0,
                            help="seed of every scheduling decision (bundle sizes, split points, "
                                 "injected faults); the same seed and pipeline give the same run")
        parser.add_argument("--reference_bundle_size", default="whole",
                            help="elements per bundle: 'whole' (all pending input of a stage), a "
                                 "positive integer N, or 'random' (seeded sizes, small ones likely)")
        parser.add_argument("--reference_splits", default="none", choices=["none", "random"],
                            help="'random': at a seeded position of some bundles the runner sends a "
                                 "ProcessBundleSplitRequest with a seeded fraction while the bundle "
                                 "runs, and reschedules the residual")
        parser.add_argument("--reference_faults", type=float, default=0.0,
                            help="probability in [0, 1) that a bundle attempt fails part-way in the "
                                 "worker; the runner discards that attempt and retries the bundle")
        parser.add_argument("--reference_fuse", default="true", choices=["true", "false"],
                            help="fuse ParDo and Window transforms into stages (false: every transform "
                                 "is its own stage, exercising cross-stage paths)")
        parser.add_argument("--reference_lift", default="true", choices=["true", "false"],
                            help="lift CombinePerKey into precombine, GroupByKey, merge and extract "
                                 "(false: run the composite's own subtransforms)")
        parser.add_argument("--reference_clock", default="virtual", choices=["virtual", "wall"],
                            help="processing time: 'virtual' (deterministic; when nothing else can "
                                 "progress it jumps to the next processing-time timer, trigger "
                                 "deadline or TestStream step) or 'wall' (real time: the runner waits "
                                 "for timers, and a TestStream's processing-time advance waits that long)")
        parser.add_argument("--reference_trace", default=None, metavar="PATH",
                            help="write one JSON line per bundle attempt (stage, elements, split, "
                                 "fault, attempt, watermarks, outcome) to PATH")
        parser.add_argument("--reference_replay", default=None, metavar="PATH",
                            help="take every scheduling decision from a trace written by "
                                 "--reference_trace, reproducing that run")


class ReferenceRunner(PipelineRunner):
    """``beam.Pipeline(runner=ReferenceRunner(seed=7, bundle_size="random", splits="random"))``.

    Knobs left as None come from ReferenceOptions (``--reference_*`` pipeline options)."""

    def __init__(self, seed: int | None = None, bundle_size: str | int | None = None,
                 splits: str | None = None, faults: float | None = None, fuse: bool | None = None,
                 lift: bool | None = None, trace: str | None = None, replay: str | None = None,
                 clock: str | None = None):
        self.knobs = dict(seed=seed, bundle_size=bundle_size, splits=splits, faults=faults,
                          fuse=fuse, lift=lift, trace=trace, replay=replay, clock=clock)

    def run_pipeline(self, pipeline, options):
        return self.run_portable_pipeline(pipeline.to_runner_api(), options)

    def run_portable_pipeline(self, proto, options):
        """Run a Runner API pipeline (Beam's hook for runners of protos; as submitted, pre-optimized
        by the SDK or not)."""
        opts = options.view_as(ReferenceOptions)
        knob = {name: value if value is not None else getattr(opts, f"reference_{name}")
                for name, value in self.knobs.items()}
        fuse, lift = (knob[k] if isinstance(knob[k], bool) else knob[k] == "true" for k in ("fuse", "lift"))
        schedule = Schedule(seed=knob["seed"], bundle_size=knob["bundle_size"], splits=knob["splits"],
                            faults=knob["faults"], clock=knob["clock"])
        job = Job(proto, fuse=fuse, lift=lift, schedule=schedule, trace=knob["trace"],
                  replay=knob["replay"])
        if job.unbounded or options.view_as(StandardOptions).streaming:
            return RunningResult(job)
        job.run()
        return ReferenceResult(job.monitoring_infos, job.failed_attempt_infos)


class ReferenceResult(PipelineResult):
    """A finished job: its state is final."""

    def __init__(self, committed_infos, failed_attempt_infos=()):
        super().__init__(PipelineState.DONE)
        self._metrics = _metrics(committed_infos, failed_attempt_infos)

    def wait_until_finish(self, duration=None):
        return self._state

    def cancel(self):
        return self._state

    def drain(self):
        return self._state

    def metrics(self):
        return self._metrics


class RunningResult(PipelineResult):
    """A job running on a thread of its own: RUNNING (DRAINING once asked to drain), then DONE,
    FAILED, CANCELLED or, after ``drain()``, DRAINED. ``wait_until_finish`` re-raises the job's
    failure."""

    def __init__(self, job: Job):
        super().__init__(PipelineState.RUNNING)
        self._job = job
        self._final = None  # the terminal state, set by the job's thread only
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="reference-job", daemon=True)
        self._thread.start()

    @property
    def state(self):
        return self._final or self._state

    def _run(self) -> None:
        try:
            self._job.run()
            self._final = PipelineState.DRAINED if self._job.drained else PipelineState.DONE
        except JobCancelled:
            self._final = PipelineState.CANCELLED
        except BaseException as e:  # noqa: BLE001 - handed to whoever waits for the job
            self._error = e
            self._final = PipelineState.FAILED

    def wait_until_finish(self, duration=None):
        """Wait ``duration`` milliseconds (None: until the end). The final state, or None if
        the job is still running."""
        self._thread.join(None if duration is None else duration / 1000)
        if self._thread.is_alive():
            return None
        if self._error is not None:
            raise self._error
        return self._final

    def cancel(self):
        self._job.cancel()
        self._thread.join()
        return self._final

    def drain(self):
        """Stop reading new input, truncate splittable DoFns' remaining work, finish the rest
        (windows, triggers' final panes, event-time timers) and end DRAINED; wait for that.
        A job that ended already keeps its state."""
        self._state = PipelineState.DRAINING
        self._job.drain()
        self._thread.join()
        return self._final

    def metrics(self):
        return _metrics(list(self._job.monitoring_infos), list(self._job.failed_attempt_infos))


def _metrics(committed_infos, failed_attempt_infos) -> PortableMetrics:
    return PortableMetrics(beam_job_api_pb2.GetJobMetricsResponse(
        metrics=metric_results(committed_infos, failed_attempt_infos)))


def metric_results(committed_infos, failed_attempt_infos=()) -> beam_job_api_pb2.MetricResults:
    """User metrics as the Job API reports them: committed (successful bundles, once each) and
    attempted (every attempt, failed ones too). Used by results here and by the job server."""
    committed = list(committed_infos)
    return beam_job_api_pb2.MetricResults(attempted=_user_metrics(committed + list(failed_attempt_infos)),
                                          committed=_user_metrics(committed))


def _user_metrics(infos) -> list:
    return merge_user_metrics(infos)


__all__ = ["ReferenceRunner", "ReferenceOptions"]
