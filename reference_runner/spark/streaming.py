"""Streaming on Spark: micro-batch passes driven by the driver, state partitioned on executors.

The driver owns time: the TestStreams' events, the virtual processing-time clock and every
stage's watermarks. It applies one event (or one clock move) at a time, as the reference
engine does (the one rule of engine/timeline.py), and then runs a *pass*: the stages in
topological order, each as one Spark job over its new input and its state RDD, until the
pipeline is quiescent. Two parts, alternated here:

- the driver's clock (spark/stream_clock.py): when and how time advances, and the
  TestStreams' elements cut into micro-batches;
- the pass scheduler (spark/stream_passes.py): which stages run in a pass, their state RDDs,
  watermarks, side inputs and checkpoints. Self-checkpointed SDF residuals resume only when
  nothing else can run, one stage per pass; the clock jumps to the next deadline when nothing
  else is left.
"""

from __future__ import annotations

from reference_runner.backends import Control
from reference_runner.engine import triggers
from reference_runner.graph.plan import Plan
from reference_runner.spark.shipped import ShippedStage
from reference_runner.spark.stream_clock import StreamClock
from reference_runner.spark.stream_passes import PassScheduler


class StreamStuck(RuntimeError):
    pass


def runs_as_micro_batches(prepared: Plan) -> bool:
    """Run as micro-batches: TestStreams or unbounded input, splittable DoFns (whose watermark
    estimators must move downstream watermarks while they run) or triggers waiting for
    processing time (the batch translation has no clock to drive them)."""
    if prepared.unbounded or any(s.splittable for s in prepared.stages):
        return True
    return any(
        s.group is not None and s.group.trigger is not None and triggers.waits_for_processing_time(s.group.trigger)
        for s in prepared.stages
    )


class StreamingRun:
    def __init__(
        self,
        spark,
        prepared: Plan,
        plans: list[ShippedStage],
        parallelism: int,
        bundle_size: int,
        control: Control,
        seed: int | None = None,
    ):
        self.token = control.token  # read between passes, and by the passes before each stage
        self.passes = PassScheduler(
            spark.sparkContext, prepared, plans, parallelism, bundle_size, control, seed, self.token.raise_if_cancelled
        )
        self.clock = StreamClock(self.passes.streams, seed, self.passes.deliver_elements)

    # -- the loop ------------------------------------------------------------------------------
    def run(self) -> bool:
        """Until every watermark is +inf; True when it ended because it was drained."""
        passes, clock = self.passes, self.clock
        try:
            passes.start(clock.now)
            while True:
                self.token.raise_if_cancelled()
                if self.token.draining and not passes.draining:
                    passes.begin_drain()
                    clock.stop()
                    passes.run_pass(clock.now)
                    continue
                resume = passes.resumable(clock.now)
                if resume is not None:
                    passes.run_pass(clock.now, resume)
                    continue
                if not clock.holding and passes.finished():
                    return passes.draining
                if not clock.advance(passes.deadlines):
                    raise StreamStuck(passes.describe_stuck())
                passes.run_pass(clock.now)
        finally:
            passes.close()
