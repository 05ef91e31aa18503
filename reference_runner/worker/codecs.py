"""Encoded elements on the wire: splitting data streams, and the parts GroupByKey needs."""

from __future__ import annotations

from collections.abc import Sequence

from apache_beam.coders import coders
from apache_beam.coders.coder_impl import create_InputStream
from apache_beam.transforms import window as beam_window
from apache_beam.utils import windowed_value
from apache_beam.utils.timestamp import Timestamp

from reference_runner.engine import windows as engine_windows
from reference_runner.graph import recode, urns
from reference_runner.graph.opaque_coders import Readable

_TIMING = {
    "EARLY": windowed_value.PaneInfoTiming.EARLY,
    "ON_TIME": windowed_value.PaneInfoTiming.ON_TIME,
    "LATE": windowed_value.PaneInfoTiming.LATE,
}


class OpaqueCoder(ValueError):
    """The runner was asked to decode with a coder it does not know (the runner reads data with
    graph/opaque_coders.py's readable coders, so this is a runner bug, not the user's)."""


class Coders:
    """The runner's view of one pipeline's coders, built from the Runner API protos alone.

    Only standard coders are ever built here; the content of a length prefix whose coder the
    runner does not know is plain bytes, and a custom window is its max timestamp and opaque
    bytes. So no user class is ever unpickled in the runner, and pipelines of any SDK are read
    the same way. Elements are read with graph/opaque_coders.py's readable coders (``element``,
    ``windowed``): the coders the descriptors name where the SDK hands the runner bytes."""

    def __init__(self, components):
        self.components = components
        self._readable = Readable(components)
        self._built: dict[str, coders.Coder] = {}

    def coder(self, coder_id: str) -> coders.Coder:
        built = self._built.get(coder_id)
        if built is None:
            built = self._built[coder_id] = self._build(coder_id)
        return built

    def element(self, coder_id: str) -> coders.Coder:
        """How the runner reads data of element coder ``coder_id``: its readable version."""
        return self.coder(self._readable.element(coder_id))

    def _build(self, coder_id: str) -> coders.Coder:
        proto = self._readable.coder(coder_id)
        urn, parts = proto.spec.urn, list(proto.component_coder_ids)
        leaf = _LEAVES.get(urn)
        if leaf is not None:
            return leaf()
        if urn == urns.KV_CODER:
            return coders.TupleCoder([self.coder(c) for c in parts])
        if urn == urns.ITERABLE_CODER:
            return coders.IterableCoder(self.coder(parts[0]))
        if urn == urns.LENGTH_PREFIX_CODER:
            inner = self.coder(parts[0]) if self.readable(parts[0]) else coders.BytesCoder()
            return coders.LengthPrefixCoder(inner)
        if urn == urns.WINDOWED_VALUE_CODER:
            return coders.WindowedValueCoder(self.coder(parts[0]), self.coder(parts[1]))
        if urn == urns.TIMER_CODER:
            return coders._TimerCoder(self.coder(parts[0]), self.coder(parts[1]))  # noqa: SLF001 - the SDK's only timer coder
        if urn == urns.CUSTOM_WINDOW_CODER:
            return coders.TimestampPrefixingOpaqueWindowCoder()
        raise OpaqueCoder(
            f"coder {coder_id} ({urn or 'no URN'}) is not a standard coder; the runner "
            "reads only standard coders and the bytes inside length prefixes"
        )

    def readable(self, coder_id: str) -> bool:
        """Can the runner decode this coder (standard all the way down)?"""
        if coder_id not in self.components.coders:  # one Readable added: a length prefix or custom window
            return True
        return recode.readable(self.components, coder_id)

    def event_reader(self, coder_id: str, nested: bool):
        """encoded -> value, for a TestStream's events encoded with ``coder_id``: in the outer
        context (Python's and Java's TestStreams) or the nested one (Go's; graph/sdks.py says
        which). Values come out as the runner holds elements once graph/opaque_coders.py has
        length-prefixed their unknown parts: those as the bytes of their encoding. An unknown
        part is found where it ends the data (the last part of KVs), or where its SDK writes its
        length before it (a Go custom coder in the nested context); elsewhere its end cannot be
        told without the SDK."""
        if self.readable(coder_id):
            impl = self.coder(coder_id).get_impl()
            return (lambda encoded: impl.decode_nested(encoded)) if nested else impl.decode

        def read(encoded: bytes):
            return self._read_event(coder_id, create_InputStream(encoded), nested)

        self._read_event(coder_id, None, nested)  # refuse an unreadable shape now, not per element
        return read

    def _read_event(self, coder_id: str, stream, nested: bool):
        """One value of ``coder_id`` off ``stream`` (None: only check that it can be read)."""
        proto = self.components.coders[coder_id]
        urn = proto.spec.urn
        if self.readable(coder_id):
            return None if stream is None else self.coder(coder_id).get_impl().decode_from_stream(stream, nested)
        if nested and urn == urns.GO_CUSTOM_CODER:  # Go writes a custom coder's length first
            return None if stream is None else _OPAQUE.decode_from_stream(stream, True)
        if urn == urns.KV_CODER:
            key, value = proto.component_coder_ids
            if not self.readable(key) and self.components.coders[key].spec.urn != urns.GO_CUSTOM_CODER:
                raise OpaqueCoder(
                    f"elements encoded with coder {coder_id}: its key coder {key} "
                    f"({self.components.coders[key].spec.urn}) is not standard, and without the "
                    "SDK the runner cannot tell where such a key ends; use a standard key coder"
                )
            if stream is None:
                return self._read_event(value, None, nested)
            return self._read_event(key, stream, True), self._read_event(value, stream, nested)
        if urn in urns.STRUCTURED_CODERS:
            raise OpaqueCoder(
                f"elements encoded with coder {coder_id} ({urn}): a part of it is not standard, and "
                "without the SDK the runner cannot tell where that part ends"
            )
        return None if stream is None else stream.read_all(False)

    def windowed(self, pcoll_id: str) -> coders.WindowedValueCoder:
        pcoll = self.components.pcollections[pcoll_id]
        ws = self.components.windowing_strategies[pcoll.windowing_strategy_id]
        return coders.WindowedValueCoder(
            self.coder(self._readable.pcollection(pcoll.coder_id)), self.coder(ws.window_coder_id)
        )

    def window_coder(self, pcoll_id: str) -> coders.Coder:
        pcoll = self.components.pcollections[pcoll_id]
        return self.coder(self.components.windowing_strategies[pcoll.windowing_strategy_id].window_coder_id)


