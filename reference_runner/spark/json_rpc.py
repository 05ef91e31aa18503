"""Small JSON messages between Spark executors and the driver, as unary gRPC calls on services
of our own (spark/held_workers.py, spark/failure_inbox.py)."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable

import grpc


def _encode(message: dict) -> bytes:
    return json.dumps(message).encode()


def handler(service: str, method: str, serve: Callable[[dict], None]) -> grpc.GenericRpcHandler:
    """``serve(request)`` for each call of ``service/method``; the answer is empty."""

    def call(request: dict, context) -> dict:
        serve(request)
        return {}

    return grpc.method_handlers_generic_handler(
        service,
        {
            method: grpc.unary_unary_rpc_method_handler(
                call, request_deserializer=json.loads, response_serializer=_encode
            )
        },
    )


def call(address: str, service: str, method: str, request: dict, timeout: float) -> None:
    _channel(address).unary_unary(f"/{service}/{method}", request_serializer=_encode)(request, timeout=timeout)


# Channels are kept: a job's calls (a few per executor) each paid a connection on a fresh one.
# The oldest are closed beyond a bound, since executors come and go on a long-lived driver.
_CHANNELS_KEPT = 64
_channels: OrderedDict[str, grpc.Channel] = OrderedDict()
_lock = threading.Lock()


def _channel(address: str) -> grpc.Channel:
    with _lock:
        channel = _channels.get(address)
        if channel is not None:
            _channels.move_to_end(address)
            return channel
        channel = _channels[address] = grpc.insecure_channel(address)
        evicted = []
        while len(_channels) > _CHANNELS_KEPT:
            evicted.append(_channels.popitem(last=False)[1])
    for old in evicted:
        old.close()
    return channel
