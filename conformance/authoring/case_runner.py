"""How a case runs its pipelines on a target: the ``runner`` fixture every case takes (CaseRunner),
what a finished job left behind (RunResult), and how a case fails (CaseFailure)."""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import apache_beam as beam
import pytest
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.portability.api import beam_runner_api_pb2

from conformance.authoring import checks, shapes, streams
from conformance.authoring.case_errors import CaseDefinitionError
from conformance.capabilities import (
    DECODE_FAILURE_MARKERS,
    METRICS_REPORTING,
    TEST_STREAM,
    TEST_STREAM_PYTHON_ONLY,
    TEST_STREAM_URN,
)

if TYPE_CHECKING:
    from conformance.targets import Target


class CaseFailure(AssertionError):
    """A case failed: wrong output, a failed job, or checks that never ran.

    ``cross_cutting`` names the one property every deviation lies in (capabilities.CROSS_CUTTING),
    when there is one: the matrix then counts the failure under that
    property's own capability (capabilities.CROSS_CUTTING) and the case's own row under
    ``judged``: True when everything else the case checks was checked and held, False when the
    case could not get that far (no metrics to read)."""

    def __init__(self, message: str, cross_cutting: str | None = None, judged: bool = True, summary: str = ""):
        super().__init__(message)
        self.cross_cutting = cross_cutting
        self.judged = judged
        # the one line pytest's short summary shows (empty: the message's first line)
        self.summary = summary


@dataclass
class RunResult:
    """What a finished job left behind: its state and its metrics.

    ``transform_names`` maps the ids of the pipeline proto's transforms to their full names. The
    model does not fix how a runner names the step of a metric: the Fn API labels a metric with the
    id of its transform in the pipeline proto (MonitoringInfo label PTRANSFORM), which some runners
    report as it is and others translate back to the transform's full name. ``step_name`` reads
    either as the full name."""

    state: str
    metrics: dict
    transform_names: dict[str, str] = field(default_factory=dict)
    # where transform_names comes from when it is first read (None: transform_names as given).
    # A case rarely reads it, and writing a pipeline's proto is a tenth of a small case's cost.
    proto_of: Callable[[], beam_runner_api_pb2.Pipeline | None] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self._names_read = self.proto_of is None

    def step_name(self, reported: str | None) -> str | None:
        """The full name of the transform a metric's reported step identifies (the reported text
        itself when it is no transform id of the pipeline; None when the runner gave none)."""
        if reported is None:
            return None
        if not self._names_read and self.proto_of is not None:
            self.transform_names, self._names_read = _transform_names(self.proto_of()), True
        return self.transform_names.get(reported, reported)

    def _query(self, kind: str, namespace: str | None, name: str):
        return [
            m
            for m in self.metrics.get(kind, ())
            if m.key.metric.name == name and (namespace is None or m.key.metric.namespace == namespace)
        ]

    def metric(self, kind: str, name: str, namespace: str | None = None, committed: bool = False):
        """Sum a metric over steps: attempted by default (falls back to committed
        when the runner reports only that); ``committed=True`` reads committed values."""
        results = self._query(kind, namespace, name)
        if not results and not any(self.metrics.values()):
            raise CaseFailure(
                f"the runner reported no metrics at all, so the case cannot read its {kind[:-1]} {name!r}",
                cross_cutting=METRICS_REPORTING,
                judged=False,
            )
        if not results:
            raise CaseFailure(
                f"the runner reported no {kind[:-1]} named {name!r}; it reported: "
                f"{sorted({m.key.metric.name for m in self.metrics.get(kind, ())})}"
            )
        values = []
        for m in results:
            value = m.committed if committed else (m.attempted if m.attempted is not None else m.committed)
            if value is None:
                raise CaseFailure(
                    f"the runner reported {name!r} without a {'committed' if committed else 'attempted'} value"
                )
            values.append(value)
        return values

    def counter(self, name: str, namespace: str | None = None, committed: bool = False) -> int:
        return sum(self.metric("counters", name, namespace, committed))

    def distribution(self, name: str, namespace: str | None = None, committed: bool = False):
        """(sum, count, min, max) over every step that reported it."""
        parts = self.metric("distributions", name, namespace, committed)
        return (
            sum(d.sum for d in parts),
            sum(d.count for d in parts),
            min(d.min for d in parts),
            max(d.max for d in parts),
        )

    def gauge(self, name: str, namespace: str | None = None, committed: bool = False):
        parts = self.metric("gauges", name, namespace, committed)
        return max(parts, key=lambda g: g.timestamp).value

    def string_set(self, name: str, namespace: str | None = None, committed: bool = False) -> set:
        """The union over every step that reported it."""
        return set().union(*self.metric("string_sets", name, namespace, committed))

    def bounded_trie(self, name: str, namespace: str | None = None, committed: bool = False) -> set:
        """The paths, each a tuple of segments then a truncated flag, over every step that reported it."""
        return set().union(*(t.get_result() for t in self.metric("bounded_tries", name, namespace, committed)))


