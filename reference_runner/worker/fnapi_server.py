"""The runner's Fn API endpoint for SDK workers in other threads or processes.

One gRPC server carries the control, data, state, logging and provision services. Provision
answers with this server's own address for control and logging: an SDK may take those from it
over the flags it was started with (Beam's Java harness does), so each runner process that
starts workers (the job server, each Spark executor) must be its own provisioner. A worker names itself
with the ``worker_id`` metadata every Beam SDK harness sends; its control stream is its life:
when that stream ends, everything the runner was waiting for from it fails at once.
"""

from __future__ import annotations

import collections
import itertools
import logging
import queue
import threading
from collections.abc import Callable
from concurrent import futures

import grpc
from apache_beam.portability.api import (
    beam_fn_api_pb2,
    beam_fn_api_pb2_grpc,
    beam_provision_api_pb2,
    beam_provision_api_pb2_grpc,
    endpoints_pb2,
)

from reference_runner.worker.state import StateService

_LOG = logging.getLogger(__name__)
_CLOSE = object()  # ends an outgoing stream
_FORGOTTEN_KEPT = 1024  # forgotten worker ids remembered, to turn away one that connects late
# SDK workers and Job API clients keep their streams alive with pings (Beam's Python harness every
# 20 s, idle or not). gRPC servers by default take a ping more often than every 5 minutes without
# data as abuse and answer the third with GOAWAY "too_many_pings", which breaks a worker's streams
# mid-job whenever a bundle or a job waits long (seen under load: "SDK worker disconnected").
PERMIT_CLIENT_KEEPALIVE = [
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.min_recv_ping_interval_without_data_ms", 5_000),
    ("grpc.http2.max_ping_strikes", 0),
]


class WorkerGone(RuntimeError):
    """The worker's control stream ended (it exited, crashed or was killed)."""


def _worker_id(context) -> str:
    return dict(context.invocation_metadata()).get("worker_id", "")


class Connection:
    """One connected SDK harness, as the runner sees it."""

    def __init__(self, worker_id: str):
        self.worker_id = worker_id
        self.control_out: queue.Queue = queue.Queue()
        self.data_out: queue.Queue = queue.Queue()
        self._responses: dict[str, futures.Future] = {}
        self._inboxes: dict[str, Inbox] = {}
        self._lock = threading.Lock()
        self.gone: str | None = None
        #: descriptor id -> ProcessBundleDescriptor, served by GetProcessBundleDescriptor
        self.descriptors: dict[str, beam_fn_api_pb2.ProcessBundleDescriptor] = {}

    # -- control ----------------------------------------------------------------------------
    def instruct(self, request: beam_fn_api_pb2.InstructionRequest) -> futures.Future:
        future: futures.Future = futures.Future()
        with self._lock:
            if self.gone:
                future.set_exception(WorkerGone(self.gone))
                return future
            self._responses[request.instruction_id] = future
        self.control_out.put(request)
        return future

    def answered(self, response: beam_fn_api_pb2.InstructionResponse) -> None:
        with self._lock:
            future = self._responses.pop(response.instruction_id, None)
        if future is not None:
            future.set_result(response)

    # -- data -------------------------------------------------------------------------------
    def inbox(self, instruction_id: str, expected: set) -> Inbox:
        inbox = Inbox(expected)
        with self._lock:
            self._inboxes[instruction_id] = inbox
            if self.gone:
                inbox.fail(self.gone)
        return inbox

    def drop_inbox(self, instruction_id: str) -> None:
        with self._lock:
            self._inboxes.pop(instruction_id, None)

    def received(self, elements: beam_fn_api_pb2.Elements) -> None:
        for part in itertools.chain(elements.data, elements.timers):
            with self._lock:
                inbox = self._inboxes.get(part.instruction_id)
            if inbox is not None:
                inbox.put(part)

    def lost(self, why: str) -> None:
        with self._lock:
            self.gone = why
            pending, self._responses = list(self._responses.values()), {}
            inboxes = list(self._inboxes.values())
        for future in pending:
            future.set_exception(WorkerGone(why))
        for inbox in inboxes:
            inbox.fail(why)
        self.control_out.put(_CLOSE)
        self.data_out.put(_CLOSE)


