"""Runs one of Beam's transform snippets with pipeline options from the command line.

The snippets (apache_beam.examples.snippets.transforms...) build `beam.Pipeline()` with no options
and `print` their result; a user trying one on another runner edits it to pass options. This does
the same without editing it, the way Beam's own snippet tests do: while the snippet runs,
`apache_beam.Pipeline` is a subclass whose options default to the ones given here, the snippet
module's `print` is `str` (so the PCollection carries what would be printed), and each PCollection
the snippet hands to its `test` hook is written as text under --output.

    python -m benchmarks.snippet_main \\
        apache_beam.examples.snippets.transforms.aggregation.groupintobatches:groupintobatches \\
        --output out/result --runner=PortableRunner --job_endpoint=localhost:8099 ...
"""

from __future__ import annotations

import argparse
import importlib
import sys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.snippet_main", description=__doc__.split("\n\n")[0])
    parser.add_argument("snippet", metavar="MODULE:FUNCTION", help="the snippet function to run")
    parser.add_argument(
        "--output",
        required=True,
        help="file prefix for the results (one WriteToText per PCollection given to the test hook)",
    )
    args, pipeline_args = parser.parse_known_args(argv)
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    class PipelineWithOptions(beam.Pipeline):
        def __init__(self, runner=None, options=None, argv=None, **kwargs):
            if options is None and argv is None:
                options = PipelineOptions(pipeline_args)
            super().__init__(runner=runner, options=options, argv=argv, **kwargs)

    def write_results(*pcolls):
        for n, pcoll in enumerate(pcolls):
            _ = (
                pcoll
                | f"ToText{n}" >> beam.Map(lambda x: x if isinstance(x, str) else repr(x))
                | f"Write{n}" >> beam.io.WriteToText(f"{args.output}-{n}")
            )

    module_name, function_name = args.snippet.split(":")
    module = importlib.import_module(module_name)
    beam.Pipeline = PipelineWithOptions
    module.print = str
    getattr(module, function_name)(write_results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