_DIFF = re.compile(re.escape(checks.DIFF_BEGIN) + r"\n(.*?)\n" + re.escape(checks.DIFF_END), re.S)


def _tail(text: str, lines: int = 25) -> str:
    """The end of a runner's error text, where a traceback names the error; when that is cut, the
    first line too, which is where a job server's error (a Java exception followed by the pipeline
    proto it refused) names it."""
    all_lines = text.strip().splitlines()
    kept = all_lines if len(all_lines) <= lines else [all_lines[0], "..."] + all_lines[-(lines - 2) :]
    return "\n".join("    " + line for line in kept)


@dataclass
class PipelineCapture:
    """--capture-pipelines DIR: the Runner API proto of every pipeline a case submits, as the case
    built it (before any --pipeline-shape rewrite), written to DIR/<case id>-<n>.pb (n from 1, in
    the order the case submits them; the case id's slash makes a directory per case module)."""

    directory: Path
    case_id: str
    written: int = 0

    def write(self, proto: beam_runner_api_pb2.Pipeline) -> Path:
        self.written += 1
        # the case id's parts as file names: a parametrized id may hold any character
        name = "/".join(re.sub(r"[^\w.\[\]=,+-]", "_", part).lstrip(".") or "_" for part in self.case_id.split("/"))
        path = self.directory / f"{name}-{self.written}.pb"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(proto.SerializeToString())
        return path


