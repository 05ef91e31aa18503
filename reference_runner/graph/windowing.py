"""What a windowing strategy asks of a GroupByKey, as plain values both backends use."""

from __future__ import annotations

from apache_beam.portability.api import beam_runner_api_pb2

from reference_runner.engine import windows
from reference_runner.graph import urns

_COMBINERS = {
    beam_runner_api_pb2.OutputTime.END_OF_WINDOW: windows.END_OF_WINDOW,
    beam_runner_api_pb2.OutputTime.EARLIEST_IN_PANE: windows.EARLIEST,
    beam_runner_api_pb2.OutputTime.LATEST_IN_PANE: windows.LATEST,
}


def timestamp_combiner(ws: beam_runner_api_pb2.WindowingStrategy) -> str:
    return _COMBINERS.get(ws.output_time, windows.END_OF_WINDOW)


def merged_in_sdk(ws: beam_runner_api_pb2.WindowingStrategy) -> bool:
    """A merging WindowFn other than sessions: the SDK's merge_windows transform merges it."""
    return ws.merge_status == beam_runner_api_pb2.MergeStatus.NEEDS_MERGE and ws.window_fn.urn != urns.SESSION_WINDOWS


def merging(ws: beam_runner_api_pb2.WindowingStrategy) -> bool:
    return ws.window_fn.urn == urns.SESSION_WINDOWS or merged_in_sdk(ws)


def empty_on_time_pane(ws: beam_runner_api_pb2.WindowingStrategy) -> bool:
    """OnTimeBehavior: is the on-time pane emitted when nothing arrived since the last pane?
    (FIRE_ALWAYS, or unspecified: yes; FIRE_IF_NONEMPTY: no.)"""
    return ws.on_time_behavior != beam_runner_api_pb2.OnTimeBehavior.FIRE_IF_NONEMPTY


def empty_final_pane(ws: beam_runner_api_pb2.WindowingStrategy) -> bool:
    """ClosingBehavior: is the final pane (trigger finished, or the window's garbage collection)
    emitted when nothing arrived since the last pane? (EMIT_ALWAYS, or unspecified: yes;
    EMIT_IF_NONEMPTY: no.)"""
    return ws.closing_behavior != beam_runner_api_pb2.ClosingBehavior.EMIT_IF_NONEMPTY
