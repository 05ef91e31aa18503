"""An SDK worker in this process: Beam's Python SDK harness, driven with Fn API messages."""
from __future__ import annotations

import contextlib
import itertools

from apache_beam.portability.api import beam_fn_api_pb2
from apache_beam.runners.worker import data_plane, sdk_worker, statecache

from reference_runner.worker.state import StateService


class _Done:
    """A completed write (the state service answers synchronously)."""

    def get(self, timeout=None):
        return None

    def wait(self, timeout=None):
        return None


class _DirectStateHandler(sdk_worker.StateHandler):
    """Sends the worker's StateRequests straight to the runner's StateService."""

    def __init__(self, service: StateService):
        self._service = service
        self._ids = itertools.count()

    def _call(self, state_key, **request) -> beam_fn_api_pb2.StateResponse:
        response = self._service.handle(beam_fn_api_pb2.StateRequest(
            id=str(next(self._ids)), state_key=state_key, **request))
        if response.error:
            raise RuntimeError(f"state request failed: {response.error}")
        return response

    def get_raw(self, state_key, continuation_token=None):
        response = self._call(state_key, get=beam_fn_api_pb2.StateGetRequest(
            continuation_token=continuation_token or b""))
        return response.get.data, response.get.continuation_token or None

    def append_raw(self, state_key, data):
        self._call(state_key, append=beam_fn_api_pb2.StateAppendRequest(data=data))
        return _Done()

    def clear(self, state_key):
        self._call(state_key, clear=beam_fn_api_pb2.StateClearRequest())
        return _Done()

    @contextlib.contextmanager
    def process_instruction_id(self, bundle_id):
        yield

    def done(self):
        pass


class _Factory(sdk_worker.StateHandlerFactory):
    def __init__(self, handler):
        self._handler = handler

    def create_state_handler(self, api_service_descriptor):
        return self._handler

    def close(self):
        pass


class EmbeddedWorker:
    """Runs bundles of registered descriptors; the data channel is in memory."""

    def __init__(self, state: StateService):
        self._channel = data_plane.InMemoryDataChannel()
        caching = sdk_worker.GlobalCachingStateHandler(statecache.StateCache(0), _DirectStateHandler(state))
        self._cache = sdk_worker.BundleProcessorCache(
            frozenset(), _Factory(caching), data_plane.InMemoryDataChannelFactory(self._channel.inverse()), {})
        self._worker = sdk_worker.SdkWorker(self._cache)
        self._ids = itertools.count()

    def register(self, descriptor: beam_fn_api_pb2.ProcessBundleDescriptor) -> None:
        self._instruct(register=beam_fn_api_pb2.RegisterRequest(process_bundle_descriptor=[descriptor]))

    def process_bundle(self, descriptor_id: str, input_transform: str, data: bytes, instruction_id=None):
        """Run one bundle; returns (data per output transform, the ProcessBundleResponse).
        ``instruction_id`` names the bundle for a later finalize_bundle."""
        instruction_id = instruction_id or f"bundle-{next(self._ids)}"
        stream = self._channel.output_stream(instruction_id, input_transform)
        stream.write(data)
        stream.close()
        try:
            response = self._instruct(instruction_id, process_bundle=beam_fn_api_pb2.ProcessBundleRequest(
                process_bundle_descriptor_id=descriptor_id))
        except Exception as e:
            raise BundleFailed(f"{type(e).__name__}: {e}") from e
        finally:  # collect (or, on failure, discard) what the bundle wrote
            outputs: dict[str, bytearray] = {}
            for message in self._channel.input_elements(instruction_id, []):
                if isinstance(message, beam_fn_api_pb2.Elements.Data) and message.data:
                    outputs.setdefault(message.transform_id, bytearray()).extend(message.data)
        return outputs, response.process_bundle

    def finalize_bundle(self, instruction_id: str) -> None:
        """Run the finalization callbacks of a committed bundle that asked for them."""
        self._instruct(finalize_bundle=beam_fn_api_pb2.FinalizeBundleRequest(instruction_id=instruction_id))

    def _instruct(self, instruction_id=None, **request) -> beam_fn_api_pb2.InstructionResponse:
        instruction_id = instruction_id or f"instruction-{next(self._ids)}"
        response = self._worker.do_instruction(beam_fn_api_pb2.InstructionRequest(
            instruction_id=instruction_id, **request))
        if response.error:
            raise BundleFailed(response.error)
        return response

    def stop(self) -> None:
        self._cache.shutdown()


class BundleFailed(RuntimeError):
    """The SDK worker reported an error for a bundle (the user's exception text included)."""
