"""Stateful ParDo and timers on the reference runner: whole pipelines, the state service's
per-bundle staging, and the engine's timer store."""

import apache_beam as beam
import pytest
from apache_beam.coders import coders
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.portability.api import beam_fn_api_pb2
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms import window
from apache_beam.transforms.timeutil import TimeDomain
from apache_beam.transforms.userstate import BagStateSpec, ReadModifyWriteStateSpec, TimerSpec, on_timer

from reference_runner import ReferenceRunner
from reference_runner.engine import manager
from reference_runner.engine.timers import TimerId, TimerStore, TimerUpdate
from reference_runner.graph.check import UnsupportedPipeline
from reference_runner.worker.state import StateService

# --------------------------------------------------------------------------- whole pipelines


class _SessionTotals(beam.DoFn):
    """Buffers each key's values per window; a timer at the window's end emits their sum and
    count, then re-arms once 5 s later to report that the buffer was cleared."""

    BUF = BagStateSpec("buf", coders.VarIntCoder())
    FLUSHED = ReadModifyWriteStateSpec("flushed", coders.BooleanCoder())
    FLUSH = TimerSpec("flush", TimeDomain.WATERMARK)

    def process(self, kv, buf=beam.DoFn.StateParam(BUF), flush=beam.DoFn.TimerParam(FLUSH), w=beam.DoFn.WindowParam):
        buf.add(kv[1])
        flush.set(w.end - 5)

    @on_timer(FLUSH)
    def on_flush(
        self,
        key=beam.DoFn.KeyParam,
        ts=beam.DoFn.TimestampParam,
        buf=beam.DoFn.StateParam(BUF),
        flushed=beam.DoFn.StateParam(FLUSHED),
        flush=beam.DoFn.TimerParam(FLUSH),
    ):
        values = list(buf.read())
        if flushed.read():
            yield key, ("after", len(values))
            return
        yield key, ("sum", sum(values), len(values))
        buf.clear()
        flushed.write(True)
        flush.set(ts + 3)


@pytest.mark.parametrize("fuse", [True, False])
def test_stateful_pipeline_result(fuse):
    data = [("a", 1, 1), ("a", 2, 4), ("b", 5, 2), ("a", 10, 12), ("b", 7, 9)]
    with beam.Pipeline(runner=ReferenceRunner(fuse=fuse)) as p:
        out = (
            p
            | beam.Create(data)
            | beam.Map(lambda e: window.TimestampedValue((e[0], e[1]), e[2]))
            | beam.WindowInto(window.FixedWindows(10))
            | beam.ParDo(_SessionTotals())
            | beam.Map(lambda kv, w=beam.DoFn.WindowParam: (kv[0], kv[1], int(w.start)))
        )
        assert_that(
            out,
            equal_to(
                [
                    ("a", ("sum", 3, 2), 0),
                    ("a", ("after", 0), 0),
                    ("b", ("sum", 12, 2), 0),
                    ("b", ("after", 0), 0),
                    ("a", ("sum", 10, 1), 10),
                    ("a", ("after", 0), 10),
                ]
            ),
        )


class _Count(beam.DoFn):
    COUNT = ReadModifyWriteStateSpec("count", coders.VarIntCoder())

    def process(self, kv, count=beam.DoFn.StateParam(COUNT)):
        n = (count.read() or 0) + 1
        count.write(n)
        yield kv[0], n


def test_stateful_pardo_after_a_group_by_key_counts_per_key():
    # The stateful ParDo heads its own stage behind the GroupByKey's output and still sees one state per key.
    with beam.Pipeline(runner=ReferenceRunner()) as p:
        out = (
            p
            | beam.Create([("a", 1), ("b", 1), ("a", 2)])
            | beam.GroupByKey()
            | beam.MapTuple(lambda k, vs: (k, sum(vs)))
            | beam.Map(lambda kv: kv)
            | beam.ParDo(_Count())
        )
        assert_that(out, equal_to([("a", 1), ("b", 1)]))


def test_non_deterministic_key_coder_is_rejected_by_name():
    p = beam.Pipeline(runner=ReferenceRunner(), options=PipelineOptions(["--allow_non_deterministic_key_coders"]))
    _ = p | beam.Create([({"a": 1}, 0)]) | beam.ParDo(_Count())
    with pytest.raises(UnsupportedPipeline, match=r"ParDo\(_Count\).*key coder .* is not deterministic"):
        p.run()


# --------------------------------------------------------------------------- state service staging