_LEAVES = {
    urns.BYTES_CODER: coders.BytesCoder,
    urns.STRING_UTF8_CODER: coders.StrUtf8Coder,
    urns.VARINT_CODER: coders.VarIntCoder,
    urns.BOOL_CODER: coders.BooleanCoder,
    urns.DOUBLE_CODER: coders.FloatCoder,
    urns.GLOBAL_WINDOW_CODER: coders.GlobalWindowCoder,
    urns.INTERVAL_WINDOW_CODER: coders.IntervalWindowCoder,
}
assert set(_LEAVES) == urns.READABLE_LEAF_CODERS
# an opaque part that carries its length before it: the bytes inside
_OPAQUE = coders.LengthPrefixCoder(coders.BytesCoder()).get_impl()


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


def max_timestamp(w) -> int:
    """A Beam window's max timestamp (micros). The global window's is the model's end of the global
    window: Beam's Python GlobalWindow.max_timestamp() is one microsecond short of it (it is the
    predecessor of the proto constant, itself the max timestamp), where Java's and Go's are exact."""
    if isinstance(w, beam_window.GlobalWindow):
        return engine_windows.END_OF_GLOBAL_WINDOW
    return w.max_timestamp().micros


def to_engine_window(w, window_impl):
    if isinstance(w, beam_window.GlobalWindow):
        return engine_windows.GLOBAL
    if isinstance(w, beam_window.IntervalWindow):
        return engine_windows.Interval(w.start.micros, w.end.micros)
    return engine_windows.OpaqueWindow(encode_nested(window_impl, w), max_timestamp(w))


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
        self._panes: dict = {}  # engine Pane -> the SDK's PaneInfo
        self._last_timestamp: tuple[int | None, Timestamp | None] = (None, None)

    def split(self, element: bytes):
        wv = self._in.decode_nested(element)
        key, value = wv.value
        ws = wv.windows
        windows: Sequence[engine_windows.Interval | engine_windows.GlobalWindow | engine_windows.OpaqueWindow]
        if len(ws) == 1 and ws[0] is _BEAM_GLOBAL:  # the common case, without a conversion
            windows = _ONLY_GLOBAL
        else:
            windows = [to_engine_window(w, self._window) for w in ws]
        return self._key.encode_nested(key), key, value, wv.timestamp.micros, windows

    def key_bytes(self, element: bytes) -> bytes:
        """``split(element)[0]``, read off the element without decoding its timestamp and value
        or encoding the key again: what a shuffle partitions on (twice as fast for a small KV).
        The windowed value's layout: timestamp (8 bytes), window count (4 bytes) and windows,
        pane (a byte whose high nibble says how many varint indices follow), then the KV, the
        key first and nested."""
        stream = create_InputStream(element)
        stream.read(8)
        for _ in range(stream.read_bigendian_int32()):
            self._window.decode_from_stream(stream, True)
        for _ in range(stream.read_byte() >> 4):
            stream.read_var_int64()
        start = len(element) - stream.size()
        self._key.decode_from_stream(stream, True)
        return element[start : len(element) - stream.size()]

    def build(self, key, values, timestamp: int, window, pane) -> bytes:
        info = self._panes.get(pane)
        if info is None:
            info = self._panes[pane] = windowed_value.PaneInfo(
                pane.is_first, pane.is_last, _TIMING[pane.timing], pane.index, pane.nonspeculative_index
            )
        if timestamp != self._last_timestamp[0]:  # groups of one window share their timestamp
            self._last_timestamp = (timestamp, Timestamp(micros=timestamp))
        stamp = self._last_timestamp[1]
        assert stamp is not None  # set just above, on the first group
        wv = windowed_value.WindowedValue((key, values), stamp, (from_engine_window(window, self._window),), info)
        return self._out.encode_nested(wv)