class Inbox:
    """What one bundle sends back on the data stream, complete once every output said is_last."""

    def __init__(self, expected: set):
        self._waiting = set(expected)  # transform ids and (transform, timer family) pairs
        self.data: dict[str, bytearray] = {}
        self.timers: dict[tuple[str, str], bytearray] = {}
        self._done = threading.Event()
        self.error: str | None = None
        if not self._waiting:
            self._done.set()

    def put(self, part) -> None:
        if isinstance(part, beam_fn_api_pb2.Elements.Timers):
            key = (part.transform_id, part.timer_family_id)
            self.timers.setdefault(key, bytearray()).extend(part.timers)
        else:
            key = part.transform_id
            self.data.setdefault(key, bytearray()).extend(part.data)
        if part.is_last:
            self._waiting.discard(key)
            if not self._waiting:
                self._done.set()

    def fail(self, why: str) -> None:
        self.error = why
        self._done.set()

    def wait(self, timeout: float) -> None:
        if not self._done.wait(timeout):
            raise TimeoutError(
                f"the worker did not finish sending outputs within {timeout} s "
                f"(still open: {sorted(map(str, self._waiting))})"
            )
        if self.error:
            raise WorkerGone(self.error)


class FnApiServer(
    beam_fn_api_pb2_grpc.BeamFnControlServicer,
    beam_fn_api_pb2_grpc.BeamFnDataServicer,
    beam_fn_api_pb2_grpc.BeamFnStateServicer,
    beam_fn_api_pb2_grpc.BeamFnLoggingServicer,
    beam_provision_api_pb2_grpc.ProvisionServiceServicer,
):
    def __init__(self, host: str = "127.0.0.1", max_workers: int = 1024, artifact_endpoint: str = "", handlers=()):
        """``handlers``: more gRPC generic handlers served on the same port (a runner's own calls)."""
        # Every connected SDK worker holds four streams (control, data, state, logging), each a
        # thread for its life, and fetches descriptors with one more call: a pool smaller than
        # what the connected workers hold starves that call and the bundle waits forever. The
        # threads start only as calls arrive, so the cap costs nothing until it is used.
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=max_workers),
            options=[("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1)]
            + PERMIT_CLIENT_KEEPALIVE,
        )
        for add in (
            beam_fn_api_pb2_grpc.add_BeamFnControlServicer_to_server,
            beam_fn_api_pb2_grpc.add_BeamFnDataServicer_to_server,
            beam_fn_api_pb2_grpc.add_BeamFnStateServicer_to_server,
            beam_fn_api_pb2_grpc.add_BeamFnLoggingServicer_to_server,
            beam_provision_api_pb2_grpc.add_ProvisionServiceServicer_to_server,
        ):
            add(self, self._server)
        self._server.add_generic_rpc_handlers(tuple(handlers))
        self.port = self._server.add_insecure_port(f"{host}:0")
        self.address = f"{host}:{self.port}"
        self.artifact_endpoint = artifact_endpoint  # where workers retrieve the job's staged files
        self._connections: dict[str, Connection] = {}
        self._forgotten: collections.OrderedDict[str, None] = collections.OrderedDict()
        self._arrived = threading.Condition()
        #: instruction id -> the StateService answering that bundle's state requests
        self.state_services: dict[str, StateService] = {}
        #: worker id -> called with every LogEntry that worker sends (its job's message stream)
        self.log_sinks: dict[str, Callable[[beam_fn_api_pb2.LogEntry], None]] = {}
        self._server.start()

    def connection(self, worker_id: str, timeout: float) -> Connection:
        """Wait until the worker ``worker_id`` has opened its control stream."""
        with self._arrived:
            if not self._arrived.wait_for(lambda: worker_id in self._connections, timeout):
                raise TimeoutError(f"SDK worker {worker_id} did not connect within {timeout} s")
            return self._connections[worker_id]

    def forget(self, worker_id: str) -> None:
        """The runner is done with ``worker_id``; if it connects only now, it is turned away."""
        with self._arrived:
            self._connections.pop(worker_id, None)
            self._forgotten[worker_id] = None
            while len(self._forgotten) > _FORGOTTEN_KEPT:
                self._forgotten.popitem(last=False)

    def stop(self) -> None:
        for connection in list(self._connections.values()):
            connection.lost("the runner shut down")
        self._server.stop(grace=1).wait()

    # -- services ---------------------------------------------------------------------------
    def Control(self, request_iterator, context):
        connection = Connection(_worker_id(context))
        with self._arrived:
            if self._forgotten.pop(connection.worker_id, "connect") is None:
                return  # released before it called in (it timed out): ending its stream stops it
            self._connections[connection.worker_id] = connection
            self._arrived.notify_all()

        def read():
            try:
                for response in request_iterator:
                    connection.answered(response)
                why = f"SDK worker {connection.worker_id} closed its control stream"
            except grpc.RpcError as e:
                code = e.code().name if hasattr(e, "code") else "stream broken"
                why = f"SDK worker {connection.worker_id} disconnected ({code})"
            except Exception as e:  # noqa: BLE001 - any failure ends the worker's life here
                why = f"SDK worker {connection.worker_id} failed: {e}"
            connection.lost(why)

        threading.Thread(target=read, name=f"control-{connection.worker_id}", daemon=True).start()
        yield from _drain(connection.control_out)

    def GetProcessBundleDescriptor(self, request, context):
        # Every SDK fetches descriptors this way; not all of them take a RegisterRequest (the
        # TypeScript SDK's worker refuses it), so the runner never sends one to a remote worker.
        # The worker's id when it sent one (the TypeScript SDK sends it on its control stream
        # alone); descriptor ids name their job, so any connection's copy is the one asked for.
        worker_id, wanted = _worker_id(context), request.process_bundle_descriptor_id
        with self._arrived:
            mine = self._connections.get(worker_id)
            candidates = [mine] if mine else list(self._connections.values())
        descriptor = next((c.descriptors[wanted] for c in candidates if wanted in c.descriptors), None)
        if descriptor is None:
            context.abort(
                grpc.StatusCode.NOT_FOUND,
                f"no process bundle descriptor {wanted!r} for SDK worker {worker_id!r}",
            )
        return descriptor

    def Data(self, request_iterator, context):
        worker_id = _worker_id(context)
        connection = self.connection(worker_id, timeout=30)

        def read():
            try:
                for elements in request_iterator:
                    connection.received(elements)
            except grpc.RpcError:
                pass  # the control stream reports the worker's end

        threading.Thread(target=read, name=f"data-{worker_id}", daemon=True).start()
        yield from _drain(connection.data_out)

    def State(self, request_iterator, context):
        for request in request_iterator:
            service = self.state_services.get(request.instruction_id)
            if service is None:
                yield beam_fn_api_pb2.StateResponse(
                    id=request.id, error=f"no running bundle {request.instruction_id!r}"
                )
            else:
                yield service.handle(request)

    def Logging(self, request_iterator, context):
        worker_id = _worker_id(context)
        for entries in request_iterator:
            sink = self.log_sinks.get(worker_id)
            if not sink:
                continue
            for entry in entries.log_entries:
                try:
                    sink(entry)
                except Exception:  # noqa: BLE001 - a log sink must never break the worker
                    _LOG.exception("log sink failed")
        return iter(())

    def GetProvisionInfo(self, request, context):
        """What a worker's boot program (or a harness that asks) needs to reach the runner."""
        here = endpoints_pb2.ApiServiceDescriptor(url=self.address)
        info = beam_provision_api_pb2.ProvisionInfo(logging_endpoint=here, control_endpoint=here)
        if self.artifact_endpoint:
            info.artifact_endpoint.url = self.artifact_endpoint
        return beam_provision_api_pb2.GetProvisionInfoResponse(info=info)


def _drain(outgoing: queue.Queue):
    while True:
        item = outgoing.get()
        if item is _CLOSE:
            return
        yield item
