"""Unit tests of the runner's encoded-element helpers (worker/codecs.py). Expected bytes follow
the standard coders' encodings (Beam's standard_coders.yaml): varints, length prefixes,
millisecond timestamps with the sign bit flipped."""

from __future__ import annotations

import pytest
from apache_beam.coders import coders
from apache_beam.portability.api import beam_runner_api_pb2
from apache_beam.transforms.window import GlobalWindow, IntervalWindow
from apache_beam.utils.timestamp import Timestamp
from apache_beam.utils.windowed_value import PaneInfo, PaneInfoTiming, WindowedValue

from reference_runner.engine import windows as engine_windows
from reference_runner.engine.grouping import Pane
from reference_runner.graph import urns
from reference_runner.worker.codecs import (
    Coders,
    GroupCodec,
    KeysFromBytesConversion,
    KeysToBytesConversion,
    OpaqueCoder,
    Transcoder,
    split_elements,
)

PICKLED = "beam:coder:pickled_python:v1"


def _components(**coders_by_id: tuple[str, list[str]]) -> beam_runner_api_pb2.Components:
    components = beam_runner_api_pb2.Components()
    for cid, (urn, parts) in coders_by_id.items():
        components.coders[cid].spec.urn = urn
        components.coders[cid].component_coder_ids.extend(parts)
    return components


def _timestamp_bytes(millis: int) -> bytes:
    """A timestamp as the standard coders write it: milliseconds, big endian, sign bit flipped."""
    return (millis + 2**63).to_bytes(8, "big")


def _parts(wv: WindowedValue) -> tuple:
    """What a windowed value holds: value, timestamp in micros, windows, pane."""
    return wv.value, wv.timestamp.micros, tuple(wv.windows), wv.pane_info


# -- split_elements -----------------------------------------------------------------------------


def test_split_varints_at_their_encoded_lengths():
    data = b"\x00" + b"\x7f" + b"\x80\x01" + b"\xac\x02" + b"\xff" * 9 + b"\x01"  # 0, 127, 128, 300, -1
    assert split_elements(coders.VarIntCoder().get_impl(), data) == [
        b"\x00",
        b"\x7f",
        b"\x80\x01",
        b"\xac\x02",
        b"\xff" * 9 + b"\x01",
    ]


def test_split_nested_strings_and_iterables():
    strings = b"\x00" + b"\x02ab" + b"\x02\xc3\xa9"  # "", "ab", "é"
    assert split_elements(coders.StrUtf8Coder().get_impl(), strings) == [b"\x00", b"\x02ab", b"\x02\xc3\xa9"]
    iterables = b"\x00\x00\x00\x02\x01\x02" + b"\x00\x00\x00\x00"  # [1, 2], []
    assert split_elements(coders.IterableCoder(coders.VarIntCoder()).get_impl(), iterables) == [
        b"\x00\x00\x00\x02\x01\x02",
        b"\x00\x00\x00\x00",
    ]


def test_split_an_empty_stream_gives_no_elements():
    assert split_elements(coders.VarIntCoder().get_impl(), b"") == []


def test_split_kvs_whose_value_coder_the_runner_does_not_know_by_their_length_prefix():
    c = Coders(
        _components(
            s=(urns.STRING_UTF8_CODER, []),
            u=(PICKLED, []),
            lp=(urns.LENGTH_PREFIX_CODER, ["u"]),
            kv=(urns.KV_CODER, ["s", "lp"]),
        )
    )
    one, two = b"\x01k" + b"\x03\x80\x04x", b"\x00" + b"\x00"  # ("k", 3 opaque bytes), ("", none)
    assert split_elements(c.coder("kv").get_impl(), one + two) == [one, two]


def test_split_windowed_values_in_interval_windows():
    wv = coders.WindowedValueCoder(coders.VarIntCoder(), coders.IntervalWindowCoder())
    first = WindowedValue(1, Timestamp(micros=1000), (IntervalWindow(0, 10), IntervalWindow(5, 15)))
    second = WindowedValue(300, Timestamp(micros=7000), (IntervalWindow(0, 10),))
    encoded = [wv.get_impl().encode_nested(v) for v in (first, second)]
    pieces = split_elements(wv.get_impl(), b"".join(encoded))
    assert pieces == encoded
    assert [_parts(wv.get_impl().decode_nested(p)) for p in pieces] == [_parts(first), _parts(second)]