def _bag_key(key=b"\x01k", window=b""):
    return beam_fn_api_pb2.StateKey(
        bag_user_state=beam_fn_api_pb2.StateKey.BagUserState(
            transform_id="t", user_state_id="s", key=key, window=window
        )
    )


def _request(service, bundle, key, **kind):
    response = service.handle(beam_fn_api_pb2.StateRequest(id="1", instruction_id=bundle, state_key=key, **kind))
    assert not response.error, response.error
    return response


def _read(service, bundle, key):
    return _request(service, bundle, key, get=beam_fn_api_pb2.StateGetRequest()).get.data


def _append(service, bundle, key, data):
    _request(service, bundle, key, append=beam_fn_api_pb2.StateAppendRequest(data=data))


def test_state_writes_are_staged_per_bundle_and_discarded_on_failure():
    service, key = StateService(), _bag_key()
    _append(service, "b1", key, b"x")
    assert _read(service, "b1", key) == b"x"  # a bundle reads its own staged writes
    assert _read(service, "b2", key) == b""  # ... which no other bundle sees
    service.discard("b1")  # the bundle failed
    assert _read(service, "b3", key) == b""
    _append(service, "b4", key, b"y")
    _request(service, "b4", key, clear=beam_fn_api_pb2.StateClearRequest())
    _append(service, "b4", key, b"z")
    service.commit("b4")
    assert _read(service, "b5", key) == b"z"
    assert _read(service, "b5", _bag_key(window=b"w")) == b""  # another window, another cell
    assert _read(service, "b5", _bag_key(key=b"\x01j")) == b""  # another key, another cell


def test_ordered_list_state_reads_ranges_in_sort_key_order():
    service = StateService()
    base = beam_fn_api_pb2.StateKey.OrderedListUserState(transform_id="t", user_state_id="l", key=b"k", window=b"")
    whole = beam_fn_api_pb2.StateKey(ordered_list_user_state=base)

    def ranged(start, end):
        key = beam_fn_api_pb2.StateKey()
        key.CopyFrom(whole)
        key.ordered_list_user_state.range.start = start
        key.ordered_list_user_state.range.end = end
        return key

    entry = coders.TupleCoder([coders.VarIntCoder(), coders.LengthPrefixCoder(coders.BytesCoder())]).get_impl()

    def encode(entries):
        from apache_beam.coders.coder_impl import create_OutputStream

        out = create_OutputStream()
        for e in entries:
            entry.encode_to_stream(e, out, True)
        return out.get()

    _append(service, "b1", whole, encode([(30, b"c"), (10, b"a"), (20, b"b"), (10, b"a2")]))
    service.commit("b1")
    assert _read(service, "b2", ranged(0, 100)) == encode([(10, b"a"), (10, b"a2"), (20, b"b"), (30, b"c")])
    assert _read(service, "b2", ranged(15, 30)) == encode([(20, b"b")])
    _request(service, "b2", ranged(10, 20), clear=beam_fn_api_pb2.StateClearRequest())
    assert _read(service, "b2", ranged(0, 100)) == encode([(20, b"b"), (30, b"c")])
    service.discard("b2")
    assert _read(service, "b3", ranged(0, 100)) == encode([(10, b"a"), (10, b"a2"), (20, b"b"), (30, b"c")])


# --------------------------------------------------------------------------- multimap user state
# (the Go and Java SDKs' map, set and multimap state: one map per user key and window)


def _map_keys(key=b"\x01k", window=b"", transform="t"):
    return beam_fn_api_pb2.StateKey(
        multimap_keys_user_state=beam_fn_api_pb2.StateKey.MultimapKeysUserState(
            transform_id=transform, user_state_id="m", key=key, window=window
        )
    )


def _map_values(map_key, key=b"\x01k", window=b"", transform="t"):
    return beam_fn_api_pb2.StateKey(
        multimap_user_state=beam_fn_api_pb2.StateKey.MultimapUserState(
            transform_id=transform, user_state_id="m", key=key, window=window, map_key=map_key
        )
    )


def _map_entries(key=b"\x01k", window=b""):
    return beam_fn_api_pb2.StateKey(
        multimap_entries_user_state=beam_fn_api_pb2.StateKey.MultimapEntriesUserState(
            transform_id="t", user_state_id="m", key=key, window=window
        )
    )


def _clear(service, bundle, key):
    _request(service, bundle, key, clear=beam_fn_api_pb2.StateClearRequest())