class CaseRunner:
    # True for the runner of a case built into a job shared with other cases (session/batching.py)
    shares_job = False
    """Builds and runs the pipelines of one case on one target."""

    def __init__(self, target: Target, streaming: bool, capture: PipelineCapture | None = None):
        self.target = target
        self.streaming = streaming
        self.capture = capture
        # checks whose output differed only in a cross-cutting property: check id -> (property,
        # text). The case fails with them once its body has checked everything else (finish()).
        self.deviations: dict[str, tuple[str, str]] = {}
        # where the case ran the pipeline of each such check (_call_site): finish() fails the case
        # from there, as the case's body has returned by then
        self.deviation_sites: dict[str, types.TracebackType] = {}
        # where the case called run(), in order: a failure found once the body returned (a batch's
        # verdict, CaseRunner.finish) is shown from the case's own line
        self.run_sites: list[types.TracebackType] = []

    def last_run_site(self) -> types.TracebackType | None:
        """Where the case last called run() (None if it never did)."""
        return self.run_sites[-1] if self.run_sites else None

    def pipeline(self, *extra_args: str) -> beam.Pipeline:
        options = PipelineOptions(self.target.option_args(self.streaming) + list(extra_args))
        return beam.Pipeline(runner=self.target.beam_runner(), options=options)

    def _submitted(self, pipeline: beam.Pipeline) -> beam_runner_api_pb2.Pipeline | None:
        """With --capture-pipelines, the pipeline's Runner API proto as the case built it, written out
        (None when the SDK cannot write it: running it then fails with the SDK's own error). Without,
        None: it is written after the run, only when read (the transform names of a metric, the
        TestStreams a failure may name); the SDK names its transforms alike every time it writes it."""
        if self.capture is None:
            return None
        proto = _proto_of(pipeline)
        if proto is not None:
            self.capture.write(proto)
        return proto

    def _check_built(self, pipeline: beam.Pipeline) -> None:
        """A TestStream in a case the session did not find streaming is the kit's miss, not the
        runner's failure: say so rather than run it without the streaming option."""
        if self.streaming:
            return
        from apache_beam.testing.test_stream import TestStream as BeamTestStream

        found = []

        class _Streams(beam.pipeline.PipelineVisitor):
            def visit_transform(self, node) -> None:
                if isinstance(node.transform, BeamTestStream):
                    found.append(node.full_label)

        pipeline.visit(_Streams())
        if found:
            raise CaseDefinitionError(
                f"the case builds a TestStream ({found[0]}) but the session did not find it streaming: "
                "conformance/session/streaming_cases.py cannot see the TestStream from the case's code "
                "(built by a helper outside the kit and the case's package?); name TestStream in the case"
            )

    def _execute(self, pipeline: beam.Pipeline, shape: str | None = None):
        shape = shape or self.target.settings.pipeline_shape
        try:
            result = self.target.run_shaped(pipeline, shape) if shape else pipeline.run()
        except shapes.ShapeNotApplicable as e:
            pytest.skip(str(e))
        try:
            state = result.wait_until_finish()
        except BaseException:
            _cancel_quietly(result)
            raise
        return result, state

    def run(self, pipeline: beam.Pipeline, shape: str | None = None) -> RunResult:
        """Run to completion; raise CaseFailure with a readable diff if anything is off.
        ``shape``: submit the pipeline as the SDK pre-optimizes it (conformance/authoring/shapes.py)."""
        __tracebackhide__ = True
        site = _call_site()
        self.run_sites.append(site)
        self._check_built(pipeline)
        proto = self._submitted(pipeline)
        try:
            result, state = self._execute(pipeline, shape)
        except Exception as e:  # the job failed: show our diff if a check failed, else the runner's text
            text = f"{type(e).__name__}: {e}"
            diffs = _DIFF.findall(text)
            self._collect_deviations(checks.checks_of(pipeline), {}, site)
            if diffs:
                raise self._output_differs(diffs) from None
            note = self.target.explain_failure(text)
            note = f"\n({note})" if note else ""
            message = f"the job failed on {self.target.name}:\n{_tail(text)}{note}"
            proto = proto or _proto_of(pipeline)
            if refuses_test_stream(text, pipeline, proto):
                # refused for the TestStream, not for what the case is about: not judged here
                raise CaseFailure(message, cross_cutting=TEST_STREAM, judged=False) from None
            undecoded = undecodable_test_stream(text, proto)
            if undecoded is not None:
                urns, reason = undecoded
                raise CaseFailure(
                    f"the runner could not decode the case's TestStream events (Python-only coder "
                    f"{', '.join(urns)}: {reason}); {message}",
                    cross_cutting=TEST_STREAM_PYTHON_ONLY,
                    judged=False,
                ) from None
            raise CaseFailure(message) from None
        state = str(state)
        if "DONE" not in state:
            raise CaseFailure(f"the job finished in state {state}, not DONE")
        metrics = all_metrics(result)
        self._collect_deviations(checks.checks_of(pipeline), metrics, site)
        self._confirm(checks.checks_of(pipeline), metrics)
        return RunResult(state, metrics, proto_of=lambda: proto or _proto_of(pipeline))

    def judge_shared(self, pipeline: beam.Pipeline, metrics: dict) -> None:
        """The checks of ``pipeline`` after a job it shared with other cases finished DONE: their
        failures were recorded in this process (checks.share_job), not raised; fail the same way
        a job of its own would have."""
        __tracebackhide__ = True
        check_ids = checks.checks_of(pipeline)
        self._collect_deviations(check_ids, metrics)
        diffs = [d for d in map(checks.failure_in_process, check_ids) if d is not None]
        if diffs:
            raise self._output_differs(diffs)
        self._confirm(check_ids, metrics)

    def _output_differs(self, diffs: list[str]) -> CaseFailure:
        shown = list(dict.fromkeys(diffs))
        return CaseFailure(
            "output differs from the Beam model:\n" + "\n".join(shown) + self._deviation_note(),
            summary=shown[0].strip().splitlines()[0] if shown and shown[0].strip() else "",
        )

    def _collect_deviations(self, check_ids: list[str], metrics: dict, site: types.TracebackType | None = None) -> None:
        """The checks of this pipeline that deviated only in a cross-cutting property, from the
        runner's metrics (the summary line) or, better, from this process (the whole diff); ``site``:
        where the case ran the pipeline."""
        for m in metrics.get("counters", ()):
            if m.key.metric.namespace == checks.DEVIATION_NAMESPACE and ((m.committed or 0) + (m.attempted or 0)) > 0:
                check_id, prop, summary = (m.key.metric.name.split(checks.DEVIATION_SEPARATOR, 2) + ["", ""])[:3]
                if check_id in check_ids:
                    self.deviations.setdefault(check_id, (prop, summary))
        for check_id in check_ids:
            found = checks.deviation_in_process(check_id)
            if found is not None:
                self.deviations[check_id] = found
        if site is not None:
            for check_id in self.deviations.keys() & set(check_ids):
                self.deviation_sites.setdefault(check_id, site)

    def _deviation_note(self) -> str:
        if not self.deviations:
            return ""
        properties = sorted({p for p, _ in self.deviations.values()})
        return f"\n(other checks of the case deviated only in {', '.join(properties)})"

    def finish(self) -> None:
        """After the case's body passed: fail it if any check deviated in a cross-cutting property."""
        __tracebackhide__ = True
        if not self.deviations:
            return
        properties = sorted({prop for prop, _ in self.deviations.values()})
        texts = "\n".join(dict.fromkeys(text for _, text in self.deviations.values()))
        failure = CaseFailure(
            f"output differs from the Beam model only in {' and '.join(properties)} (counted under that "
            f"property's own capability; everything else the case checks holds):\n{texts}",
            cross_cutting=properties[0] if len(properties) == 1 else None,
        )
        # shown from the line of the case that ran the first deviating pipeline
        site = next((self.deviation_sites[c] for c in self.deviations if c in self.deviation_sites), None)
        raise failure.with_traceback(site)

    def shaped(self, shape: str) -> CaseRunner:
        """This runner, submitting every pipeline in ``shape``."""
        shaped = _ShapedCaseRunner(self.target, self.streaming, shape, self.capture)
        shaped.deviations = self.deviations  # one case, one account of its deviations
        shaped.deviation_sites = self.deviation_sites
        shaped.run_sites = self.run_sites
        return shaped

    def run_expecting_failure(self, pipeline: beam.Pipeline, match: str) -> str:
        """Run a pipeline that must fail; its error text must contain ``match``."""
        __tracebackhide__ = True
        if self.capture is not None:  # nothing else here reads the proto: write it only when asked
            self._submitted(pipeline)
        try:
            result, state = self._execute(pipeline)
        except Exception as e:
            text = f"{type(e).__name__}: {e}"
            if match not in text:
                raise CaseFailure(
                    f"the job failed as expected, but its error does not mention {match!r}:\n{_tail(text)}"
                ) from None
            return text
        raise CaseFailure(
            f"the job should have failed with an error mentioning {match!r}, but it finished in state {state}"
        )

    def _confirm(self, check_ids: list[str], metrics: dict) -> None:
        __tracebackhide__ = True
        reported = reported_checks(metrics)
        unconfirmed = [
            c
            for c in check_ids
            if c not in reported and c not in self.deviations and not checks.confirmed_in_process(c)
        ]
        if not unconfirmed:
            return
        if not reported and not self.target.in_process_worker and self.target.settings.trust_unconfirmed_checks:
            return
        raise CaseFailure(
            f"the job finished, but {len(unconfirmed)} of {len(check_ids)} output check(s) never ran: "
            f"{unconfirmed}. The runner skipped part of the pipeline or dropped its output. "
            "(A runner that reports no metrics and runs workers out of process cannot confirm "
            "checks; pass --trust-unconfirmed-checks to accept that.)"
        )


