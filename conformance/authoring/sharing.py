"""Pipelines of several cases in one job: what keeps a pipeline from sharing a job, and how the
pipelines of several cases become one.

A case's pipeline shares a job by being grafted, whole, into a batch pipeline under a composite
named after the case: its transforms keep their structure and their own inputs and outputs, so
the job holds independent subgraphs that a correct runner executes exactly as it executes each
alone (the Beam model has no interaction between unconnected parts of a pipeline). What the
session batches, and how a batch's verdicts are read, is conformance/session/batching.py.
"""

from __future__ import annotations

import re

import apache_beam as beam
from apache_beam.pipeline import AppliedPTransform, PipelineVisitor
from apache_beam.runners import pipeline_context
from apache_beam.transforms import ptransform, trigger, userstate
from apache_beam.transforms.timeutil import TimeDomain

from reference_runner.engine import triggers
from reference_runner.graph import trigger_spec

# Pipeline options Beam reads only while a case builds its pipeline (GroupByKey's expand reads
# --allow_unsafe_triggers): a case that sets them builds with them and may still share a job
CONSTRUCTION_ONLY_OPTIONS = frozenset({"--allow_unsafe_triggers"})


class RunsAlone(BaseException):
    """Raised inside a case that is being built for a shared job when the case does something a
    shared job cannot give it (its own options, a pipeline expected to fail, the job's metrics...):
    the case then runs in a job of its own. A BaseException, so a case's own ``except Exception``
    cannot swallow it."""


def alone_reason(pipeline: beam.Pipeline) -> str | None:
    """Why this pipeline cannot share a job, from what it contains; None when it can.

    A TestStream scripts the watermark and processing time of the whole job, and processing time
    (a processing-time trigger or timer) runs on the job's clock: either makes a case's verdict
    depend on what else runs in its job."""
    from apache_beam.options.pipeline_options import StandardOptions

    finder = _Finder(streaming=bool(pipeline.options.view_as(StandardOptions).streaming))
    pipeline.visit(finder)
    return finder.reason


class _Finder(PipelineVisitor):
    def __init__(self, streaming: bool) -> None:
        self.reason: str | None = None
        self.streaming = streaming
        self._seen_windowings: set[int] = set()

    def visit_transform(self, node: AppliedPTransform) -> None:
        from apache_beam.testing.test_stream import TestStream

        if self.reason is not None:
            return
        if isinstance(node.transform, TestStream):
            self.reason = "its TestStream scripts the whole job's watermark and processing time"
        elif isinstance(node.transform, beam.ParDo) and _has_processing_time_timer(node.transform.fn):
            self.reason = "it sets processing-time timers, which run on the job's clock"
        elif self.streaming and isinstance(node.transform, beam.ParDo) and _is_splittable(node.transform.fn):
            self.reason = "its streaming splittable DoFn checkpoints and resumes on the job's clock"

    def visit_value(self, value, producer_node) -> None:
        windowing = getattr(value, "windowing", None) if isinstance(value, beam.PCollection) else None
        if self.reason is not None or windowing is None or id(windowing) in self._seen_windowings:
            return
        self._seen_windowings.add(id(windowing))
        if _fires_on_processing_time(windowing.triggerfn):
            self.reason = "its trigger fires on processing time, which runs on the job's clock"


def _has_processing_time_timer(fn) -> bool:
    try:
        _, timers = userstate.get_dofn_specs(fn)
    except Exception:  # a DoFn Beam cannot inspect runs where it is; its own run says why
        return False
    return any(t.time_domain == TimeDomain.REAL_TIME for t in timers)


def _is_splittable(fn) -> bool:
    from apache_beam.runners.common import DoFnSignature

    try:
        return DoFnSignature(fn).is_splittable_dofn()
    except Exception:  # a DoFn Beam cannot inspect runs where it is; its own run says why
        return False


def _fires_on_processing_time(fn: trigger.TriggerFn) -> bool:
    """Does this trigger, or any trigger inside it, wait for processing time? The model's rule has
    one owner, the reference runner's engine: the trigger goes there as the Runner API gives it."""
    proto = fn.to_runner_api(pipeline_context.PipelineContext())
    try:
        return triggers.waits_for_processing_time(trigger_spec.from_proto(proto))
    except trigger_spec.UnknownTrigger:
        return True  # a trigger kind the runner cannot read: its case runs alone, where it is judged


class _CaseScope(ptransform.PTransform):
    """The composite a case's pipeline is grafted under in a batch pipeline (graft): never applied,
    so it has no expand of its own."""


def scope_label(case_id: str) -> str:
    """The label of a case's composite in a batch pipeline: its case id, a path separator being the
    separator of labels."""
    return re.sub(r"[/\s]+", ".", case_id)


def graft(batch: beam.Pipeline, label: str, case_pipeline: beam.Pipeline) -> None:
    """Move the transforms of ``case_pipeline`` into ``batch`` under a composite named ``label``.

    The case's transforms are renamed ``label/<their name>`` so that names stay unique in the batch.
    A pipeline grafted once may be grafted again into another batch (a failed batch is split): the
    names are always made from the case's own."""
    root = batch._root_transform()  # noqa: SLF001 - Beam's own tree, which to_runner_api walks
    scope = AppliedPTransform(root, _CaseScope(), label, {}, None, {})
    case_root = case_pipeline._root_transform()  # noqa: SLF001
    originals: dict[int, str] = case_pipeline.__dict__.setdefault("_conformance_labels", {})
    for part in case_root.parts:
        part.parent = scope
        _rename(part, label, originals)
    scope.parts = list(case_root.parts)
    root.add_part(scope)


def _rename(node: AppliedPTransform, label: str, originals: dict[int, str]) -> None:
    own = originals.setdefault(id(node), node.full_label)
    node.full_label = f"{label}/{own}"
    for part in node.parts:
        _rename(part, label, originals)