# -- GroupCodec ---------------------------------------------------------------------------------


def _group_codec(window_coder: coders.Coder) -> tuple[GroupCodec, coders.WindowedValueCoder, coders.WindowedValueCoder]:
    source = coders.WindowedValueCoder(coders.TupleCoder([coders.StrUtf8Coder(), coders.VarIntCoder()]), window_coder)
    target = coders.WindowedValueCoder(
        coders.TupleCoder([coders.StrUtf8Coder(), coders.IterableCoder(coders.VarIntCoder())]), window_coder
    )
    return GroupCodec(source, target), source, target


def test_group_codec_splits_an_element_in_the_global_window():
    codec, source, _ = _group_codec(coders.GlobalWindowCoder())
    element = source.get_impl().encode_nested(WindowedValue(("ab", 7), Timestamp(micros=5000), (GlobalWindow(),)))
    assert codec.split(element) == (b"\x02ab", "ab", 7, 5000, (engine_windows.GLOBAL,))


def test_group_codec_builds_each_pane_with_its_own_timing_and_timestamp():
    codec, _, target = _group_codec(coders.GlobalWindowCoder())
    early = codec.build("ab", [1, 2], 9000, engine_windows.GLOBAL, Pane(True, False, "EARLY", 0, -1))
    late = codec.build("ab", [3], 12000, engine_windows.GLOBAL, Pane(False, True, "LATE", 2, 1))
    again = codec.build("cd", [], 9000, engine_windows.GLOBAL, Pane(True, False, "EARLY", 0, -1))
    decode = target.get_impl().decode_nested
    assert _parts(decode(early)) == (
        ("ab", [1, 2]),
        9000,
        (GlobalWindow(),),
        PaneInfo(True, False, PaneInfoTiming.EARLY, 0, -1),
    )
    assert _parts(decode(late)) == (
        ("ab", [3]),
        12000,
        (GlobalWindow(),),
        PaneInfo(False, True, PaneInfoTiming.LATE, 2, 1),
    )
    assert _parts(decode(again)) == (
        ("cd", []),
        9000,
        (GlobalWindow(),),
        PaneInfo(True, False, PaneInfoTiming.EARLY, 0, -1),
    )
    # and byte for byte what the SDK writes for that windowed value
    assert late == target.get_impl().encode_nested(decode(late))


def test_group_codec_interval_windows_round_trip():
    codec, source, target = _group_codec(coders.IntervalWindowCoder())
    element = source.get_impl().encode_nested(
        WindowedValue(("k", 4), Timestamp(micros=6000), (IntervalWindow(0, 10), IntervalWindow(5, 15)))
    )
    key_bytes, key, value, timestamp, windows = codec.split(element)
    assert (key_bytes, key, value, timestamp) == (b"\x01k", "k", 4, 6000)
    assert list(windows) == [engine_windows.Interval(0, 10_000_000), engine_windows.Interval(5_000_000, 15_000_000)]
    built = codec.build("k", [4], 9_999_000, windows[1], Pane(True, True, "ON_TIME", 0, 0))
    assert _parts(target.get_impl().decode_nested(built)) == (
        ("k", [4]),
        9_999_000,
        (IntervalWindow(5, 15),),
        PaneInfo(True, True, PaneInfoTiming.ON_TIME, 0, 0),
    )