def test_multimap_state_serves_values_keys_once_each_and_clears():
    service = StateService()
    _append(service, "b1", _map_values(b"\x01x"), b"\x01")
    _append(service, "b1", _map_values(b"\x01y"), b"\x05")
    _append(service, "b1", _map_values(b"\x01x"), b"\x02\x03")  # a key's values accumulate
    assert _read(service, "b1", _map_values(b"\x01x")) == b"\x01\x02\x03"
    assert _read(service, "b1", _map_values(b"\x01z")) == b""  # an absent key has no values
    # every map key once, in the order each got its first value
    assert _read(service, "b1", _map_keys()) == b"\x01x\x01y"
    _clear(service, "b1", _map_values(b"\x01x"))  # clearing a map key removes it
    assert _read(service, "b1", _map_keys()) == b"\x01y"
    _append(service, "b1", _map_values(b"\x01x"), b"\x04")  # back, after the keys there
    assert _read(service, "b1", _map_keys()) == b"\x01y\x01x"
    assert _read(service, "b1", _map_values(b"\x01x")) == b"\x04"
    service.commit("b1")
    # per user key and window: another key's or window's map is another map
    assert _read(service, "b2", _map_keys(key=b"\x01j")) == b""
    assert _read(service, "b2", _map_keys(window=b"w")) == b""
    assert _read(service, "b2", _map_values(b"\x01y", window=b"w")) == b""
    _append(service, "b2", _map_values(b"\x01q", key=b"\x01j"), b"\x09")
    _clear(service, "b2", _map_keys())  # clearing the keys clears the whole map, and only it
    assert _read(service, "b2", _map_keys()) == b"" and _read(service, "b2", _map_values(b"\x01y")) == b""
    assert _read(service, "b2", _map_keys(key=b"\x01j")) == b"\x01q"
    _append(service, "b2", _map_values(b"\x01z"), b"\x07")  # a cleared map takes new keys
    service.commit("b2")
    assert _read(service, "b3", _map_keys()) == b"\x01z"


def test_a_map_cleared_before_it_had_keys_takes_keys():
    service = StateService()
    _clear(service, "b1", _map_keys())  # (the Java SDK clears a map it never read)
    _append(service, "b1", _map_values(b"\x01x"), b"\x01")
    service.commit("b1")
    assert _read(service, "b2", _map_keys()) == b"\x01x"


def test_multimap_state_writes_are_staged_per_bundle_and_discarded_on_failure():
    service = StateService()
    _append(service, "b1", _map_values(b"\x01x"), b"\x01")
    service.commit("b1")
    _append(service, "b2", _map_values(b"\x01y"), b"\x02")
    _clear(service, "b2", _map_values(b"\x01x"))
    assert _read(service, "b2", _map_keys()) == b"\x01y"  # a bundle reads its own staged writes
    assert _read(service, "b3", _map_keys()) == b"\x01x"  # ... which no other bundle sees
    service.discard("b2")  # the bundle failed: its writes are gone, the committed map is whole
    assert _read(service, "b4", _map_keys()) == b"\x01x"
    assert _read(service, "b4", _map_values(b"\x01x")) == b"\x01"
    _clear(service, "b4", _map_keys())
    service.discard("b4")  # a failed clear of the whole map, likewise
    assert _read(service, "b5", _map_values(b"\x01x")) == b"\x01"


def test_multimap_state_is_released_with_its_window_or_its_transform():
    service = StateService()
    for w in (b"w1", b"w2"):
        _append(service, "b1", _map_values(b"\x01x", window=w), b"\x01")
    _append(service, "b1", _map_values(b"\x01x", transform="u"), b"\x01")
    service.commit("b1")
    service.release_window("t", b"w1")  # the window expired: its map is gone, the others stay
    assert _read(service, "b2", _map_keys(window=b"w1")) == b""
    assert _read(service, "b2", _map_values(b"\x01x", window=b"w1")) == b""
    assert _read(service, "b2", _map_keys(window=b"w2")) == b"\x01x"
    service.release("t")  # the transform's stage finished
    assert _read(service, "b2", _map_keys(window=b"w2")) == b""
    assert _read(service, "b2", _map_keys(transform="u")) == b"\x01x"


def test_a_value_or_map_key_of_no_bytes_reads_back_as_one_zero_byte():
    # the Java SDK's set keeps one Void per element: its append is empty; a stream of elements
    # carries an element of no bytes as one 0 byte, which the SDK's reader expects
    service = StateService()
    _append(service, "b1", _map_values(b"\x01x"), b"")
    service.commit("b1")
    assert _read(service, "b2", _map_keys()) == b"\x01x"  # the element is in the set
    assert _read(service, "b2", _map_values(b"\x01x")) == b"\x00"  # ... and contains() sees it
    _append(service, "b2", _map_values(b""), b"\x01")  # a map key of no bytes, likewise
    assert _read(service, "b2", _map_keys()) == b"\x01x\x00"
    assert _read(service, "b2", _map_values(b"")) == b"\x01"


