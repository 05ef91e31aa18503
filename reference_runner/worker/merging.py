"""Custom merging WindowFns: the SDK merges windows for the runner (beam:transform:merge_windows:v1).

The runner cannot run a user's merge(): it sends KV(nonce, iterable of windows) to a one-transform
bundle and gets back KV(nonce, KV(unmerged windows, iterable of KV(merge result, its originals)))
(the shape of Beam's Python SDK harness), which it turns into {window: window it merged into}.
"""

from __future__ import annotations

from apache_beam.coders import coders
from apache_beam.portability.api import beam_runner_api_pb2

from reference_runner.graph import urns
from reference_runner.graph.descriptors import EMBEDDED_ENDPOINT
from reference_runner.worker import attempt, codecs, sdk_transform


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
        endpoint: str = EMBEDDED_ENDPOINT,
    ):
        self._window_impl = window_coder.get_impl()
        self._in = sdk_transform.windowed(coders.TupleCoder([coders.BytesCoder(), coders.IterableCoder(window_coder)]))
        self._out = sdk_transform.windowed(
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
            )
        )
        w = ws.window_coder_id
        parts = {
            "merge/bytes": (urns.BYTES_CODER,),
            "merge/windows": (urns.ITERABLE_CODER, w),
            "merge/request": (urns.KV_CODER, "merge/bytes", "merge/windows"),
            "merge/merged": (urns.KV_CODER, w, "merge/windows"),
            "merge/merges": (urns.ITERABLE_CODER, "merge/merged"),
            "merge/result": (urns.KV_CODER, "merge/windows", "merge/merges"),
            "merge/answer": (urns.KV_CODER, "merge/bytes", "merge/result"),
        }
        self._sdk = sdk_transform.SdkTransform(
            worker,
            descriptor_id,
            components,
            urns.MERGE_WINDOWS,
            ws.window_fn,
            parts,
            "merge/request",
            "merge/answer",
            "merge",
            endpoint,
        )
        self._calls = 0

    def __call__(self, engine_windows: list) -> dict:
        """{engine window: the engine window it merges into} for every window given."""
        beam_windows = [codecs.from_engine_window(w, self._window_impl) for w in engine_windows]
        self._calls += 1
        nonce = str(self._calls).encode()
        try:
            data = self._sdk.run([sdk_transform.in_global_window(self._in, (nonce, beam_windows))])
        except attempt.AttemptFailed as e:
            raise MergeFailed(f"merging windows in the SDK failed: {e}") from None
        [answer] = sdk_transform.answers(self._out, data)
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