class Transcoder:
    """Re-encodes an element from one windowed-value coder to another."""

    def __init__(self, source: coders.WindowedValueCoder, target: coders.WindowedValueCoder):
        self._source, self._target = source.get_impl(), target.get_impl()

    def __call__(self, element: bytes) -> bytes:
        return encode_nested(self._target, self._source.decode_from_stream(create_InputStream(element), True))


class KeysToBytesConversion:
    """KV(K, V) -> KV(bytes, V), the key replaced by its nested encoding (see graph/lifting.py)."""

    def __init__(self, source: coders.WindowedValueCoder, target: coders.WindowedValueCoder):
        self._source, self._target = source.get_impl(), target.get_impl()
        self._key = source.key_coder().get_impl()

    def __call__(self, element: bytes) -> bytes:
        wv = self._source.decode_from_stream(create_InputStream(element), True)
        key, value = wv.value
        return encode_nested(self._target, wv.with_value((encode_nested(self._key, key), value)))


class KeysFromBytesConversion:
    """KV(bytes, V) -> KV(K, V): the inverse of KeysToBytesConversion."""

    def __init__(self, source: coders.WindowedValueCoder, target: coders.WindowedValueCoder):
        self._source, self._target = source.get_impl(), target.get_impl()
        self._key = target.key_coder().get_impl()

    def __call__(self, element: bytes) -> bytes:
        wv = self._source.decode_from_stream(create_InputStream(element), True)
        key_bytes, value = wv.value
        key = self._key.decode_from_stream(create_InputStream(key_bytes), True)
        return encode_nested(self._target, wv.with_value((key, value)))


def proto_micros(duration) -> int:
    """A google.protobuf Duration or Timestamp, in micros (as the SDKs read and write them)."""
    return duration.seconds * 1_000_000 + duration.nanos // 1000