def _with_map_state(value_coder: coders.Coder):
    """A StateService that knows stateful transform t's map state m, values of ``value_coder``."""
    from apache_beam.portability.api import beam_runner_api_pb2
    from apache_beam.runners.pipeline_context import PipelineContext

    from reference_runner.worker.codecs import Coders

    context = PipelineContext()
    payload = beam_runner_api_pb2.ParDoPayload()
    spec = payload.state_specs["m"].map_spec
    spec.key_coder_id = context.coders.get_id(coders.StrUtf8Coder())
    spec.value_coder_id = context.coders.get_id(value_coder)
    service = StateService()
    service.declare_states("t", payload, Coders(context.to_runner_api()))
    return service


def test_multimap_entries_are_each_key_with_the_iterable_of_its_values():
    # the Java SDK (Beam 2.71's MultimapUserState) decodes them with KvCoder(key, IterableCoder(value))
    service = _with_map_state(coders.VarIntCoder())
    key, value = coders.StrUtf8Coder().get_impl().encode_nested, coders.VarIntCoder().get_impl().encode_nested
    _append(service, "b1", _map_values(key("x")), value(1))
    _append(service, "b1", _map_values(key("y")), value(300))
    _append(service, "b1", _map_values(key("x")), value(2) + value(3))  # two values in one append
    entry = coders.TupleCoder([coders.StrUtf8Coder(), coders.IterableCoder(coders.VarIntCoder())]).get_impl()
    assert _read(service, "b1", _map_entries()) == entry.encode_nested(("x", [1, 2, 3])) + entry.encode_nested(
        ("y", [300])
    )
    _clear(service, "b1", _map_entries())  # clearing the entries clears the whole map
    assert _read(service, "b1", _map_keys()) == b"" and _read(service, "b1", _map_entries()) == b""


def test_multimap_entries_of_values_the_runner_cannot_tell_apart_are_an_error_naming_the_state():
    service = _with_map_state(coders.PickleCoder())
    _append(service, "b1", _map_values(b"\x01x"), b"opaque")
    response = service.handle(
        beam_fn_api_pb2.StateRequest(
            id="1", instruction_id="b1", state_key=_map_entries(), get=beam_fn_api_pb2.StateGetRequest()
        )
    )
    assert "multimap_entries_user_state of state m of t" in response.error


def test_appending_to_a_maps_keys_or_entries_is_an_error():
    service = StateService()
    for key in (_map_keys(), _map_entries()):
        response = service.handle(
            beam_fn_api_pb2.StateRequest(
                id="1", instruction_id="b1", state_key=key, append=beam_fn_api_pb2.StateAppendRequest(data=b"x")
            )
        )
        assert f"unsupported user state request append on {key.WhichOneof('type')}" in response.error


def test_user_state_request_without_a_bundle_is_an_error():
    response = StateService().handle(
        beam_fn_api_pb2.StateRequest(id="1", state_key=_bag_key(), get=beam_fn_api_pb2.StateGetRequest())
    )
    assert "instruction id" in response.error


# --------------------------------------------------------------------------- engine: timers


def _set(key, tag, fire, family="f"):
    return TimerUpdate(TimerId("t", family, key, tag, b""), False, fire, fire, key + f"{tag}{fire}".encode())


def test_timer_store_fires_the_earliest_due_timer_per_key_and_replaces_on_set():
    store = TimerStore()
    store.apply(
        [
            _set(b"k", "x", 30),
            _set(b"k", "y", 10),
            _set(b"j", "x", 20),
            _set(b"k", "x", 40),
            TimerUpdate(TimerId("t", "f", b"j", "x", b""), True),
        ]
    )
    assert store.hold(default=99) == 10
    assert [t.encoded for t in store.take_due(watermark=100)] == [b"ky10"]  # j's timer was cleared
    store.apply([_set(b"k", "z", 5)])  # set by the callback, earlier
    assert [t.encoded for t in store.take_due(watermark=100)] == [b"kz5"]
    assert [t.encoded for t in store.take_due(watermark=35)] == []  # x moved to 40: not due
    assert [t.encoded for t in store.take_due(watermark=100)] == [b"kx40"]
    assert len(store) == 0


