"""beam-direct runs what its name says: Beam's DirectRunner on FnApiRunner (batch) and the
bundle-based direct runner (streaming), never Prism, even where a Prism binary is at hand.

Since Beam 2.6x DirectRunner hands a pipeline to Prism first whenever it can start one and falls
back only when that fails; on a machine without internet the download fails, so the column looked
pinned only by accident. Here Prism is at hand (the binary the prism target fetches, given with
--prism_location): plain DirectRunner takes it, the target's runner does not.
"""

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.direct.direct_runner import DirectRunner
from apache_beam.runners.portability.fn_api_runner.fn_runner import RunnerResult

from conformance.peers import artifacts, pins
from conformance.session.targets.beam_peers import BeamDirectTarget
from conformance.targets import TargetSettings


def _run(runner, prism: str):
    options = PipelineOptions([f"--prism_location={prism}", "--prism_log_level=warn"])
    p = beam.Pipeline(runner=runner, options=options)
    _ = p | beam.Create([1, 2, 3]) | beam.Map(lambda x: x * 2)
    result = p.run()
    result.wait_until_finish()
    return result


def test_beam_direct_stays_off_prism_when_prism_is_at_hand():
    prism = str(artifacts.go_binary(pins.PRISM.module, pins.PRISM.version, print))
    # the machine really offers Prism: DirectRunner as shipped runs the pipeline there
    assert not isinstance(_run(DirectRunner(), prism), RunnerResult)
    # the target's DirectRunner does not
    assert isinstance(_run(BeamDirectTarget("beam-direct", TargetSettings()).beam_runner(), prism), RunnerResult)
