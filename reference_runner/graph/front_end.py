"""The front end, as one list of passes: a submitted pipeline -> the pipeline a backend runs.

Every backend goes through ``normalize`` then ``check`` here (``checked_graph``), so they accept
and refuse the same pipelines. The passes, in order:

1. expand executable stages     pipelines the SDK fused itself (pre_optimize=all)
2. unlift                       combines the SDK lifted itself become CombinePerKey again
3. Reshuffle as a leaf          backends that redistribute elements themselves (Spark)
4. lift                         CombinePerKey -> precombine, GroupByKey, merge, extract
5. expand splittable DoFns      a splittable ParDo -> its three SDK parts
6. transcode                    inputs of runner transforms that need another coder the runner
                                cannot re-encode to get an SDK transform that does
7. readable window coders       the runner reads every window (element coders stay the SDK's:
                                graph/opaque_coders.py, graph/descriptors.py)

then the capability check (graph/check.py), which names everything unsupported at once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from apache_beam.portability.api import beam_runner_api_pb2

from reference_runner.graph import check, lifting, opaque_coders, reshuffle, sdf, transcode, unfuse
from reference_runner.graph.pipeline import PipelineGraph


@dataclass(frozen=True)
class Profile:
    """What a backend runs, as the front end needs to know it."""

    name: str  # how an error names the backend
    reshuffle_leaf: bool  # runs Reshuffle itself instead of its expansion


REFERENCE = Profile("the reference runner", reshuffle_leaf=False)
SPARK = Profile("the Spark backend", reshuffle_leaf=True)


# Pipeline proto -> Pipeline proto: a copy, or the input unchanged (a pass never edits its input)
PipelinePass = Callable[[beam_runner_api_pb2.Pipeline], beam_runner_api_pb2.Pipeline]


@dataclass(frozen=True)
class Pass:
    name: str
    apply: PipelinePass
    when: Literal["always", "lift", "reshuffle_leaf"] = "always"  # "lift": only when lifting


PASSES = [
    Pass("expand executable stages", unfuse.expand_executable_stages),
    Pass("unlift SDK-lifted combines", lifting.unlift, when="lift"),
    Pass("Reshuffle as a leaf", reshuffle.replace, when="reshuffle_leaf"),
    Pass("lift CombinePerKey", lifting.lift, when="lift"),
    Pass("expand splittable DoFns", sdf.expand),
    Pass("transcode what the runner cannot in the SDK", transcode.transcode),
    Pass("readable window coders", opaque_coders.readable_windows),
]


def normalize(proto: beam_runner_api_pb2.Pipeline, profile: Profile, lift: bool = True) -> beam_runner_api_pb2.Pipeline:
    """Every pass of PASSES that applies, in order (the input is not changed)."""
    enabled = {"always": True, "lift": lift, "reshuffle_leaf": profile.reshuffle_leaf}
    for p in PASSES:
        if enabled[p.when]:
            proto = p.apply(proto)
    return proto


def checked_graph(
    proto: beam_runner_api_pb2.Pipeline, profile: Profile, lift: bool = True, environments: bool = False
) -> PipelineGraph:
    """The normalized pipeline's graph, checked (UnsupportedPipeline names every problem).
    ``environments``: judge the environments too (the in-process runner embeds them all)."""
    graph = PipelineGraph(normalize(proto, profile, lift))
    check.check(graph, environments=environments, backend=profile.name)
    return graph
