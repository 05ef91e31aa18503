"""Encoded elements on the wire: splitting data streams, and the parts GroupByKey needs."""
from __future__ import annotations

from apache_beam.coders import coders
from apache_beam.coders.coder_impl import create_InputStream
from apache_beam.runners import pipeline_context
from apache_beam.transforms import window as beam_window
from apache_beam.utils import windowed_value
from apache_beam.utils.timestamp import Timestamp

from reference_runner.engine import windows as engine_windows

_TIMING = {"EARLY": windowed_value.PaneInfoTiming.EARLY, "ON_TIME": windowed_value.PaneInfoTiming.ON_TIME,
           "LATE": windowed_value.PaneInfoTiming.LATE}


class Coders:
    """Beam coder objects for the coder ids of one pipeline."""

    def __init__(self, components):
        self._context = pipeline_context.PipelineContext(components)
        self.components = components

    def coder(self, coder_id: str) -> coders.Coder:
        return self._context.coders[coder_id]

    def windowed(self, pcoll_id: str) -> coders.WindowedValueCoder:
        pcoll = self.components.pcollections[pcoll_id]
        ws = self.components.windowing_strategies[pcoll.windowing_strategy_id]
        return coders.WindowedValueCoder(self.coder(pcoll.coder_id), self.coder(ws.window_coder_id))

    def window_coder(self, pcoll_id: str) -> coders.Coder:
        pcoll = self.components.pcollections[pcoll_id]
        return self.coder(self.components.windowing_strategies[pcoll.windowing_strategy_id].window_coder_id)


def split_elements(impl, data: bytes) -> list[bytes]:
    """A data stream -> one byte string per element (decoded only to find the boundaries)."""
    out, stream, total = [], create_InputStream(data), len(data)
    start = 0
    while stream.size() > 0:
        impl.decode_from_stream(stream, True)
        end = total - stream.size()
        out.append(data[start:end])
        start = end
    return out


# GlobalWindow() recomputes its end from a proto constant on every call: keep one
_BEAM_GLOBAL = beam_window.GlobalWindow()
_ONLY_GLOBAL = (engine_windows.GLOBAL,)


def to_engine_window(w, window_impl):
    if isinstance(w, beam_window.GlobalWindow):
        return engine_windows.GLOBAL
    if isinstance(w, beam_window.IntervalWindow):
        return engine_windows.Interval(w.start.micros, w.end.micros)
    return engine_windows.OpaqueWindow(encode_nested(window_impl, w), w.max_timestamp().micros)


def from_engine_window(w, window_impl):
    if w is engine_windows.GLOBAL:
        return _BEAM_GLOBAL
    if isinstance(w, engine_windows.Interval):
        return beam_window.IntervalWindow(Timestamp(micros=w.start), Timestamp(micros=w.end))
    return window_impl.decode_from_stream(create_InputStream(w.encoded), True)


def encode_nested(impl, value) -> bytes:
    return impl.encode_nested(value)


class GroupCodec:
    """Reads GroupByKey input and writes its output for the engine (keys grouped by encoding)."""

    def __init__(self, input_coder: coders.WindowedValueCoder, output_coder: coders.WindowedValueCoder):
        self._in = input_coder.get_impl()
        self._key = input_coder.key_coder().get_impl()
        self._out = output_coder.get_impl()
        self._window = input_coder.window_coder.get_impl()
        self._panes: dict = {}            # engine Pane -> the SDK's PaneInfo
        self._last_timestamp = (None, None)

    def split(self, element: bytes):
        wv = self._in.decode_nested(element)
        key, value = wv.value
        ws = wv.windows
        if len(ws) == 1 and ws[0] is _BEAM_GLOBAL:  # the common case, without a conversion
            windows = _ONLY_GLOBAL
        else:
            windows = [to_engine_window(w, self._window) for w in ws]
        return self._key.encode_nested(key), key, value, wv.timestamp.micros, windows

    def build(self, key, values, timestamp: int, window, pane) -> bytes:
        info = self._panes.get(pane)
        if info is None:
            info = self._panes[pane] = windowed_value.PaneInfo(
                pane.is_first, pane.is_last, _TIMING[pane.timing], pane.index, pane.nonspeculative_index)
        if timestamp != self._last_timestamp[0]:  # groups of one window share their timestamp
            self._last_timestamp = (timestamp, Timestamp(micros=timestamp))
        wv = windowed_value.WindowedValue((key, values), self._last_timestamp[1],
                                          (from_engine_window(window, self._window),), info)
        return self._out.encode_nested(wv)


class Transcoder:
    """Re-encodes an element from one windowed-value coder to another."""

    def __init__(self, source: coders.WindowedValueCoder, target: coders.WindowedValueCoder):
        self._source, self._target = source.get_impl(), target.get_impl()

    def __call__(self, element: bytes) -> bytes:
        return encode_nested(self._target, self._source.decode_from_stream(create_InputStream(element), True))


class KeysToBytes:
    """KV(K, V) -> KV(bytes, V), the key replaced by its nested encoding (see graph/lifting.py)."""

    def __init__(self, source: coders.WindowedValueCoder, target: coders.WindowedValueCoder):
        self._source, self._target = source.get_impl(), target.get_impl()
        self._key = source.key_coder().get_impl()

    def __call__(self, element: bytes) -> bytes:
        wv = self._source.decode_from_stream(create_InputStream(element), True)
        key, value = wv.value
        return encode_nested(self._target, wv.with_value((encode_nested(self._key, key), value)))


class KeysFromBytes:
    """KV(bytes, V) -> KV(K, V): the inverse of KeysToBytes."""

    def __init__(self, source: coders.WindowedValueCoder, target: coders.WindowedValueCoder):
        self._source, self._target = source.get_impl(), target.get_impl()
        self._key = target.key_coder().get_impl()

    def __call__(self, element: bytes) -> bytes:
        wv = self._source.decode_from_stream(create_InputStream(element), True)
        key_bytes, value = wv.value
        key = self._key.decode_from_stream(create_InputStream(key_bytes), True)
        return encode_nested(self._target, wv.with_value((key, value)))