def test_group_codec_keeps_a_custom_window_as_its_encoding_and_max_timestamp():
    codec, source, target = _group_codec(coders.TimestampPrefixingOpaqueWindowCoder())
    window_bytes = _timestamp_bytes(1999) + b"\x03abc"  # max timestamp 1.999 s, then the user's encoding
    [custom] = (coders.TimestampPrefixingOpaqueWindowCoder().get_impl().decode_nested(window_bytes),)
    element = source.get_impl().encode_nested(WindowedValue(("k", 1), Timestamp(micros=1000), (custom,)))
    _, _, _, _, windows = codec.split(element)
    assert list(windows) == [engine_windows.OpaqueWindow(window_bytes, 1_999_000)]
    built = target.get_impl().decode_nested(
        codec.build("k", [1], 1_999_000, windows[0], Pane(True, True, "ON_TIME", 0, 0))
    )
    [window] = built.windows
    assert (window.encoded_window, window.max_timestamp().micros) == (b"abc", 1_999_000)
    assert built.value == ("k", [1]) and built.timestamp.micros == 1_999_000


# -- re-encoding --------------------------------------------------------------------------------


def test_transcoder_rewrites_the_element_with_the_target_coder():
    source = coders.WindowedValueCoder(coders.VarIntCoder(), coders.GlobalWindowCoder())
    target = coders.WindowedValueCoder(coders.LengthPrefixCoder(coders.VarIntCoder()), coders.GlobalWindowCoder())
    wv = WindowedValue(300, Timestamp(micros=2000), (GlobalWindow(),))
    out = Transcoder(source, target)(source.get_impl().encode_nested(wv))
    assert out == target.get_impl().encode_nested(wv)
    assert out.endswith(b"\x02\xac\x02"), "the value is length-prefixed now"


def test_keys_to_bytes_and_back_are_inverse_and_keep_time_window_and_pane():
    window = coders.IntervalWindowCoder()
    typed = coders.WindowedValueCoder(coders.TupleCoder([coders.StrUtf8Coder(), coders.VarIntCoder()]), window)
    as_bytes = coders.WindowedValueCoder(coders.TupleCoder([coders.BytesCoder(), coders.VarIntCoder()]), window)
    pane = PaneInfo(False, False, PaneInfoTiming.EARLY, 3, -1)
    wv = WindowedValue(("ab", 5), Timestamp(micros=4000), (IntervalWindow(0, 10),), pane)
    original = typed.get_impl().encode_nested(wv)
    rekeyed = KeysToBytesConversion(typed, as_bytes)(original)
    assert _parts(as_bytes.get_impl().decode_nested(rekeyed)) == ((b"\x02ab", 5), 4000, (IntervalWindow(0, 10),), pane)
    assert KeysFromBytesConversion(as_bytes, typed)(rekeyed) == original


# -- Coders: the runner's view of a pipeline's coders --------------------------------------------


def test_coders_refuse_a_coder_that_is_not_standard():
    c = Coders(_components(s=(urns.STRING_UTF8_CODER, []), u=(PICKLED, []), kv=(urns.KV_CODER, ["s", "u"])))
    with pytest.raises(OpaqueCoder, match=f"coder u \\({PICKLED}\\) is not a standard coder"):
        c.coder("u")
    with pytest.raises(OpaqueCoder, match="coder u "):  # found inside a structure too
        c.coder("kv")
    assert not c.readable("u") and not c.readable("kv") and c.readable("s")


def test_coders_read_an_unknown_coder_behind_a_length_prefix_as_bytes():
    c = Coders(_components(u=(PICKLED, []), lp=(urns.LENGTH_PREFIX_CODER, ["u"]), w=(urns.CUSTOM_WINDOW_CODER, [])))
    assert c.readable("lp") and c.coder("lp") == coders.LengthPrefixCoder(coders.BytesCoder())
    assert c.coder("lp") is c.coder("lp"), "built once"
    assert c.coder("w") == coders.TimestampPrefixingOpaqueWindowCoder()


def test_coders_give_the_windowed_coder_of_a_pcollection():
    components = _components(v=(urns.VARINT_CODER, []), iw=(urns.INTERVAL_WINDOW_CODER, []))
    components.windowing_strategies["ws"].window_coder_id = "iw"
    components.pcollections["p"].coder_id = "v"
    components.pcollections["p"].windowing_strategy_id = "ws"
    c = Coders(components)
    assert c.windowed("p") == coders.WindowedValueCoder(coders.VarIntCoder(), coders.IntervalWindowCoder())
    assert c.window_coder("p") == coders.IntervalWindowCoder()


