import time

import grpc
from apache_beam.portability.api import beam_fn_api_pb2_grpc

from reference_runner.worker.fnapi_server import FnApiServer


def test_a_worker_that_pings_its_idle_control_stream_keeps_it():
    # Beam's SDK harness pings without limit even when no data flows (channel_factory.py), every
    # 20 s; here every 3 s through 20 idle seconds. A server on gRPC's defaults answers the third
    # such ping with GOAWAY too_many_pings, and the worker's streams break.
    server = FnApiServer()
    options = [
        ("grpc.keepalive_time_ms", 3_000),
        ("grpc.http2.max_pings_without_data", 0),
        ("grpc.keepalive_permit_without_calls", 1),
    ]
    channel = grpc.insecure_channel(server.address, options=options)
    try:
        stream = beam_fn_api_pb2_grpc.BeamFnControlStub(channel).Control(
            iter(lambda: time.sleep(3600), None), metadata=[("worker_id", "pinger")]
        )
        connection = server.connection("pinger", timeout=10)
        time.sleep(20)
        assert connection.gone is None, connection.gone
        stream.cancel()
    finally:
        channel.close()
        server.stop()