class _ShapedCaseRunner(CaseRunner):
    def __init__(self, target: Target, streaming: bool, shape: str, capture: PipelineCapture | None):
        super().__init__(target, streaming, capture)
        self.shape = shapes.check_shape(shape)

    def _execute(self, pipeline: beam.Pipeline, shape: str | None = None):
        return super()._execute(pipeline, shape or self.shape)


def _call_site() -> types.TracebackType:
    """The frame that called into this module (the case, or a helper of its own) as a traceback
    entry at the line it is on now. A failure found after the case's body returned (finish()) would
    otherwise show no line of the case: pytest starts a failure's traceback at the case's frame."""
    frame = sys._getframe(1)
    while frame.f_back is not None and frame.f_globals.get("__name__") == __name__:
        frame = frame.f_back
    return types.TracebackType(None, frame, frame.f_lasti, frame.f_lineno)


def _has_test_stream(pipeline: beam.Pipeline) -> bool:
    from apache_beam.pipeline import PipelineVisitor
    from apache_beam.testing.test_stream import TestStream

    class _Finder(PipelineVisitor):
        found = False

        def visit_transform(self, node):
            self.found = self.found or isinstance(node.transform, TestStream)

    finder = _Finder()
    pipeline.visit(finder)
    return finder.found


def refuses_test_stream(
    error_text: str, pipeline: beam.Pipeline, proto: beam_runner_api_pb2.Pipeline | None = None
) -> bool:
    """Did the job fail refusing the pipeline's TestStream? Its error names the TestStream: by its URN,
    or by the TestStream transform's id in the submitted pipeline (Beam's Spark job server: its fuser
    accepts no root but an Impulse or a Read, and names the transform it refuses). ``proto``: the
    pipeline's proto, if it was written already."""
    if not _has_test_stream(pipeline):
        return False
    if TEST_STREAM_URN in error_text:
        return True
    if proto is None:
        try:
            proto = pipeline.to_runner_api()
        except Exception:
            return False
    transforms = proto.components.transforms
    ids = [tid for tid, t in transforms.items() if t.spec.urn == TEST_STREAM_URN]
    # the whole id, not a prefix of a longer one (..._TestStream_2 is not ..._TestStream_21)
    return any(re.search(re.escape(tid) + r"(?![\w-])", error_text) for tid in ids)


