"""The runner's end of the embedded worker's data plane.

Inputs are not queued up front: each bundle reads from a feed the runner hands over, so the
runner can act between two elements while the bundle runs (send a split request, inject a
fault). Outputs and timers the bundle writes are collected per transform until the runner
takes them.
"""
from __future__ import annotations

from collections.abc import Iterable

from apache_beam.runners.worker import data_plane


class BundleChannel(data_plane.DataChannel):
    def __init__(self):
        self._feeds: dict[str, Iterable] = {}
        self._data: dict[str, dict[str, bytearray]] = {}
        self._timers: dict[str, dict[tuple[str, str], bytearray]] = {}

    def feed(self, instruction_id: str, messages: Iterable) -> None:
        """``messages``: Elements.Data / Elements.Timers the bundle reads, produced lazily."""
        self._feeds[instruction_id] = messages

    def take(self, instruction_id: str) -> tuple[dict[str, bytes], dict[tuple[str, str], bytes]]:
        """What the bundle wrote: bytes per output transform, and per (transform, timer family)."""
        self._feeds.pop(instruction_id, None)
        data = {k: bytes(v) for k, v in self._data.pop(instruction_id, {}).items()}
        timers = {k: bytes(v) for k, v in self._timers.pop(instruction_id, {}).items()}
        return data, timers

    # -- the SDK's side -------------------------------------------------------------------
    def input_elements(self, instruction_id, expected_inputs, abort_callback=None):
        yield from self._feeds.pop(instruction_id, ())

    def output_stream(self, instruction_id, transform_id):
        sink = self._data.setdefault(instruction_id, {}).setdefault(transform_id, bytearray())
        return data_plane.ClosableOutputStream.create(sink.extend, sink.extend, 0)

    def output_timer_stream(self, instruction_id, transform_id, timer_family_id):
        sink = self._timers.setdefault(instruction_id, {}).setdefault((transform_id, timer_family_id), bytearray())
        return data_plane.ClosableOutputStream.create(sink.extend, sink.extend, 0)

    def close(self):
        pass


class BundleChannelFactory(data_plane.DataChannelFactory):
    def __init__(self, channel: BundleChannel):
        self._channel = channel

    def create_data_channel(self, remote_grpc_port, data_stream_id=None):
        return self._channel

    def create_data_channel_from_url(self, url, data_stream_id=None):
        return self._channel

    def close(self):
        pass
