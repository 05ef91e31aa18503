"""The runner's side of the Fn API state channel: side inputs, served from materialized
PCollections, indexed by encoded window (and key, for multimap access); and user state of
stateful ParDos (bag_user_state for value, bag, combining and set state; ordered_list_user_state
for ordered lists), kept in the engine's UserStateStore, staged per bundle (instruction id)."""

from __future__ import annotations

from collections.abc import Iterator

from apache_beam.coders.coder_impl import create_InputStream, create_OutputStream
from apache_beam.coders.coders import TupleCoder
from apache_beam.portability.api import beam_fn_api_pb2

from reference_runner.engine.userstate import UserStateStore
from reference_runner.worker.codecs import Coders


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


_USER_STATE = ("bag_user_state", "ordered_list_user_state")


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