def test_timer_bundle_carries_the_timers_a_committed_bundle_set():
    spec = manager.StageSpec("s", manager.StageKind.SDK, ["in"], ["out"], keyed=manager.KeyedSpec("t"))
    em = manager.ElementManager([manager.StageSpec("imp", manager.StageKind.IMPULSE, [], ["in"]), spec])
    em.start({"in": [b"e"]})
    first = em.next_bundle()
    assert em.next_bundle() is None  # a keyed stage runs one bundle at a time
    em.commit(first, {}, timers=[_set(b"k", "", 10)])
    timer_bundle = em.next_bundle()
    assert [t.encoded for t in timer_bundle.timers] == [b"k10"] and not timer_bundle.inputs
    assert not em.done()
    em.commit(timer_bundle, {})
    assert em.next_bundle() is None and em.done()


class _TimerAfterExpiry(beam.DoFn):
    LATE = TimerSpec("late", TimeDomain.WATERMARK)

    def process(self, kv, late=beam.DoFn.TimerParam(LATE), w=beam.DoFn.WindowParam):
        late.set(w.max_timestamp() + 6)  # allowed lateness is 5 s

    @on_timer(LATE)
    def on_late(self):
        yield "never"


def test_timer_set_after_window_expiration_fails_the_job():
    p = beam.Pipeline(runner=ReferenceRunner())
    _ = (
        p
        | beam.Create([("k", 1)])
        | beam.Map(lambda kv: window.TimestampedValue(kv, 1))
        | beam.WindowInto(window.FixedWindows(10), allowed_lateness=5)
        | beam.ParDo(_TimerAfterExpiry())
    )
    with pytest.raises(
        Exception, match=r"timer ts-late of .* set for Timestamp\(15\.999000\), after its window's expiration"
    ):
        p.run()


def test_released_transform_state_is_gone_and_others_stay():
    service, key = StateService(), _bag_key()
    other = beam_fn_api_pb2.StateKey(
        bag_user_state=beam_fn_api_pb2.StateKey.BagUserState(
            transform_id="u", user_state_id="s", key=b"\x01k", window=b""
        )
    )
    _append(service, "b1", key, b"x")
    _append(service, "b1", other, b"y")
    service.commit("b1")
    service.release("t")
    assert _read(service, "b2", key) == b"" and _read(service, "b2", other) == b"y"


def test_time_sorted_stage_receives_elements_in_timestamp_order():
    # key_of: the test's elements are b"<key><timestamp digit>"
    spec = manager.StageSpec(
        "s",
        manager.StageKind.SDK,
        ["in"],
        ["out"],
        keyed=manager.KeyedSpec("t", key_of=lambda e: (e[:1], int(e[1:]), []), time_sorted=True),
    )
    em = manager.ElementManager([manager.StageSpec("imp", manager.StageKind.IMPULSE, [], ["in"]), spec])
    em.start({"in": [b"k5", b"j2", b"k1", b"k3"]})
    bundle = em.next_bundle()
    assert bundle.inputs == [b"k1", b"j2", b"k3", b"k5"]


def test_streaming_keyed_stage_drops_an_element_only_in_its_expired_windows():
    # Elements are (key, timestamp, {window: expiry}); in_windows keeps the windows named. Lateness
    # is judged per window: at watermark 12 a copy in window "a" (expiry 11) is dropped, one in
    # "b" (expiry 16) goes on, an element in expired windows only is dropped whole.
    def key_of(e):
        return e[0], e[1], sorted(e[2].items())

    def in_windows(e, windows):
        return (e[0], e[1], {w: x for w, x in e[2].items() if w in windows})

    spec = manager.StageSpec(
        "s", manager.StageKind.SDK, ["in"], ["out"], keyed=manager.KeyedSpec("t", key_of=key_of, in_windows=in_windows)
    )
    events = [
        (manager.WATERMARK, "in", 11),
        (manager.ELEMENTS, "in", [(b"k", 8, {b"a": 11, b"b": 16})]),
        (manager.WATERMARK, "in", 12),
        (manager.ELEMENTS, "in", [(b"k", 9, {b"a": 11, b"b": 16}), (b"k", 4, {b"a": 11, b"z": 6})]),
    ]
    stream = manager.StageSpec("stream", manager.StageKind.TEST_STREAM, [], ["in"], events=events)
    em = manager.ElementManager([stream, spec])
    em.start({})
    inputs = []
    while True:
        bundle = em.next_bundle()
        if bundle is None:
            if not em.advance_time():
                break
            continue
        inputs += bundle.inputs
        em.commit(bundle, {})
    assert inputs == [(b"k", 8, {b"a": 11, b"b": 16}), (b"k", 9, {b"b": 16})]
    assert em.done()
