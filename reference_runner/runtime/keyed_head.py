"""A stage headed by a stateful ParDo: its keys, windows and timers, as the engine needs them.

The engine sees timers as plain records (engine.timers.TimerUpdate) carrying the encoded
timer the SDK sent; this module decodes the SDK's timer streams into those records, and
encodes the runner's own OnWindowExpiration timers.
"""

from __future__ import annotations

from apache_beam.coders.coder_impl import create_InputStream
from apache_beam.portability.api import beam_runner_api_pb2
from apache_beam.transforms import userstate
from apache_beam.utils import windowed_value
from apache_beam.utils.timestamp import Timestamp

from reference_runner.engine import manager
from reference_runner.engine.timers import TimerId, TimerUpdate
from reference_runner.engine.windows import END_OF_GLOBAL_WINDOW
from reference_runner.graph.pipeline import Transform
from reference_runner.worker.codecs import Coders, encode_nested, max_timestamp


class TimerPastExpiration(ValueError):
    """An event-time timer set after its window expires: it could never fire (Beam rejects it)."""


class KeyedHead:
    """The stateful ParDo heading a stage, as the runner reads its data: the key and window of an
    element, its timer families decoded into the engine's TimerUpdates and back, its time-sorted
    input and window-expiration settings (a KeyedSpec for the engine)."""

    @classmethod
    def of(cls, head_id: str, coders: Coders) -> KeyedHead:
        """The stage headed by stateful ParDo ``head_id`` (PlannedStage.keyed_head)."""
        return cls(Transform(head_id, coders.components.transforms[head_id]), coders)

    def __init__(self, head: Transform, coders: Coders):
        """``head``: the stateful ParDo at the head of the stage; ``coders``: of the pipeline's
        components (all a process without a PipelineGraph, e.g. a Spark executor, has)."""
        payload = head.pardo_payload()
        assert payload is not None  # a stateful ParDo
        [main] = head.main_inputs()
        wv_coder = coders.windowed(main)
        self.transform = head.id
        self._wv = wv_coder.get_impl()
        self._key = wv_coder.key_coder().get_impl()
        self._window = wv_coder.window_coder
        pcoll = coders.components.pcollections[main]
        self._lateness = coders.components.windowing_strategies[pcoll.windowing_strategy_id].allowed_lateness * 1000
        self._families = {
            family: coders.element(spec.timer_family_coder_id).get_impl()
            for family, spec in payload.timer_family_specs.items()
        }
        self._processing = {
            family
            for family, spec in payload.timer_family_specs.items()
            if spec.time_domain != beam_runner_api_pb2.TimeDomain.EVENT_TIME
        }
        self.time_sorted = payload.requires_time_sorted_input
        self.expiry_family = payload.on_window_expiration_timer_family_spec or None

    def spec(self) -> manager.KeyedSpec:
        return manager.KeyedSpec(
            self.transform,
            self.key_of,
            self.time_sorted,
            self.expiry_family,
            self.expiry_timer if self.expiry_family else None,
            self.in_windows,
            self._lateness,
        )

    # -- elements ----------------------------------------------------------------------------
    def key_of(self, element: bytes):
        """-> (encoded key, timestamp, [(encoded window, the window's expiry time)])"""
        wv = self._wv.decode_from_stream(create_InputStream(element), True)
        key = encode_nested(self._key, wv.value[0])
        return key, wv.timestamp.micros, [(self._window.encode(w), self._expiry(w)) for w in wv.windows]

    def in_windows(self, element: bytes, windows: list[bytes]) -> bytes:
        """The element in only those of its windows whose encodings are given (the rest dropped)."""
        wv = self._wv.decode_from_stream(create_InputStream(element), True)
        kept = tuple(w for w in wv.windows if self._window.encode(w) in windows)
        return encode_nested(self._wv, windowed_value.WindowedValue(wv.value, wv.timestamp, kept, wv.pane_info))

    def _expiry(self, window) -> int:
        # State lives until max timestamp + allowed lateness, never past the end of the global window.
        return min(max_timestamp(window) + self._lateness, END_OF_GLOBAL_WINDOW)

    # -- timers ------------------------------------------------------------------------------
    def decode_timers(self, raw: dict) -> list[TimerUpdate]:
        """The timer streams a bundle wrote ({(transform, family): bytes}) -> updates, in order."""
        updates = []
        for where, data in raw.items():
            if not isinstance(where, tuple):
                continue  # element data, not timers
            transform, family = where
            impl, data = self._families[family], bytes(data)
            stream, total, start = create_InputStream(data), len(data), 0
            while stream.size() > 0:
                timer = impl.decode_from_stream(stream, True)
                end = total - stream.size()
                tid = TimerId(
                    transform,
                    family,
                    encode_nested(self._key, timer.user_key),
                    timer.dynamic_timer_tag,
                    self._window.encode(timer.windows[0]),
                )
                expiry = self._expiry(timer.windows[0])
                if timer.clear_bit:
                    updates.append(TimerUpdate(tid, True, expiry=expiry))
                else:
                    fire = timer.fire_timestamp.micros
                    hold = fire if timer.hold_timestamp is None else timer.hold_timestamp.micros
                    processing = family in self._processing  # fires at a processing time: no bound
                    # The window's end itself is allowed (one microsecond past its max timestamp):
                    # Beam's Python GroupIntoBatches sets its flush timer at window.end.
                    if fire > expiry + 1 and not processing:
                        raise TimerPastExpiration(
                            f"timer {family}{'/' + timer.dynamic_timer_tag if timer.dynamic_timer_tag else ''} "
                            f"of {transform} set for {timer.fire_timestamp}, after its window's expiration "
                            f"{Timestamp(micros=expiry)} (max timestamp + allowed lateness)"
                        )
                    updates.append(TimerUpdate(tid, False, fire, hold, data[start:end], processing, expiry))
                start = end
        return updates

    @staticmethod
    def timer_streams(timers) -> dict:
        """Due timers (engine.timers.Timer) -> {(transform, family): encoded timers} to send."""
        streams: dict = {}
        for t in timers:
            streams.setdefault((t.id.transform, t.id.family), bytearray()).extend(t.encoded)
        return {where: bytes(data) for where, data in streams.items()}

    def expiry_timer(self, key: bytes, window: bytes, time: int) -> bytes:
        timer = userstate.Timer(
            user_key=self._key.decode_from_stream(create_InputStream(key), True),
            dynamic_timer_tag="",
            windows=(self._window.decode(window),),
            clear_bit=False,
            fire_timestamp=Timestamp(micros=time),
            hold_timestamp=Timestamp(micros=time),
            paneinfo=windowed_value.PANE_INFO_UNKNOWN,
        )
        return encode_nested(self._families[self.expiry_family], timer)
