"""Side inputs of a user's WindowFn: the SDK maps main windows to side windows for the runner
(beam:transform:map_windows:v1).

The runner cannot run a user's window mapping (its module may not be importable here, or it is
another SDK's): it sends KV(nonce, main window) to a one-transform bundle (worker/sdk_transform.py)
whose payload is the side input's window mapping fn (the ParDo's SideInput.window_mapping_fn), and
gets back KV(nonce, side window), the shape of the SDK harnesses (Python's and Java's). The answer
is exactly the window the DoFn will read, whatever rule the user's WindowFn maps by.
"""

from __future__ import annotations

from apache_beam.coders import coders
from apache_beam.portability.api import beam_runner_api_pb2

from reference_runner.graph import urns
from reference_runner.graph.descriptors import EMBEDDED_ENDPOINT
from reference_runner.worker import attempt, sdk_transform
from reference_runner.worker.codecs import Coders


class MapFailed(RuntimeError):
    """The SDK could not map main windows to a side input's windows (its error included)."""


class WindowMapper:
    """Calls the SDK to map windows of ``main_pcoll`` to those of the side input ``side_pcoll``
    that ``mapping_fn`` (the ParDo's SideInput.window_mapping_fn) maps to; Beam windows in and out,
    the side windows as the runner decodes the side PCollection's window coder."""

    def __init__(
        self,
        worker,
        descriptor_id: str,
        mapping_fn: beam_runner_api_pb2.FunctionSpec,
        runner_coders: Coders,
        main_pcoll: str,
        side_pcoll: str,
        endpoint: str = EMBEDDED_ENDPOINT,
    ):
        self._side_pcoll = side_pcoll
        main_coder, side_coder = runner_coders.window_coder(main_pcoll), runner_coders.window_coder(side_pcoll)
        self._in = sdk_transform.windowed(coders.TupleCoder([coders.BytesCoder(), main_coder]))
        self._out = sdk_transform.windowed(coders.TupleCoder([coders.BytesCoder(), side_coder]))
        components = runner_coders.components
        parts = {
            "map/bytes": (urns.BYTES_CODER,),
            "map/request": (urns.KV_CODER, "map/bytes", _window_coder_id(components, main_pcoll)),
            "map/answer": (urns.KV_CODER, "map/bytes", _window_coder_id(components, side_pcoll)),
        }
        self._sdk = sdk_transform.SdkTransform(
            worker,
            descriptor_id,
            components,
            urns.MAP_WINDOWS,
            mapping_fn,
            parts,
            "map/request",
            "map/answer",
            "map",
            endpoint,
        )

    def __call__(self, main_windows: list) -> list:
        """The side window of each main window, in order: one bundle for them all."""
        requests = [sdk_transform.in_global_window(self._in, (b"%d" % i, w)) for i, w in enumerate(main_windows)]
        try:
            data = self._sdk.run(requests)
        except attempt.AttemptFailed as e:
            raise MapFailed(
                f"mapping main windows to the windows of side input {self._side_pcoll} failed: {e}"
            ) from None
        mapped = dict(sdk_transform.answers(self._out, data))
        missing = [i for i in range(len(main_windows)) if b"%d" % i not in mapped]
        if missing:
            raise MapFailed(
                f"the SDK mapped {len(main_windows) - len(missing)} of {len(main_windows)} main windows to the "
                f"windows of side input {self._side_pcoll}; no answer for {main_windows[missing[0]]}"
            )
        return [mapped[b"%d" % i] for i in range(len(main_windows))]


def _window_coder_id(components: beam_runner_api_pb2.Components, pcoll: str) -> str:
    return components.windowing_strategies[components.pcollections[pcoll].windowing_strategy_id].window_coder_id


def mapper_for(worker, stage_prefix: str, stage, runner_coders: Coders, endpoint: str = EMBEDDED_ENDPOINT):
    """A side input of ``stage`` (a PlannedStage) of a user's WindowFn -> the SDK's WindowMapper
    for it, on ``worker`` (descriptor ids under ``stage_prefix``): what stage_specs.engine_spec
    takes as side_mapper (called only for a stage reading side inputs, so one with a main input)."""

    def mapper(side) -> WindowMapper:
        return WindowMapper(
            worker,
            f"{stage_prefix}/map_windows/{side.transform_id}/{side.tag}",
            beam_runner_api_pb2.FunctionSpec.FromString(side.window_mapping_fn),
            runner_coders,
            stage.inputs[0],
            side.pcoll,
            endpoint,
        )

    return mapper
