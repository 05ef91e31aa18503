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
