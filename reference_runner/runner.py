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

from reference_runner.backends import Control, ReferenceBackend
from reference_runner.execute import JobCancelled
from reference_runner.knobs import KNOBS, Knobs


class ReferenceOptions(PipelineOptions):
    """Every knob of the reference runner (knobs.KNOBS). Arguments given to ReferenceRunner(...)
    win over these."""

    @classmethod
    def _add_argparse_args(cls, parser):
        for name, knob in KNOBS.items():
            default = getattr(Knobs(), name)
            default_text = "" if default is None else f" (default {str(default).lower()})"
            parser.add_argument(
                f"--reference_{name}",
                default=None,
                metavar="PATH" if knob.expected == "a file path" else None,
                help=knob.help + default_text,
            )


class ReferenceRunner(PipelineRunner):
    """``beam.Pipeline(runner=ReferenceRunner(seed=7, bundle_size="random", splits="random"))``.

    Knobs left as None come from ReferenceOptions (``--reference_*`` pipeline options)."""

    def __init__(
        self,
        seed: int | None = None,
        bundle_size: str | int | None = None,
        splits: str | None = None,
        faults: float | None = None,
        fuse: bool | None = None,
        lift: bool | None = None,
        trace: str | None = None,
        replay: str | None = None,
        clock: str | None = None,
    ):
        self.knobs = dict(
            seed=seed,
            bundle_size=bundle_size,
            splits=splits,
            faults=faults,
            fuse=fuse,
            lift=lift,
            trace=trace,
            replay=replay,
            clock=clock,
        )

    def run_pipeline(self, pipeline, options):
        return self.run_portable_pipeline(pipeline.to_runner_api(), options)

    def run_portable_pipeline(self, proto, options):
        """Run a Runner API pipeline (Beam's hook for runners of protos; as submitted, pre-optimized
        by the SDK or not)."""
        opts = options.view_as(ReferenceOptions)
        from_options = Knobs.parse({name: getattr(opts, f"reference_{name}") for name in KNOBS})
        backend = ReferenceBackend(Knobs.parse(self.knobs, base=from_options))
        return run_on(backend, proto, streaming=options.view_as(StandardOptions).streaming)


def run_on(backend, proto, streaming: bool = False) -> PipelineResult:
    """Run ``proto`` on ``backend``: a bounded pipeline to its end, here; an unbounded one (or
    ``streaming``) on a thread of its own, returning a RunningResult."""
    plan = backend.prepare(proto)  # raises for unsupported pipelines, before anything runs
    control = Control()
    if plan.unbounded or streaming:
        return RunningResult(backend, plan, control)
    backend.run(plan, control)
    return ReferenceResult(control)


class ReferenceResult(PipelineResult):
    """A finished job: its state is final."""

    def __init__(self, control: Control):
        super().__init__(PipelineState.DONE)
        self._metrics = _metrics(control)

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

    def __init__(self, backend, plan, control: Control):
        super().__init__(PipelineState.RUNNING)
        self._backend, self._plan, self._control = backend, plan, control
        self._final = None  # the terminal state, set by the job's thread only
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="reference-job", daemon=True)
        self._thread.start()

    @property
    def state(self):
        return self._final or self._state

    def _run(self) -> None:
        try:
            outcome = self._backend.run(self._plan, self._control)
            self._final = PipelineState.DRAINED if outcome.drained else PipelineState.DONE
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
        self._control.cancel()
        self._thread.join()
        return self._final

    def drain(self):
        """Stop reading new input, truncate splittable DoFns' remaining work, finish the rest
        (windows, triggers' final panes, event-time timers) and end DRAINED; wait for that.
        A job that ended already keeps its state."""
        self._state = PipelineState.DRAINING
        self._control.drain()
        self._thread.join()
        return self._final

    def metrics(self):
        return _metrics(self._control)


def _metrics(control: Control) -> PortableMetrics:
    return PortableMetrics(beam_job_api_pb2.GetJobMetricsResponse(metrics=control.metric_results()))


__all__ = ["ReferenceRunner", "ReferenceOptions"]
