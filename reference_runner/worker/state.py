"""The runner's side of the Fn API state channel: side inputs, served from materialized
PCollections, indexed by encoded window (and key, for multimap access); and user state of
stateful ParDos, kept in the engine's UserStateStore, staged per bundle (instruction id):
bag_user_state (value, bag and combining state, and Python's set state), ordered_list_user_state
(ordered lists), and the multimap user state of the Go and Java SDKs' map, set and multimap
state, one map per user key and window seen three ways: multimap_user_state (the values of one
map key: get, append, clear that key), multimap_keys_user_state (get every map key, once each,
in the order each got its first value since it was last absent; clear the whole map) and
multimap_entries_user_state (get every (map key, values) pair; clear the whole map).

Map keys and values stay the SDK's bytes: a map key is the SDK's nested encoding (the same bytes
in a multimap_user_state key and in the keys' stream), values are what the SDK appended. Only the
entries stream needs the values one by one: each pair is encoded as Beam's KV<K, Iterable<V>>
coder would (the map key, a 4-byte big-endian count, the values), which the Java SDK's
MultimapUserState decodes (Beam 2.71); the values are counted with the state's value coder, which
the runner must be able to read (standard coders, or a length prefix around any coder)."""

from __future__ import annotations

from collections.abc import Iterator

from apache_beam.coders.coder_impl import create_InputStream, create_OutputStream
from apache_beam.coders.coders import TupleCoder
from apache_beam.portability.api import beam_fn_api_pb2

from reference_runner.engine.userstate import UserStateStore
from reference_runner.worker.codecs import Coders, split_elements


class SideInputIndex:
    """One side input PCollection: its values by encoded window, and by key within a window.

    ``elements``: every element (each indexed under all its windows), or, in streaming and for
    triggered side inputs, encoded window -> the elements visible in that window
    (engine/sideinputs.py)."""

    def __init__(self, elements: list[bytes] | dict[bytes, list[bytes]], coders: Coders, pcoll_id: str, multimap: bool):
        wv_impl = coders.windowed(pcoll_id).get_impl()
        window_impl = coders.window_coder(pcoll_id)
        element_coder = coders.windowed(pcoll_id).wrapped_value_coder
        self.values: dict[bytes, bytearray] = {}
        self.by_key: dict[bytes, dict[bytes, list[bytes]]] = {}
        if multimap:
            assert isinstance(element_coder, TupleCoder)  # a multimap side input is of KVs (Coders builds TupleCoder)
            key_impl, value_impl = (c.get_impl() for c in element_coder.coders())
        value_impl_all = element_coder.get_impl()
        placed: Iterator[tuple[bytes, list[bytes] | None]]
        if isinstance(elements, dict):
            placed = ((e, [w]) for w, in_window in elements.items() for e in in_window)
        else:
            placed = ((e, None) for e in elements)
        for element, windows in placed:
            wv = wv_impl.decode_from_stream(create_InputStream(element), True)
            # the SDK keys side windows by their outer encoding
            for wkey in windows if windows is not None else [window_impl.encode(w) for w in wv.windows]:
                if multimap:
                    k, v = wv.value
                    keys = self.by_key.setdefault(wkey, {})
                    keys.setdefault(_encode(key_impl, k), []).append(_encode(value_impl, v))
                else:
                    self.values.setdefault(wkey, bytearray()).extend(_encode(value_impl_all, wv.value))


def _encode(impl, value) -> bytes:
    out = create_OutputStream()
    impl.encode_to_stream(value, out, True)
    return out.get()


