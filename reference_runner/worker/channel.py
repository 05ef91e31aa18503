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
        self._output_hooks: dict[str, object] = {}

    def on_output(self, instruction_id: str, hook) -> None:
        """Call ``hook()`` in the worker's thread each time the bundle has written an output element."""
        self._output_hooks[instruction_id] = hook

    def feed(self, instruction_id: str, messages: Iterable) -> None:
        """``messages``: Elements.Data / Elements.Timers the bundle reads, produced lazily."""
        self._feeds[instruction_id] = messages

    def take(self, instruction_id: str) -> tuple[dict[str, bytes], dict[tuple[str, str], bytes]]:
        """What the bundle wrote: bytes per output transform, and per (transform, timer family)."""
        self._feeds.pop(instruction_id, None)
        self._output_hooks.pop(instruction_id, None)
        data = {k: bytes(v) for k, v in self._data.pop(instruction_id, {}).items()}
        timers = {k: bytes(v) for k, v in self._timers.pop(instruction_id, {}).items()}
        return data, timers

    # -- the SDK's side -------------------------------------------------------------------
    def input_elements(self, instruction_id, expected_inputs, abort_callback=None):
        yield from self._feeds.pop(instruction_id, ())

    def output_stream(self, instruction_id, transform_id):
        sink = self._data.setdefault(instruction_id, {}).setdefault(transform_id, bytearray())
        hook = self._output_hooks.get(instruction_id)
        if hook is not None:
            return _WatchedStream(sink, hook)
        return data_plane.ClosableOutputStream.create(sink.extend, sink.extend, 0)

    def output_timer_stream(self, instruction_id, transform_id, timer_family_id):
        sink = self._timers.setdefault(instruction_id, {}).setdefault((transform_id, timer_family_id), bytearray())
        return data_plane.ClosableOutputStream.create(sink.extend, sink.extend, 0)

    def close(self):
        pass


class _WatchedStream(data_plane.SizeBasedBufferingClosableOutputStream):
    """The SDK calls maybe_flush after every element it writes: the runner's cue to act mid-element."""

    def __init__(self, sink: bytearray, hook):
        super().__init__(sink.extend, sink.extend)
        self._hook = hook

    def maybe_flush(self):
        super().maybe_flush()
        self._hook()


class BundleChannelFactory(data_plane.DataChannelFactory):
    def __init__(self, channel: BundleChannel):
        self._channel = channel

    def create_data_channel(self, remote_grpc_port, data_stream_id=None):
        return self._channel

    def create_data_channel_from_url(self, url, data_stream_id=None):
        return self._channel

    def close(self):
        pass