def test_event_reader_of_a_kv_with_an_opaque_value_reads_the_key_and_hands_back_the_rest():
    c = Coders(
        _components(
            s=(urns.STRING_UTF8_CODER, []),
            v=(urns.VARINT_CODER, []),
            u=(PICKLED, []),
            kv=(urns.KV_CODER, ["v", "u"]),
            nested=(urns.KV_CODER, ["s", "kv"]),
            plain=(urns.KV_CODER, ["s", "v"]),
        )
    )
    assert c.event_reader("kv", nested=False)(b"\xac\x02" + b"\x80\x04opaque") == (300, b"\x80\x04opaque")
    assert c.event_reader("nested", nested=False)(b"\x01k" + b"\x05" + b"tail") == ("k", (5, b"tail"))
    assert c.event_reader("u", nested=False)(b"all of it") == b"all of it"
    assert c.event_reader("plain", nested=False)(b"\x01k\x05") == ("k", 5), "a readable coder decodes as it is"


def test_event_reader_refuses_an_opaque_key_when_asked_not_per_element():
    c = Coders(_components(v=(urns.VARINT_CODER, []), u=(PICKLED, []), vk=(urns.KV_CODER, ["u", "v"])))
    with pytest.raises(OpaqueCoder, match="its key coder u"):
        c.event_reader("vk", nested=False)
    with pytest.raises(OpaqueCoder, match="a part of it is not standard"):  # nor ends an iterable
        Coders(_components(u=(PICKLED, []), it=(urns.ITERABLE_CODER, ["u"]))).event_reader("it", nested=False)


def test_event_reader_in_the_nested_context_reads_events_as_the_go_sdk_writes_them():
    # Go's coders have the nested context only: a string or bytes carries its length, and a
    # custom coder's bytes a varint length before them (graph/sdks.py)
    c = Coders(
        _components(
            s=(urns.STRING_UTF8_CODER, []),
            b=(urns.BYTES_CODER, []),
            g=(urns.GO_CUSTOM_CODER, []),
            row=("beam:coder:row:v1", []),
            kv=(urns.KV_CODER, ["g", "s"]),
            krow=(urns.KV_CODER, ["s", "row"]),
        )
    )
    assert c.event_reader("s", nested=True)(b"\x01a") == "a"
    assert c.event_reader("s", nested=False)(b"\x01a") == "\x01a", "the outer context reads it all"
    assert c.event_reader("b", nested=True)(b"\x03abc") == b"abc"
    assert c.event_reader("g", nested=True)(b"\x01T") == b"T", "the custom coder's bytes, without Go's prefix"
    assert c.event_reader("g", nested=False)(b"\x01T") == b"\x01T"
    assert c.event_reader("kv", nested=True)(b"\x01k" + b"\x02ab") == (b"k", "ab"), "a Go custom key ends"
    assert c.event_reader("krow", nested=True)(b"\x01k" + b"\x02\x00\x01a") == ("k", b"\x02\x00\x01a")


@pytest.mark.parametrize("window_coder", [coders.GlobalWindowCoder(), coders.IntervalWindowCoder()])
def test_group_codec_reads_the_key_bytes_of_every_pane_encoding_as_split_does(window_coder):
    codec, source, _ = _group_codec(window_coder)
    windows = (
        (GlobalWindow(),)
        if isinstance(window_coder, coders.GlobalWindowCoder)
        else (
            IntervalWindow(0, 10),
            IntervalWindow(5, 15),
        )
    )
    panes = [
        PaneInfo(True, True, PaneInfoTiming.ON_TIME, 0, 0),  # one byte
        PaneInfo(False, False, PaneInfoTiming.LATE, 300, 300),  # one index
        PaneInfo(False, False, PaneInfoTiming.EARLY, 300, -1),  # two indices
    ]
    for key in ("", "k", "a longer key " * 20):
        for pane in panes:
            element = source.get_impl().encode_nested(WindowedValue((key, 2**40), Timestamp(micros=-7), windows, pane))
            assert codec.key_bytes(element) == codec.split(element)[0]
