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
    def __init__(self, message: str, injected: bool, metrics: list):
        super().__init__(message)
        self.injected = injected
        self.metrics = metrics        # what the attempt had reported before it failed


@dataclass
class Attempt:
    instruction_id: str
    data: dict                        # output transform -> bytes
    timers: dict                      # (transform, timer family) -> bytes
    response: beam_fn_api_pb2.ProcessBundleResponse
    first_residual: int | None = None  # a channel split handed elements [first_residual:] back
    split_residuals: list = field(default_factory=list)  # DelayedBundleApplications of a split


def run(worker: EmbeddedWorker, descriptor_id: str, input_transform: str, elements: list[bytes],
        split: Split | None = None, fault_at: int | None = None, timers: list = ()) -> Attempt:
    instruction_id = worker.new_instruction_id()
    outcome = {"first_residual": None, "residuals": [], "metrics": []}

    def feed():
        end, position = len(elements), 0
        cuts = sorted({p for p in (split.at if split else None, fault_at) if p is not None} | {end})
        for cut in cuts:
            cut = min(cut, end)
            if cut > position:
                yield beam_fn_api_pb2.Elements.Data(instruction_id=instruction_id, transform_id=input_transform,
                                                    data=b"".join(elements[position:cut]))
                position = cut
            if split and cut == split.at and outcome["first_residual"] is None:
                end = _split(worker, instruction_id, input_transform, split, len(elements), outcome, end)
            if fault_at is not None and cut >= min(fault_at, end):
                outcome["metrics"] = worker.progress(instruction_id)
                raise InjectedFault(f"fault injected by the reference runner before element {cut} "
                                    f"of {len(elements)}")
            if position >= end:
                break
        yield from timers

    try:
        data, timer_bytes, response = worker.process_bundle(instruction_id, descriptor_id, feed())
    except BundleFailed as e:
        raise AttemptFailed(str(e), isinstance(e.cause, InjectedFault), outcome["metrics"]) from None
    return Attempt(instruction_id, data, timer_bytes, response, outcome["first_residual"], outcome["residuals"])


def _split(worker, instruction_id, input_transform, split: Split, total: int, outcome: dict, end: int) -> int:
    response = worker.split(instruction_id, input_transform, split.fraction, total)
    outcome["residuals"] = list(response.residual_roots)
    for channel in response.channel_splits:
        if channel.transform_id == input_transform:
            outcome["first_residual"] = channel.first_residual_element
            return min(end, channel.first_residual_element)
    return end
