"""Custom merging WindowFns: the SDK merges windows for the runner (beam:transform:merge_windows:v1).

The runner cannot run a user's merge(): it sends KV(nonce, iterable of windows) to a one-transform
bundle and gets back KV(nonce, KV(unmerged windows, iterable of KV(merge result, its originals)))
(the shape of Beam's Python SDK harness), which it turns into {window: window it merged into}.
"""

from __future__ import annotations

from apache_beam.coders import coders
from apache_beam.coders.coder_impl import create_InputStream
from apache_beam.portability.api import beam_fn_api_pb2, beam_runner_api_pb2
from apache_beam.transforms import window as beam_window
from apache_beam.utils import windowed_value

from reference_runner.graph import urns
from reference_runner.graph.descriptors import data_port, name_by_content
from reference_runner.worker import attempt, codecs

_GLOBAL = "merge/global"


class MergeFailed(RuntimeError):
    """The SDK could not merge a GroupByKey's windows (the WindowFn's error included)."""


class WindowMerger:
    """Calls the SDK to merge the windows of one GroupByKey's input; engine windows in and out."""

    def __init__(
        self,
        worker,
        descriptor_id: str,
        ws: beam_runner_api_pb2.WindowingStrategy,
        components: beam_runner_api_pb2.Components,
        window_coder: coders.Coder,
        endpoint: str = "embedded",
    ):
        self._worker = worker
        self._window_impl = window_coder.get_impl()
        self._in = coders.WindowedValueCoder(
            coders.TupleCoder([coders.BytesCoder(), coders.IterableCoder(window_coder)]), coders.GlobalWindowCoder()
        ).get_impl()
        self._out = coders.WindowedValueCoder(
            coders.TupleCoder(
                [
                    coders.BytesCoder(),
                    coders.TupleCoder(
                        [
                            coders.IterableCoder(window_coder),
                            coders.IterableCoder(coders.TupleCoder([window_coder, coders.IterableCoder(window_coder)])),
                        ]
                    ),
                ]
            ),
            coders.GlobalWindowCoder(),
        ).get_impl()
        descriptor = _descriptor(descriptor_id, ws, components, endpoint)
        self._ports = descriptor_id  # the data ports are named after the id asked for
        self._id = name_by_content(descriptor)
        worker.register(descriptor)
        self._calls = 0

    def __call__(self, engine_windows: list) -> dict:
        """{engine window: the engine window it merges into} for every window given."""
        beam_windows = [codecs.from_engine_window(w, self._window_impl) for w in engine_windows]
        self._calls += 1
        nonce = str(self._calls).encode()
        element = windowed_value.WindowedValue(
            (nonce, beam_windows), windowed_value.MIN_TIMESTAMP, (beam_window.GlobalWindow(),)
        )
        try:
            result = attempt.run(
                self._worker, self._id, f"{self._ports}/input", [codecs.encode_nested(self._in, element)]
            )
        except attempt.AttemptFailed as e:
            raise MergeFailed(f"merging windows in the SDK failed: {e}") from None
        data = result.data.get(f"{self._ports}/output", b"")
        [answer] = [
            self._out.decode_from_stream(create_InputStream(e), True).value
            for e in codecs.split_elements(self._out, data)
        ]
        got_nonce, (_, merged) = answer
        assert got_nonce == nonce, "the merge answer is for another request"
        mapping = {original: original for original in beam_windows}  # unmerged windows stay
        for result, originals in merged:
            for original in originals:
                mapping[original] = result
        return {
            codecs.to_engine_window(o, self._window_impl): codecs.to_engine_window(m, self._window_impl)
            for o, m in mapping.items()
        }


def _descriptor(descriptor_id: str, ws, components, endpoint: str) -> beam_fn_api_pb2.ProcessBundleDescriptor:
    pbd = beam_fn_api_pb2.ProcessBundleDescriptor(id=descriptor_id)
    for key, value in components.coders.items():
        pbd.coders[key].CopyFrom(value)
    w = ws.window_coder_id
    _coder(pbd, "merge/bytes", urns.BYTES_CODER)
    _coder(pbd, _GLOBAL, urns.GLOBAL_WINDOW_CODER)
    _coder(pbd, "merge/windows", urns.ITERABLE_CODER, w)
    _coder(pbd, "merge/request", urns.KV_CODER, "merge/bytes", "merge/windows")
    _coder(pbd, "merge/merged", urns.KV_CODER, w, "merge/windows")
    _coder(pbd, "merge/merges", urns.ITERABLE_CODER, "merge/merged")
    _coder(pbd, "merge/result", urns.KV_CODER, "merge/windows", "merge/merges")
    _coder(pbd, "merge/answer", urns.KV_CODER, "merge/bytes", "merge/result")
    for name, coder in (("request", "merge/request"), ("answer", "merge/answer")):
        _coder(pbd, f"merge/wire/{name}", urns.WINDOWED_VALUE_CODER, coder, _GLOBAL)
        pcoll = pbd.pcollections[f"merge/{name}"]
        pcoll.unique_name = f"merge/{name}"
        pcoll.coder_id = coder
        pcoll.windowing_strategy_id = _GLOBAL
        pcoll.is_bounded = beam_runner_api_pb2.IsBounded.BOUNDED
    strategy = pbd.windowing_strategies[_GLOBAL]
    strategy.window_fn.urn = urns.GLOBAL_WINDOWS
    strategy.window_coder_id = _GLOBAL
    strategy.merge_status = beam_runner_api_pb2.MergeStatus.NON_MERGING
    strategy.trigger.default.SetInParent()
    strategy.accumulation_mode = beam_runner_api_pb2.AccumulationMode.DISCARDING
    strategy.output_time = beam_runner_api_pb2.OutputTime.END_OF_WINDOW
    strategy.closing_behavior = beam_runner_api_pb2.ClosingBehavior.EMIT_IF_NONEMPTY
    strategy.on_time_behavior = beam_runner_api_pb2.OnTimeBehavior.FIRE_IF_NONEMPTY
    for env_id, env in components.environments.items():
        pbd.environments[env_id].CopyFrom(env)
    data_port(
        pbd, f"{descriptor_id}/input", urns.DATA_INPUT, "merge/wire/request", endpoint, outputs={"out": "merge/request"}
    )
    merge = pbd.transforms[f"{descriptor_id}/merge"]
    merge.unique_name = f"{descriptor_id}/merge"
    merge.spec.urn = urns.MERGE_WINDOWS
    merge.spec.payload = ws.window_fn.SerializeToString()
    merge.inputs["in"] = "merge/request"
    merge.outputs["out"] = "merge/answer"
    data_port(
        pbd, f"{descriptor_id}/output", urns.DATA_OUTPUT, "merge/wire/answer", endpoint, inputs={"in": "merge/answer"}
    )
    return pbd


def _coder(pbd, coder_id: str, urn: str, *parts: str) -> None:
    pbd.coders[coder_id].spec.urn = urn
    pbd.coders[coder_id].component_coder_ids.extend(parts)
