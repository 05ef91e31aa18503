"""An SDK worker in this process: Beam's Python SDK harness, driven with Fn API messages."""

from __future__ import annotations

import contextlib
import itertools
import traceback

from apache_beam.portability.api import beam_fn_api_pb2
from apache_beam.runners.worker import sdk_worker, statecache

from reference_runner.worker import setup_teardown
from reference_runner.worker.channel import BundleChannel, BundleChannelFactory
from reference_runner.worker.control import BundleControl
from reference_runner.worker.state import StateService


def _done(response) -> sdk_worker._Future:
    """A completed write: the state service answers synchronously."""
    return sdk_worker._Future().set(response)


class _DirectStateHandler(sdk_worker.StateHandler):
    """Sends the worker's StateRequests straight to the runner's StateService."""

    def __init__(self, service: StateService):
        self._service = service
        self._ids = itertools.count()
        self._instruction_id = ""  # user state writes are staged under the bundle's id

    def _call(self, state_key, **request) -> beam_fn_api_pb2.StateResponse:
        response = self._service.handle(
            beam_fn_api_pb2.StateRequest(
                id=str(next(self._ids)), instruction_id=self._instruction_id, state_key=state_key, **request
            )
        )
        if response.error:
            raise RuntimeError(f"state request failed: {response.error}")
        return response

    def get_raw(self, state_key, continuation_token=None):
        response = self._call(
            state_key, get=beam_fn_api_pb2.StateGetRequest(continuation_token=continuation_token or b"")
        )
        return response.get.data, response.get.continuation_token or None

    def append_raw(self, state_key, data):
        return _done(self._call(state_key, append=beam_fn_api_pb2.StateAppendRequest(data=data)))

    def clear(self, state_key):
        return _done(self._call(state_key, clear=beam_fn_api_pb2.StateClearRequest()))

    @contextlib.contextmanager
    def process_instruction_id(self, bundle_id):
        self._instruction_id = bundle_id
        try:
            yield
        finally:
            self._instruction_id = ""

    def done(self):
        pass


class _Factory(sdk_worker.StateHandlerFactory):
    def __init__(self, handler):
        self._handler = handler

    def create_state_handler(self, api_service_descriptor):
        return self._handler

    def close(self):
        pass


class EmbeddedWorker(BundleControl):
    """Runs bundles of registered descriptors. The data plane is a BundleChannel in memory, the
    state channel calls the runner's StateService directly; everything else is Fn API messages."""

    def __init__(self, state: StateService):
        self.channel = BundleChannel()
        self._state = _DirectStateHandler(state)
        caching = sdk_worker.GlobalCachingStateHandler(statecache.StateCache(0), self._state)
        self._cache = sdk_worker.BundleProcessorCache(
            frozenset(), _Factory(caching), BundleChannelFactory(self.channel), {}
        )
        self._worker = sdk_worker.SdkWorker(self._cache)
        self._ids = itertools.count()
        self._plain: dict[str, bool] = {}  # descriptor id -> setup_teardown.without_setup_or_teardown

    def serve(self, state: StateService) -> None:
        """Answer state requests (side inputs, user state) from ``state`` from now on: a warm
        worker serves one job after another."""
        self._state._service = state

    def reusable(self, max_descriptors: int = 500) -> bool:
        """Whether a later job may run on this worker, reusing its cached bundle processors:
        only when no bundle is running, and no DoFn or CombineFn in them has a setup or
        teardown of its own (those must see teardown when their job ends, and a reused instance
        is otherwise indistinguishable from a new one, since the SDK resets it between
        bundles). ``max_descriptors`` bounds what a long-lived worker accumulates."""
        cache = self._cache
        if cache.active_bundle_processors or len(cache.fns) > max_descriptors:
            return False
        for descriptor_id, processors in cache.cached_bundle_processors.items():
            if processors and descriptor_id not in self._plain:
                self._plain[descriptor_id] = setup_teardown.without_setup_or_teardown(processors[0])
            if processors and not self._plain[descriptor_id]:
                return False
        return True

    def register(self, descriptor: beam_fn_api_pb2.ProcessBundleDescriptor) -> None:
        self._instruct(register=beam_fn_api_pb2.RegisterRequest(process_bundle_descriptor=[descriptor]))

    def new_instruction_id(self) -> str:
        return f"bundle-{next(self._ids)}"

    def process_bundle(self, instruction_id: str, descriptor_id: str, messages):
        """Run one bundle reading ``messages`` (Elements.Data / Timers, produced lazily).

        Returns (bytes per output transform, bytes per (transform, timer family), the
        ProcessBundleResponse). On failure nothing the attempt wrote is returned."""
        self.channel.feed(instruction_id, messages)
        try:
            response = self._instruct(
                instruction_id,
                process_bundle=beam_fn_api_pb2.ProcessBundleRequest(process_bundle_descriptor_id=descriptor_id),
            )
        finally:
            data, timers = self.channel.take(instruction_id)
        return data, timers, response.process_bundle

    def _control(self, **request) -> beam_fn_api_pb2.InstructionResponse:
        return self._instruct(**request)

    def _instruct(self, instruction_id=None, **request) -> beam_fn_api_pb2.InstructionResponse:
        instruction_id = instruction_id or f"instruction-{next(self._ids)}"
        try:
            response = self._worker.do_instruction(
                beam_fn_api_pb2.InstructionRequest(instruction_id=instruction_id, **request)
            )
        except Exception as e:  # raised past the harness: the user's error, or the runner's own feed's
            raise BundleFailed(with_traceback(e), cause=e) from e
        if response.error:
            raise BundleFailed(response.error)
        return response

    def stop(self) -> None:
        self._cache.shutdown()


def with_traceback(error: BaseException) -> str:
    """The error on its first line, then its whole traceback, nested frames and causes
    included (the lines a gRPC SDK harness would have sent in its InstructionResponse)."""
    details = "".join(traceback.format_exception(error)).rstrip()
    return f"{type(error).__name__}: {error}\n{details}"


class BundleFailed(RuntimeError):
    """The SDK worker reported an error for a bundle (the user's exception text included)."""

    metrics: list  # set by a remote worker only: the bundle's monitoring infos so far (worker/attempt.py)

    def __init__(self, message: str, cause: BaseException | None = None, worker_lost: bool = False):
        super().__init__(message)
        self.cause = cause
        # the worker died, went silent or was cut off: the bundle may well succeed on another
        # (otherwise the SDK answered with its error, which running the bundle again repeats)
        self.worker_lost = worker_lost
