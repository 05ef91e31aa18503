"""The runner's side of the Fn API state channel: side inputs, served from materialized
PCollections, indexed by encoded window (and key, for multimap access)."""
from __future__ import annotations

from apache_beam.coders.coder_impl import create_InputStream, create_OutputStream
from apache_beam.portability.api import beam_fn_api_pb2

from reference_runner.worker.codecs import Coders


class SideInputIndex:
    """One side input PCollection: its values by encoded window, and by key within a window."""

    def __init__(self, elements: list[bytes], coders: Coders, pcoll_id: str, multimap: bool):
        wv_impl = coders.windowed(pcoll_id).get_impl()
        window_impl = coders.window_coder(pcoll_id)
        element_coder = coders.windowed(pcoll_id).wrapped_value_coder
        self.values: dict[bytes, bytearray] = {}
        self.by_key: dict[bytes, dict[bytes, list[bytes]]] = {}
        if multimap:
            key_impl, value_impl = (c.get_impl() for c in element_coder.coders())
        value_impl_all = element_coder.get_impl()
        for element in elements:
            wv = wv_impl.decode_from_stream(create_InputStream(element), True)
            for w in wv.windows:
                wkey = window_impl.encode(w)  # the SDK keys side windows by their outer encoding
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

    def handle(self, request: beam_fn_api_pb2.StateRequest) -> beam_fn_api_pb2.StateResponse:
        try:
            data = self._get(request.state_key) if request.WhichOneof("request") == "get" else None
            if data is None:
                raise ValueError(f"unsupported state request: {request.WhichOneof('request')} "
                                 f"{request.state_key.WhichOneof('type')}")
            return beam_fn_api_pb2.StateResponse(id=request.id,
                                                 get=beam_fn_api_pb2.StateGetResponse(data=bytes(data)))
        except Exception as e:  # the worker reports it as the bundle's failure
            return beam_fn_api_pb2.StateResponse(id=request.id, error=f"{type(e).__name__}: {e}")

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
            return b"".join(key_bytes + len(values).to_bytes(4, "big") + b"".join(values)
                            for key_bytes, values in groups.items())
        return None

    def _index(self, transform_id: str, tag: str) -> SideInputIndex:
        try:
            return self.side_inputs[(transform_id, tag)]
        except KeyError:
            raise KeyError(f"side input {tag} of {transform_id} is not materialized") from None
