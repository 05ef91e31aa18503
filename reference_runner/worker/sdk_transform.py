"""A question the runner asks the SDK about a user's WindowFn: a bundle descriptor of one transform
the SDK harness runs for runners (merge_windows, map_windows), fed requests in the global window.

The runner cannot run the user's function itself (it may not import its module, or it is another
SDK's), so the function's FunctionSpec goes to the SDK as the transform's payload and the answers
come back on the data channel, each KV(nonce, answer) for a KV(nonce, request).
"""

from __future__ import annotations

from apache_beam.coders import coders
from apache_beam.coders.coder_impl import create_InputStream
from apache_beam.portability.api import beam_fn_api_pb2, beam_runner_api_pb2
from apache_beam.transforms import window as beam_window
from apache_beam.utils import windowed_value

from reference_runner.graph import urns
from reference_runner.graph.descriptors import EMBEDDED_ENDPOINT, data_port, name_by_content
from reference_runner.worker import attempt, codecs


class SdkTransform:
    """One transform ``urn`` of the user's function ``fn``, registered on ``worker`` under
    ``descriptor_id`` (content-named, so a warm worker reuses it): ``run`` feeds it requests and
    returns its answers.

    ``parts``: {coder id: (coder URN, its component coder ids...)}, the coders the request and answer
    coders are built of, added to the pipeline's own (whose ids they may name); ``request`` and
    ``answer``: the coder ids of the transform's input and output elements; ``prefix``: the ids of
    everything the descriptor adds."""

    def __init__(
        self,
        worker,
        descriptor_id: str,
        components: beam_runner_api_pb2.Components,
        urn: str,
        fn: beam_runner_api_pb2.FunctionSpec,
        parts: dict[str, tuple[str, ...]],
        request: str,
        answer: str,
        prefix: str,
        endpoint: str = EMBEDDED_ENDPOINT,
    ):
        self._worker = worker
        pbd = _descriptor(descriptor_id, components, urn, fn, parts, request, answer, prefix, endpoint)
        self._ports = descriptor_id  # the data ports are named after the id asked for
        self._id = name_by_content(pbd)
        worker.register(pbd)

    def run(self, requests: list[bytes]) -> bytes:
        """Encoded windowed requests (``in_global_window``) -> the output's data; AttemptFailed
        carries the SDK's error."""
        result = attempt.run(self._worker, self._id, f"{self._ports}/input", requests)
        return result.data.get(f"{self._ports}/output", b"")


def in_global_window(impl, value) -> bytes:
    """``value`` as a request element (windowed-value ``impl`` over the global window coder)."""
    element = windowed_value.WindowedValue(value, windowed_value.MIN_TIMESTAMP, (beam_window.GlobalWindow(),))
    return codecs.encode_nested(impl, element)


def answers(impl, data: bytes) -> list:
    """The values of the answer elements in ``data`` (windowed-value ``impl``)."""
    return [impl.decode_from_stream(create_InputStream(e), True).value for e in codecs.split_elements(impl, data)]


def windowed(value_coder: coders.Coder):
    """The runner's impl of request or answer elements of ``value_coder``."""
    return coders.WindowedValueCoder(value_coder, coders.GlobalWindowCoder()).get_impl()


def _descriptor(
    descriptor_id: str, components, urn: str, fn, parts: dict, request: str, answer: str, prefix: str, endpoint: str
) -> beam_fn_api_pb2.ProcessBundleDescriptor:
    pbd = beam_fn_api_pb2.ProcessBundleDescriptor(id=descriptor_id)
    for key, value in components.coders.items():
        pbd.coders[key].CopyFrom(value)
    global_id = f"{prefix}/global"
    _coder(pbd, global_id, urns.GLOBAL_WINDOW_CODER)
    for coder_id, (coder_urn, *components_of) in parts.items():
        _coder(pbd, coder_id, coder_urn, *components_of)
    for name, coder in (("request", request), ("answer", answer)):
        _coder(pbd, f"{prefix}/wire/{name}", urns.WINDOWED_VALUE_CODER, coder, global_id)
        pcoll = pbd.pcollections[f"{prefix}/{name}"]
        pcoll.unique_name = f"{prefix}/{name}"
        pcoll.coder_id = coder
        pcoll.windowing_strategy_id = global_id
        pcoll.is_bounded = beam_runner_api_pb2.IsBounded.BOUNDED
    strategy = pbd.windowing_strategies[global_id]
    strategy.window_fn.urn = urns.GLOBAL_WINDOWS
    strategy.window_coder_id = global_id
    strategy.merge_status = beam_runner_api_pb2.MergeStatus.NON_MERGING
    strategy.trigger.default.SetInParent()
    strategy.accumulation_mode = beam_runner_api_pb2.AccumulationMode.DISCARDING
    strategy.output_time = beam_runner_api_pb2.OutputTime.END_OF_WINDOW
    strategy.closing_behavior = beam_runner_api_pb2.ClosingBehavior.EMIT_IF_NONEMPTY
    strategy.on_time_behavior = beam_runner_api_pb2.OnTimeBehavior.FIRE_IF_NONEMPTY
    for env_id, env in components.environments.items():
        pbd.environments[env_id].CopyFrom(env)
    # No state is read, but an SDK harness out of process opens the state channel the descriptor
    # names all the same: without an address, its reading thread fails on the empty one.
    pbd.state_api_service_descriptor.url = endpoint
    data_port(
        pbd,
        f"{descriptor_id}/input",
        urns.DATA_INPUT,
        f"{prefix}/wire/request",
        endpoint,
        outputs={"out": f"{prefix}/request"},
    )
    transform = pbd.transforms[f"{descriptor_id}/{prefix}"]
    transform.unique_name = f"{descriptor_id}/{prefix}"
    transform.spec.urn = urn
    transform.spec.payload = fn.SerializeToString()
    transform.inputs["in"] = f"{prefix}/request"
    transform.outputs["out"] = f"{prefix}/answer"
    data_port(
        pbd,
        f"{descriptor_id}/output",
        urns.DATA_OUTPUT,
        f"{prefix}/wire/answer",
        endpoint,
        inputs={"in": f"{prefix}/answer"},
    )
    return pbd


def _coder(pbd, coder_id: str, urn: str, *parts: str) -> None:
    pbd.coders[coder_id].spec.urn = urn
    pbd.coders[coder_id].component_coder_ids.extend(parts)
