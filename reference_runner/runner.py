"""ReferenceRunner: run a Beam Python pipeline on the reference engine, in this process."""
from __future__ import annotations

from apache_beam.metrics import monitoring_infos
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.portability.api import beam_job_api_pb2
from apache_beam.runners.portability.portable_runner import PortableMetrics
from apache_beam.runners.runner import PipelineResult, PipelineRunner, PipelineState

from reference_runner.execute import Job


class ReferenceOptions(PipelineOptions):
    @classmethod
    def _add_argparse_args(cls, parser):
        parser.add_argument("--reference_fuse", default="true", choices=["true", "false"],
                            help="fuse ParDo and Window transforms into stages (false: every transform "
                                 "is its own stage, exercising cross-stage paths)")
        parser.add_argument("--reference_lift", default="true", choices=["true", "false"],
                            help="lift CombinePerKey into precombine, GroupByKey, merge and extract "
                                 "(false: run the composite's own subtransforms)")


class ReferenceRunner(PipelineRunner):
    """``beam.Pipeline(runner=ReferenceRunner())``; knobs given here win over pipeline options."""

    def __init__(self, fuse: bool | None = None, lift: bool | None = None):
        self.fuse = fuse
        self.lift = lift

    def run_pipeline(self, pipeline, options):
        opts = options.view_as(ReferenceOptions)
        fuse = self.fuse if self.fuse is not None else opts.reference_fuse == "true"
        lift = self.lift if self.lift is not None else opts.reference_lift == "true"
        job = Job(pipeline.to_runner_api(), fuse=fuse, lift=lift)
        job.run()
        return ReferenceResult(job.monitoring_infos)


class ReferenceResult(PipelineResult):
    def __init__(self, infos):
        super().__init__(PipelineState.DONE)
        user = [i for i in infos if monitoring_infos.is_user_monitoring_info(i)]
        merged = list(monitoring_infos.consolidate(user))
        self._metrics = PortableMetrics(beam_job_api_pb2.GetJobMetricsResponse(
            metrics=beam_job_api_pb2.MetricResults(attempted=merged, committed=merged)))

    def wait_until_finish(self, duration=None):
        return self._state

    def cancel(self):
        return self._state

    def metrics(self):
        return self._metrics


__all__ = ["ReferenceRunner", "ReferenceOptions"]
