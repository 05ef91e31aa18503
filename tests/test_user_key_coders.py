"""A key of the user's own type, with a deterministic coder of the user's own, combined per key on
our job server, which was started from another directory and so cannot import the user's module.

Lifting the combine re-keys by the key's encoding; the runner must leave building that coder to
the SDK worker (graph/rekey.py, graph/python_coders.py) and never unpickle it itself."""

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.util import assert_that, equal_to

from user_modules import job_server_elsewhere, user_module

_MODULE = '''
from apache_beam.coders import coders, typecoders


class Sku:
    def __init__(self, code):
        self.code = code

    def __eq__(self, other):
        return isinstance(other, Sku) and self.code == other.code

    def __hash__(self):
        return hash(self.code)


class SkuCoder(coders.Coder):
    """Deterministic: an Sku is its code's UTF-8 bytes."""

    def encode(self, sku):
        return sku.code.encode()

    def decode(self, encoded):
        return Sku(encoded.decode())

    def is_deterministic(self):
        return True


typecoders.registry.register_coder(Sku, SkuCoder)
'''


def test_a_user_key_coder_is_combined_per_key_on_a_job_server_that_cannot_import_it(tmp_path):
    (tmp_path / "user").mkdir()
    skus = user_module(tmp_path / "user", "user_skus", _MODULE)
    with job_server_elsewhere(tmp_path) as endpoint:
        options = PipelineOptions(
            [f"--job_endpoint={endpoint}", "--environment_type=LOOPBACK", "--runner=PortableRunner"]
        )
        with beam.Pipeline(options=options) as p:
            out = (
                p
                | beam.Create([(skus.Sku("a"), 1), (skus.Sku("b"), 2), (skus.Sku("a"), 3)]).with_output_types(
                    tuple[skus.Sku, int]
                )
                | beam.CombinePerKey(sum)
                | beam.MapTuple(lambda sku, total: (sku.code, total))
            )
            assert_that(out, equal_to([("a", 4), ("b", 2)]))
