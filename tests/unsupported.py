"""A transform no runner knows: a primitive under a URN of its own (for tests of refusals)."""

import apache_beam as beam
from apache_beam import pvalue

UNKNOWN_URN = "beam:transform:conformance_kit_test_only:v1"


class UnknownPrimitive(beam.PTransform):
    def expand(self, pcoll):
        return pvalue.PCollection.from_(pcoll)

    def to_runner_api_parameter(self, unused_context):
        return UNKNOWN_URN, None