class StateService:
    """Answers StateRequests for the bundles of one job."""

    def __init__(self):
        # (transform id, side input tag) -> SideInputIndex
        self.side_inputs: dict[tuple[str, str], SideInputIndex] = {}
        self.user = UserStateStore()
        # (transform id, state id) -> the coder impl of a map or multimap state's values, where
        # the runner reads it (declare_states)
        self._map_values: dict[tuple[str, str], object] = {}

    def declare_states(self, transform_id: str, payload, coders: Coders) -> None:
        """The state specs of a stateful ParDo (its ParDoPayload): how the values of its map and
        multimap states are told apart, for multimap_entries_user_state."""
        for state_id, spec in payload.state_specs.items():
            kind = spec.WhichOneof("spec")
            if kind in ("map_spec", "multimap_spec"):
                coder_id = getattr(spec, kind).value_coder_id
                if coder_id in coders.components.coders and coders.readable(coder_id):
                    self._map_values[(transform_id, state_id)] = coders.coder(coder_id).get_impl()

    def commit(self, instruction_id: str) -> None:
        """The bundle succeeded: its user state writes become visible to later bundles."""
        self.user.commit(instruction_id)

    def discard(self, instruction_id: str) -> None:
        """The bundle failed: forget its user state writes."""
        self.user.discard(instruction_id)

    def release(self, transform_id: str) -> None:
        """The transform's stage finished (batch: every window expired): drop its user state."""
        self.user.release(transform_id)

    def release_window(self, transform_id: str, window: bytes) -> None:
        """The window expired (streaming): drop the transform's user state in it."""
        self.user.release_window(transform_id, window)

    def handle(self, request: beam_fn_api_pb2.StateRequest) -> beam_fn_api_pb2.StateResponse:
        try:
            kind = request.WhichOneof("request")
            if request.state_key.WhichOneof("type") in _USER_STATE:
                return self._user_state(request, kind)
            data = self._get(request.state_key) if kind == "get" else None
            if data is None:
                raise ValueError(f"unsupported state request: {kind} {request.state_key.WhichOneof('type')}")
            return beam_fn_api_pb2.StateResponse(id=request.id, get=beam_fn_api_pb2.StateGetResponse(data=bytes(data)))
        except Exception as e:  # the worker reports it as the bundle's failure
            return beam_fn_api_pb2.StateResponse(id=request.id, error=f"{type(e).__name__}: {e}")

    def _user_state(self, request, kind: str | None) -> beam_fn_api_pb2.StateResponse:
        bundle = request.instruction_id
        if not bundle:
            raise ValueError("user state request without an instruction id")
        type_ = request.state_key.WhichOneof("type")
        k = getattr(request.state_key, type_)
        if type_ in _MULTIMAP:
            return self._multimap(request, kind, type_, k, bundle)
        cell = (type_, k.transform_id, k.user_state_id, k.key, k.window)
        store = self.user
        ordered = type_ == "ordered_list_user_state"
        span = (k.range.start, k.range.end) if ordered and k.HasField("range") else (None, None)
        response = beam_fn_api_pb2.StateResponse(id=request.id)
        if kind == "get":
            # Everything in one response: no continuation token.
            if ordered:
                data = b"".join(entry for _, entry in store.read_sorted(bundle, cell, *span))
            else:
                data = b"".join(store.read(bundle, cell))
            response.get.data = data
        elif kind == "append":
            data = request.append.data
            store.append(bundle, cell, _ordered_entries(data) if ordered else [data])
            response.append.SetInParent()
        elif kind == "clear":
            if span != (None, None):
                store.clear_range(bundle, cell, *span)
            else:
                store.clear(bundle, cell)
            response.clear.SetInParent()
        else:
            raise ValueError(f"unsupported user state request {kind} on {type_}")
        return response

    def _multimap(self, request, kind: str | None, type_: str, k, bundle: str) -> beam_fn_api_pb2.StateResponse:
        # one cell per map, whichever of the three keys names it
        cell = ("multimap", k.transform_id, k.user_state_id, k.key, k.window)
        store = self.user
        response = beam_fn_api_pb2.StateResponse(id=request.id)
        if kind == "get":
            if type_ == "multimap_user_state":
                data = b"".join(map(_delimited, store.read_map_key(bundle, cell, k.map_key) or ()))
            elif type_ == "multimap_keys_user_state":
                data = b"".join(map(_delimited, store.read_map(bundle, cell)))
            else:
                data = self._entries(store.read_map(bundle, cell), k)
            response.get.data = data  # everything in one response: no continuation token
        elif kind == "append" and type_ == "multimap_user_state":
            store.map_append(bundle, cell, k.map_key, request.append.data)
            response.append.SetInParent()
        elif kind == "clear":
            if type_ == "multimap_user_state":
                store.map_remove(bundle, cell, k.map_key)
            else:
                store.clear(bundle, cell)
            response.clear.SetInParent()
        else:
            raise ValueError(f"unsupported user state request {kind} on {type_}")
        return response

    def _entries(self, entries: dict[bytes, list[bytes]], k) -> bytes:
        """(map key, values) pairs as KV<K, Iterable<V>>: the key, the values' count (4 bytes,
        big-endian), the values."""
        if not entries:
            return b""
        impl = self._map_values.get((k.transform_id, k.user_state_id))
        if impl is None:
            raise ValueError(
                f"multimap_entries_user_state of state {k.user_state_id} of {k.transform_id}: the runner "
                "cannot tell its values apart (its value coder is not one the runner reads)"
            )
        out = bytearray()
        for map_key, chunks in entries.items():
            # (an empty append is one value that encodes to no bytes, as for the get above)
            values = [v for chunk in chunks for v in (split_elements(impl, chunk) if chunk else [b""])]
            out += map_key + len(values).to_bytes(4, "big") + b"".join(values)
        return bytes(out)

    def _get(self, key: beam_fn_api_pb2.StateKey):
        kind = key.WhichOneof("type")
        if kind == "iterable_side_input":
            k = key.iterable_side_input
            return self._index(k.transform_id, k.side_input_id).values.get(k.window, b"")
        if kind == "multimap_side_input":
            k = key.multimap_side_input
            return b"".join(self._index(k.transform_id, k.side_input_id).by_key.get(k.window, {}).get(k.key, ()))
        if kind == "multimap_keys_side_input":
            k = key.multimap_keys_side_input
            return b"".join(self._index(k.transform_id, k.side_input_id).by_key.get(k.window, {}))
        if kind == "multimap_keys_values_side_input":
            k = key.multimap_keys_values_side_input
            groups = self._index(k.transform_id, k.side_input_id).by_key.get(k.window, {})
            # (key, iterable of values) pairs; an iterable of known size is its count, then the values
            return b"".join(
                key_bytes + len(values).to_bytes(4, "big") + b"".join(values) for key_bytes, values in groups.items()
            )
        return None

    def _index(self, transform_id: str, tag: str) -> SideInputIndex:
        try:
            return self.side_inputs[(transform_id, tag)]
        except KeyError:
            raise KeyError(f"side input {tag} of {transform_id} is not materialized") from None


_MULTIMAP = ("multimap_user_state", "multimap_keys_user_state", "multimap_entries_user_state")
_USER_STATE = ("bag_user_state", "ordered_list_user_state", *_MULTIMAP)


def _delimited(chunk: bytes) -> bytes:
    """A map key or an append as the get streams carry it. An SDK sends a value or a map key that
    encodes to no bytes (the Java SDK's set keeps one Void per element, VoidCoder writes nothing)
    as an empty append or map key; a stream of elements carries such an element as one 0 byte
    (Beam's convention, which the Java SDK's reader, DataStreams.DataStreamDecoder, expects: an
    element read in no bytes is followed by that byte), else a reader sees no element at all."""
    return chunk or b"\x00"


def _ordered_entries(data: bytes) -> list[tuple[int, bytes]]:
    """Appended ordered-list data -> (sort key, encoded entry) pairs.

    Each entry is the SDK's (varint sort key, length-prefixed value): the value stays opaque."""
    entries, stream, total = [], create_InputStream(data), len(data)
    while stream.size() > 0:
        start = total - stream.size()
        sort_key = stream.read_var_int64()
        stream.read(stream.read_var_int64())
        entries.append((sort_key, data[start : total - stream.size()]))
    return entries
