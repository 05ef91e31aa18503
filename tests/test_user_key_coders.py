"""A key of the user's own type, with a deterministic coder of the user's own, combined per key on
our job server, which was started from another directory and so cannot import the user's module.

Lifting the combine re-keys by the key's encoding; the runner must leave building that coder to
the SDK worker (graph/rekey.py, graph/python_coders.py) and never unpickle it itself."""

import importlib.util
import sys
import textwrap
import uuid

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.util import assert_that, equal_to

from conformance.targets.processes import free_port, start_group, stop_group, wait_until_serving

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


def _user_module(directory):
    """The user's module, importable here alone (pickled by reference, as a module of a user's
    package is: an SDK worker in this process imports it, the job server cannot)."""
    name = f"user_skus_{uuid.uuid4().hex[:8]}"
    path = directory / f"{name}.py"
    path.write_text(textwrap.dedent(_MODULE))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_a_user_key_coder_is_combined_per_key_on_a_job_server_that_cannot_import_it(tmp_path):
    (tmp_path / "user").mkdir()
    (tmp_path / "server").mkdir()
    skus = _user_module(tmp_path / "user")
    port = free_port()
    with open(tmp_path / "server.log", "w+") as log:
        server = start_group(
            [sys.executable, "-m", "reference_runner.jobserver", "--port", str(port)],
            log,
            "job server",
            cwd=tmp_path / "server",
        )
        try:
            wait_until_serving(f"127.0.0.1:{port}", 120, server, log.name, "job server")
            options = PipelineOptions(
                [f"--job_endpoint=127.0.0.1:{port}", "--environment_type=LOOPBACK", "--runner=PortableRunner"]
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
        finally:
            stop_group(server)