def undecodable_test_stream(
    error_text: str, proto: beam_runner_api_pb2.Pipeline | None
) -> tuple[list[str], str] | None:
    """Did the job fail because the runner could not decode the events of a TestStream the case
    declared python_only? Its error names a non-standard coder URN of that TestStream's coder tree,
    or one of capabilities.DECODE_FAILURE_MARKERS. Returns those URNs and the case's declared
    reason; None otherwise (and for TestStreams of standard coders: a runner that fails on one of
    those has no excuse)."""
    if proto is None:
        return None
    components = proto.components
    for transform in components.transforms.values():
        declared = transform.annotations.get(streams.PYTHON_ONLY_ANNOTATION)
        if transform.spec.urn != TEST_STREAM_URN or declared is None:
            continue
        coder_id = beam_runner_api_pb2.TestStreamPayload.FromString(transform.spec.payload).coder_id
        urns = [u for u in streams.coder_urns(coder_id, components) if u not in streams.STANDARD_CODER_URNS]
        if any(u in error_text for u in urns) or any(m in error_text for m in DECODE_FAILURE_MARKERS):
            return urns, declared.decode("utf-8")
    return None


def _proto_of(pipeline: beam.Pipeline) -> beam_runner_api_pb2.Pipeline | None:
    try:
        return pipeline.to_runner_api()
    except Exception:
        return None


def _transform_names(proto: beam_runner_api_pb2.Pipeline | None) -> dict[str, str]:
    """Transform id -> full name in the pipeline's proto (the ids a runner saw: the SDK numbers its
    transforms in the same traversal every time it writes the proto). Empty if it could not be written."""
    if proto is None:
        return {}
    return {tid: t.unique_name for tid, t in proto.components.transforms.items() if t.unique_name}


def reported_checks(metrics: dict) -> set[str]:
    """The ids of the checks whose passing the runner's metrics report."""
    return {
        m.key.metric.name
        for m in metrics["counters"]
        if m.key.metric.namespace == checks.CONFIRM_NAMESPACE and ((m.committed or 0) > 0 or (m.attempted or 0) > 0)
    }


def all_metrics(result) -> dict:
    try:
        return result.metrics().query(MetricsFilter())
    except Exception:  # a runner without metrics support: report none
        return {"counters": [], "distributions": [], "gauges": [], "string_sets": [], "bounded_tries": []}


def _cancel_quietly(result) -> None:
    try:
        result.cancel()
    except Exception:
        pass
