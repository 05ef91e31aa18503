"""Small JSON messages between Spark executors and the driver, as unary gRPC calls on services
of our own (spark/held_workers.py, spark/failure_inbox.py)."""

from __future__ import annotations

import json
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
    with grpc.insecure_channel(address) as channel:
        channel.unary_unary(f"/{service}/{method}", request_serializer=_encode)(request, timeout=timeout)
