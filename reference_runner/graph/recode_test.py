"""The rule "can the runner re-encode coder A as coder B itself" (graph/recode.py), and which SDK
wrote a part of a pipeline (graph/sdks.py)."""

import pytest
from apache_beam.portability.api import beam_runner_api_pb2

from reference_runner.graph import recode, sdks, urns

JAVA_CODER = "beam:coders:javasdk:0.1"


def _components(**coders) -> beam_runner_api_pb2.Components:
    """Coders by id: id=(urn, [component ids]) or (urn, [component ids], payload)."""
    components = beam_runner_api_pb2.Components()
    for coder_id, (urn, parts, *payload) in coders.items():
        components.coders[coder_id].spec.urn = urn
        components.coders[coder_id].spec.payload = payload[0] if payload else b""
        components.coders[coder_id].component_coder_ids.extend(parts)
    return components


C = _components(
    s=(urns.STRING_UTF8_CODER, []),
    s2=(urns.STRING_UTF8_CODER, []),
    v=(urns.VARINT_CODER, []),
    b=(urns.BYTES_CODER, []),
    lp_s=(urns.LENGTH_PREFIX_CODER, ["s"]),
    lp_v=(urns.LENGTH_PREFIX_CODER, ["v"]),
    lp_b=(urns.LENGTH_PREFIX_CODER, ["b"]),
    kv_sv=(urns.KV_CODER, ["s", "v"]),
    kv_lps_v=(urns.KV_CODER, ["lp_s", "v"]),
    kv_s_lpv=(urns.KV_CODER, ["s", "lp_v"]),
    it_lpb=(urns.ITERABLE_CODER, ["lp_b"]),
    it_b=(urns.ITERABLE_CODER, ["b"]),
    serializable=(JAVA_CODER, [], b"SerializableCoder"),
    serializable_again=(JAVA_CODER, [], b"SerializableCoder"),
    big_endian=(JAVA_CODER, [], b"BigEndianLongCoder"),
    lp_serializable=(urns.LENGTH_PREFIX_CODER, ["serializable"]),
    lp_lp_serializable=(urns.LENGTH_PREFIX_CODER, ["lp_serializable"]),
    lp_big_endian=(urns.LENGTH_PREFIX_CODER, ["big_endian"]),
    nullable_v=("beam:coder:nullable:v1", ["v"]),
    kv_s_serializable=(urns.KV_CODER, ["s", "serializable"]),
    kv_s_lp_serializable=(urns.KV_CODER, ["s", "lp_serializable"]),
    gw=(urns.GLOBAL_WINDOW_CODER, []),
    iw=(urns.INTERVAL_WINDOW_CODER, []),
    wv_s_gw=(urns.WINDOWED_VALUE_CODER, ["s", "gw"]),
    wv_lps_gw=(urns.WINDOWED_VALUE_CODER, ["lp_s", "gw"]),
    wv_s_iw=(urns.WINDOWED_VALUE_CODER, ["s", "iw"]),
)


@pytest.mark.parametrize(
    "a, b",
    [
        ("s", "s2"),  # the same standard coder under two ids
        ("serializable", "serializable_again"),  # the same opaque coder (URN, payload) under two ids
        ("serializable", "lp_serializable"),  # the runner length-prefixes every opaque coder anyway
        ("kv_s_serializable", "kv_s_lp_serializable"),
    ],
)
def test_coders_the_runner_holds_alike_need_no_re_encoding(a, b):
    assert recode.same_encoding(C, a, b) and recode.runner_recodes(C, a, b)


@pytest.mark.parametrize(
    "a, b",
    [
        ("lp_s", "s"),  # unwrapping a length prefix
        ("s", "lp_s"),  # wrapping one
        ("kv_lps_v", "kv_s_lpv"),  # inside a KV, both at once
        ("it_lpb", "it_b"),  # inside an iterable
        ("lp_lp_serializable", "serializable"),  # a prefix around an opaque coder's prefix
        ("wv_lps_gw", "wv_s_gw"),  # inside a windowed value
    ],
)
def test_the_runner_re_encodes_what_differs_by_length_prefixes_of_coders_it_reads(a, b):
    assert not recode.same_encoding(C, a, b)
    assert recode.runner_recodes(C, a, b)


@pytest.mark.parametrize(
    "a, b",
    [
        ("v", "s"),  # other values
        ("lp_s", "b"),  # a string is not its bytes
        ("serializable", "big_endian"),  # two opaque coders of the SDK's
        ("lp_serializable", "lp_big_endian"),
        ("nullable_v", "v"),  # an opaque coder around a standard one
        ("lp_big_endian", "lp_v"),
        ("kv_s_serializable", "kv_sv"),  # an opaque part
        ("wv_s_gw", "wv_s_iw"),  # other windows
    ],
)
def test_the_runner_leaves_to_the_sdk_what_it_cannot_read_on_both_sides(a, b):
    assert not recode.runner_recodes(C, a, b) and not recode.runner_recodes(C, b, a)


def test_an_error_names_a_coder_with_its_urns():
    assert recode.describe(C, "kv_s_lpv") == (
        "kv_s_lpv (beam:coder:kv:v1(beam:coder:string_utf8:v1, beam:coder:length_prefix:v1(beam:coder:varint:v1)))"
    )


# -- which SDK ---------------------------------------------------------------------------------


def _environments(**capabilities) -> beam_runner_api_pb2.Components:
    components = beam_runner_api_pb2.Components()
    for env_id, caps in capabilities.items():
        components.environments[env_id].urn = "beam:env:external:v1"
        components.environments[env_id].capabilities.extend(caps)
    return components


def test_an_environment_names_its_sdk_in_its_sdk_base_capability():
    components = _environments(
        go=["beam:coder:bytes:v1", "beam:version:sdk_base:go:apache/beam_go_sdk:2.77.0"],
        java=["beam:version:sdk_base:apache/beam_java17_sdk:2.65.0"],
        py=["beam:version:sdk_base:apache/beam_python3.11_sdk:2.77.0"],
        other=["beam:coder:bytes:v1"],
    )
    assert [sdks.sdk_of(components, e) for e in ("go", "java", "py", "other", "", "missing")] == [
        sdks.GO,
        sdks.JAVA,
        sdks.PYTHON,
        "",
        "",
        "",
    ]


def test_a_default_environment_without_capabilities_is_pythons_if_it_runs_python_user_code():
    import apache_beam as beam

    p = beam.Pipeline()
    _ = p | beam.Create([1]) | beam.Map(str)
    components = p.to_runner_api().components
    [env_id] = components.environments
    assert not components.environments[env_id].capabilities
    assert sdks.sdk_of(components, env_id) == sdks.PYTHON


def test_only_a_go_test_streams_events_are_read_in_the_nested_context():
    components = _environments(
        go=["beam:version:sdk_base:go:apache/beam_go_sdk:2.77.0"],
        java=["beam:version:sdk_base:apache/beam_java17_sdk:2.65.0"],
    )
    stream = beam_runner_api_pb2.PTransform(environment_id="go")
    assert sdks.test_stream_events_nested(components, stream)
    stream.environment_id = "java"
    assert not sdks.test_stream_events_nested(components, stream)
    stream.environment_id = ""  # named by no environment: the pipeline's SDK, if it has one
    assert not sdks.test_stream_events_nested(components, stream)
    del components.environments["java"]
    assert sdks.test_stream_events_nested(components, stream)
