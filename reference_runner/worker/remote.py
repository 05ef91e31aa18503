"""An SDK worker connected over gRPC, driven with the same calls as the embedded one."""

from __future__ import annotations

import copy
import itertools
import threading
import time

from apache_beam.portability.api import beam_fn_api_pb2, beam_runner_api_pb2

from reference_runner.graph import urns
from reference_runner.worker.control import BundleControl
from reference_runner.worker.embedded import BundleFailed
from reference_runner.worker.fnapi_server import Connection, FnApiServer, WorkerGone

_IDS = itertools.count()


class _NoOutputHooks:
    """Mid-element split cues need the worker in this process; remote bundles split between elements."""

    def on_output(self, instruction_id, hook) -> None:
        pass


class _Ports:
    """Where a descriptor's data enters and leaves, and which timer families it carries."""

    def __init__(self, descriptor: beam_fn_api_pb2.ProcessBundleDescriptor):
        self.inputs = [t for t, p in descriptor.transforms.items() if p.spec.urn == urns.DATA_INPUT]
        self.outputs = [t for t, p in descriptor.transforms.items() if p.spec.urn == urns.DATA_OUTPUT]
        self.timers = []
        if descriptor.timer_api_service_descriptor.url:
            for t, p in descriptor.transforms.items():
                if p.spec.urn == urns.PAR_DO:
                    payload = beam_runner_api_pb2.ParDoPayload.FromString(p.spec.payload)
                    self.timers += [(t, family) for family in payload.timer_family_specs]


class RemoteWorker(BundleControl):
    def __init__(self, server: FnApiServer, connection: Connection, state, timeout: float = 600):
        self.channel = _NoOutputHooks()
        self.cancelled = threading.Event()  # set by the job's owner to stop waiting for the worker
        self._server = server
        self._connection = connection
        self._state = state
        self._timeout = timeout
        self._ports: dict[str, _Ports] = {}

    def bound(self, state) -> RemoteWorker:
        """This worker, its bundles' state requests answered from ``state``: one worker serves
        several users at once (the tasks of one job that Spark pipelines in one process), each
        with its own state; they share the connection and the registered descriptors."""
        view = copy.copy(self)
        view._state = state
        return view

    @property
    def gone(self) -> bool:
        return self._connection.gone is not None

    def register(self, descriptor: beam_fn_api_pb2.ProcessBundleDescriptor) -> None:
        """Offered, not pushed: the worker fetches it with GetProcessBundleDescriptor."""
        self._ports[descriptor.id] = _Ports(descriptor)
        self._connection.descriptors[descriptor.id] = descriptor

    def new_instruction_id(self) -> str:
        return f"bundle-{next(_IDS)}"

    def process_bundle(self, instruction_id: str, descriptor_id: str, messages):
        ports = self._ports[descriptor_id]
        inbox = self._connection.inbox(instruction_id, set(ports.outputs) | set(ports.timers))
        self._server.state_services[instruction_id] = self._state
        try:
            answer = self._connection.instruct(
                beam_fn_api_pb2.InstructionRequest(
                    instruction_id=instruction_id,
                    process_bundle=beam_fn_api_pb2.ProcessBundleRequest(process_bundle_descriptor_id=descriptor_id),
                )
            )
            feed_error = self._send(instruction_id, messages, ports)
            response = self._result(answer)
            if feed_error is not None:  # the runner failed this attempt on purpose, part-way
                failed = BundleFailed(f"{type(feed_error).__name__}: {feed_error}", cause=feed_error)
                failed.metrics = list(response.process_bundle.monitoring_infos)  # what it did attempt
                raise failed
            inbox.wait(self._timeout)
            return (
                {k: bytes(v) for k, v in inbox.data.items()},
                {k: bytes(v) for k, v in inbox.timers.items()},
                response.process_bundle,
            )
        except (WorkerGone, TimeoutError) as e:
            raise BundleFailed(str(e), cause=e, worker_lost=True) from None
        finally:
            self._connection.drop_inbox(instruction_id)
            self._server.state_services.pop(instruction_id, None)

    def _send(self, instruction_id: str, messages, ports: _Ports):
        """Stream the bundle's input, then close every input; returns what stopped the feed, if anything."""
        error = None
        try:
            for message in messages:
                kind = "timers" if isinstance(message, beam_fn_api_pb2.Elements.Timers) else "data"
                self._connection.data_out.put(beam_fn_api_pb2.Elements(**{kind: [message]}))
        except Exception as e:  # noqa: BLE001 - reported once the worker has wound the bundle down
            error = e
        last = beam_fn_api_pb2.Elements(
            data=[
                beam_fn_api_pb2.Elements.Data(instruction_id=instruction_id, transform_id=t, is_last=True)
                for t in ports.inputs
            ],
            timers=[
                beam_fn_api_pb2.Elements.Timers(
                    instruction_id=instruction_id, transform_id=t, timer_family_id=f, is_last=True
                )
                for t, f in ports.timers
            ],
        )
        self._connection.data_out.put(last)
        return error

    def stop(self) -> None:
        """The worker outlives the job (the pool decides when it goes); the job's descriptors do not."""
        for descriptor_id in self._ports:
            self._connection.descriptors.pop(descriptor_id, None)

    def _control(self, **request) -> beam_fn_api_pb2.InstructionResponse:
        future = self._connection.instruct(
            beam_fn_api_pb2.InstructionRequest(instruction_id=f"control-{next(_IDS)}", **request)
        )
        try:
            return self._result(future)
        except (WorkerGone, TimeoutError) as e:
            raise BundleFailed(str(e), cause=e, worker_lost=True) from None

    def _result(self, future) -> beam_fn_api_pb2.InstructionResponse:
        deadline = time.monotonic() + self._timeout
        while True:  # in short waits, so that a cancelled job stops waiting at once
            if self.cancelled.is_set():
                raise WorkerGone("the job was cancelled while the worker was busy")
            try:
                response = future.result(min(0.1, max(0.0, deadline - time.monotonic())))
                break
            except TimeoutError:
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"the SDK worker did not answer within {self._timeout} s") from None
        if response.error:
            raise BundleFailed(response.error)
        return response
