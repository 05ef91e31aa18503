"""One attempt at one bundle: feed its input to the worker, acting at chosen positions.

The feed is read by the SDK harness element range by element range, in the harness's own
thread; between two ranges the runner may send a ProcessBundleSplitRequest (the harness then
stops early and reports where the residual begins) or fail the attempt on purpose, after
collecting the metrics the bundle reported so far.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from apache_beam.portability.api import beam_fn_api_pb2

from reference_runner.bundling import Split
from reference_runner.worker.embedded import BundleFailed, EmbeddedWorker


class InjectedFault(RuntimeError):
    """Raised inside the worker's read loop to fail an attempt on purpose."""


class AttemptFailed(RuntimeError):
    def __init__(self, message: str, instruction_id: str, injected: bool, metrics: list, worker_lost: bool = False):
        super().__init__(message)
        self.worker_lost = worker_lost  # BundleFailed.worker_lost
        self.instruction_id = instruction_id
        self.injected = injected
        self.metrics = metrics  # what the attempt had reported before it failed


@dataclass
class Attempt:
    instruction_id: str
    data: dict  # output transform -> bytes
    timers: dict  # (transform, timer family) -> bytes
    response: beam_fn_api_pb2.ProcessBundleResponse
    first_residual: int | None = None  # a channel split handed elements [first_residual:] back
    split_residuals: list = field(default_factory=list)  # DelayedBundleApplications of a split


def run(
    worker: EmbeddedWorker,
    descriptor_id: str,
    input_transform: str,
    elements: list[bytes],
    split: Split | None = None,
    fault_at: int | None = None,
    timers: dict | None = None,
) -> Attempt:
    """``timers``: {(transform, timer family): encoded timers} to fire after the elements."""
    instruction_id = worker.new_instruction_id()
    progress = _Progress(len(elements))

    def do_split():
        if progress.split_done:
            return
        progress.split_done = True
        assert split is not None  # only called when splitting
        response = worker.split(instruction_id, input_transform, split.fraction, len(elements))
        progress.residuals = list(response.residual_roots)
        for channel in response.channel_splits:
            if channel.transform_id == input_transform:
                progress.first_residual = channel.first_residual_element
                progress.end = min(progress.end, channel.first_residual_element)

    if split and split.after_output:
        outputs = iter(range(1, split.at + 1))
        worker.channel.on_output(instruction_id, lambda: next(outputs, None) == split.at and do_split())

    def feed():
        position = 0
        cuts = sorted(
            {p for p in (None if not split or split.after_output else split.at, fault_at) if p is not None}
            | {len(elements)}
        )
        for cut in cuts:
            cut = min(cut, progress.end)
            if cut > position:
                yield beam_fn_api_pb2.Elements.Data(
                    instruction_id=instruction_id, transform_id=input_transform, data=b"".join(elements[position:cut])
                )
                position = cut
            if split and not split.after_output and cut == split.at:
                do_split()
            if fault_at is not None and cut >= min(fault_at, progress.end):
                progress.metrics = worker.progress(instruction_id)
                raise InjectedFault(f"fault injected by the reference runner before element {cut} of {len(elements)}")
            if position >= progress.end:
                break
        for (transform_id, family), encoded in (timers or {}).items():
            yield beam_fn_api_pb2.Elements.Timers(
                instruction_id=instruction_id, transform_id=transform_id, timer_family_id=family, timers=encoded
            )

    try:
        data, timer_bytes, response = worker.process_bundle(instruction_id, descriptor_id, feed())
    except BundleFailed as e:
        # A remote worker finishes the attempt's partial input and reports it; in process, the
        # progress taken just before the fault is what the attempt did.
        metrics = getattr(e, "metrics", None) or progress.metrics
        raise AttemptFailed(
            str(e), instruction_id, isinstance(e.cause, InjectedFault), metrics, e.worker_lost
        ) from None
    return Attempt(instruction_id, data, timer_bytes, response, progress.first_residual, progress.residuals)


@dataclass
class _Progress:
    """What the runner learned while the attempt ran."""

    end: int  # the bundle reads elements [0, end)
    split_done: bool = False
    first_residual: int | None = None
    residuals: list = field(default_factory=list)
    metrics: list = field(default_factory=list)
