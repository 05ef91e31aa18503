"""The front end's passes for pipelines as SDKs submit them (graph/front_end.py): executable stages
expanded, SDK-lifted combines re-lifted, re-encodings moved into the SDK, unknown coders
length-prefixed so the runner reads only standard coders."""

import apache_beam as beam
import pytest
from apache_beam.coders import coders
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.portability.api import beam_runner_api_pb2
from apache_beam.runners.portability.portable_runner import PortableRunner
from apache_beam.testing import test_stream
from apache_beam.testing.util import assert_that, equal_to

from reference_runner import ReferenceRunner
from reference_runner.graph import front_end, opaque_coders, transcode, unfuse, urns
from reference_runner.graph.pipeline import PipelineGraph
from reference_runner.worker.codecs import Coders, OpaqueCoder


def _pre_optimized(build, shape: str) -> beam_runner_api_pb2.Pipeline:
    options = PipelineOptions([f"--experiments=pre_optimize={shape}"])
    p = beam.Pipeline(options=options)
    build(p)
    return PortableRunner._optimize_pipeline(p.to_runner_api(), options)  # noqa: SLF001 - the SDK's rewrite


def _combine_on_python_equal_keys(p):
    sums = p | beam.Create([(1, 10), (1.0, 20), (True, 30), (1, 1)]) | beam.CombinePerKey(sum)
    assert_that(
        sums | beam.MapTuple(lambda k, s: (type(k).__name__, s)), equal_to([("int", 11), ("float", 20), ("bool", 30)])
    )


def _leaf_urns(proto) -> list[str]:
    return [t.urn for t in PipelineGraph(proto).transforms]


def test_executable_stages_become_the_transforms_they_hold():
    proto = _pre_optimized(_combine_on_python_equal_keys, "all")
    assert urns.EXECUTABLE_STAGE in _leaf_urns(proto)
    expanded = unfuse.expand_executable_stages(proto)
    leaves = _leaf_urns(expanded)
    assert urns.EXECUTABLE_STAGE not in leaves and urns.PAR_DO in leaves
    assert urns.EXECUTABLE_STAGE in _leaf_urns(proto), "the input proto is not changed"


def test_sdk_lifted_combine_is_lifted_again_by_encoded_key():
    # The SDK's own precombine merges 1, 1.0 and True (a Python dict); re-lifted, the runner
    # re-keys them by encoding first, and the job gives three sums.
    proto = _pre_optimized(_combine_on_python_equal_keys, "all")
    graph = front_end.checked_graph(proto, front_end.REFERENCE)
    names = [t.name for t in graph.transforms]
    assert any(n.endswith("/KeysToBytes") for n in names) and any(n.endswith("/KeysFromBytes") for n in names)
    ReferenceRunner().run_portable_pipeline(proto, PipelineOptions())  # assert_that inside


def _combine_read_as_a_side_input(p):
    # The SDK ends a fused stage after the combine's merge and extract (a side input is not fused
    # into its reader), so that stage holds nothing else (SDK example matrix_power).
    sums = p | "Sums" >> beam.Create([("a", 1), ("a", 2), ("b", 5)]) | beam.CombinePerKey(sum)
    looked_up = p | "Keys" >> beam.Create(["a", "b"]) | beam.Map(lambda k, s: (k, s[k]), beam.pvalue.AsDict(sums))
    assert_that(looked_up, equal_to([("a", 3), ("b", 5)]))


def test_sdk_stage_holding_only_a_combines_merge_and_extract_goes_with_them():
    proto = _pre_optimized(_combine_read_as_a_side_input, "all")
    graph = front_end.checked_graph(proto, front_end.REFERENCE)
    assert all(t.urn for t in graph.transforms)
    ReferenceRunner().run_portable_pipeline(proto, PipelineOptions())  # assert_that inside


def test_flatten_inputs_of_other_coders_are_transcoded_by_the_sdk():
    p = beam.Pipeline()
    ints = p | "Ints" >> beam.Create([1]).with_output_types(int)
    strs = p | "Strs" >> beam.Create(["a"]).with_output_types(str)
    _ = (ints, strs) | beam.Flatten()
    proto = transcode.transcode(p.to_runner_api())
    graph = PipelineGraph(proto)
    [flatten] = [t for t in graph.transforms if t.urn == urns.FLATTEN]
    [out] = flatten.outputs()
    coders_of = {proto.components.pcollections[pc].coder_id for pc in flatten.proto.inputs.values()}
    assert coders_of == {proto.components.pcollections[out].coder_id}
    assert [t.urn for t in graph.transforms].count(urns.IDENTITY_DOFN) == 2


def test_group_by_key_whose_output_recodes_the_key_gets_an_sdk_transcode():
    # Python types this GroupByKey's output key as Any while its input key is str.
    p = beam.Pipeline()
    ints = p | "Ints" >> beam.Create([("k", 1)]).with_output_types(tuple[str, int])
    strs = p | "Strs" >> beam.Create([("k", "a")]).with_output_types(tuple[str, str])
    _ = (ints, strs) | beam.Flatten() | beam.GroupByKey()
    proto = transcode.transcode(p.to_runner_api())
    components = proto.components
    [gbk] = [t for t in PipelineGraph(proto).transforms if t.urn == urns.GROUP_BY_KEY]
    [source] = gbk.proto.inputs.values()
    [target] = gbk.proto.outputs.values()
    key_in, value_in = components.coders[components.pcollections[source].coder_id].component_coder_ids
    key_out, grouped = components.coders[components.pcollections[target].coder_id].component_coder_ids
    assert key_in == key_out and components.coders[grouped].component_coder_ids == [value_in]


def test_the_runner_reads_every_pcollection_with_standard_coders_only():
    p = beam.Pipeline()
    _ = (
        p
        | beam.Create([("k", {"any": "thing"})])
        | beam.GroupByKey()
        | beam.WindowInto(beam.transforms.window.Sessions(10))
        | beam.Map(lambda kv: kv)
    )
    proto = p.to_runner_api()
    components = proto.components
    readable = opaque_coders.Readable(components)
    runner_coders = Coders(components)
    for pcoll_id in components.pcollections:
        runner_coders.windowed(pcoll_id)  # builds without any user code (else OpaqueCoder)
    pickled = [cid for cid, c in components.coders.items() if c.spec.urn == "beam:coder:pickled_python:v1"]
    assert pickled and all(
        readable.coder(readable.element(cid)).spec.urn == urns.LENGTH_PREFIX_CODER
        and list(readable.coder(readable.element(cid)).component_coder_ids) == [cid]
        for cid in pickled
    )
    assert not any(c.endswith(("/readable", "/length_prefixed")) for c in components.coders), "components unchanged"


def test_a_pcollection_of_windowed_values_is_carried_opaque():
    # Java's Create.windowedValues: a PCollection whose elements are windowed values. SDK harnesses
    # would take its coder for the wire coder (no windowed value around it) and misread them.
    p = beam.Pipeline()
    _ = p | beam.Create(["a"]) | "Values" >> beam.Map(lambda s: s)
    proto = p.to_runner_api()
    [values] = [t for t in proto.components.transforms.values() if t.unique_name == "Values"]
    [out] = values.outputs.values()
    element = proto.components.pcollections[out].coder_id
    proto.components.coders["wv"].spec.urn = urns.WINDOWED_VALUE_CODER
    proto.components.coders["wv"].component_coder_ids.extend([element, "global"])
    proto.components.coders["global"].spec.urn = urns.GLOBAL_WINDOW_CODER
    proto.components.pcollections[out].coder_id = "wv"
    readable = opaque_coders.Readable(proto.components)
    coder = readable.coder(readable.pcollection(proto.components.pcollections[out].coder_id))
    assert (coder.spec.urn, list(coder.component_coder_ids)) == (urns.LENGTH_PREFIX_CODER, ["wv"])
    # and the runner reads such elements that way: as one length-prefixed windowed value each
    assert type(Coders(proto.components).windowed(out).wrapped_value_coder).__name__ == "LengthPrefixCoder"


def test_the_runner_refuses_to_build_a_coder_it_does_not_know():
    components = beam_runner_api_pb2.Components()
    components.coders["c"].spec.urn = "beam:coder:pickled_python:v1"
    with pytest.raises(OpaqueCoder, match="c .beam:coder:pickled_python:v1. is not a standard coder"):
        Coders(components).coder("c")


def test_test_stream_events_of_partly_opaque_coders_are_read_up_to_the_opaque_tail():
    components = beam_runner_api_pb2.Components()
    for cid, urn, parts in (
        ("s", urns.STRING_UTF8_CODER, []),
        ("u", "beam:coder:java:thing:v1", []),
        ("kv", urns.KV_CODER, ["s", "u"]),
        ("vk", urns.KV_CODER, ["u", "s"]),
    ):
        components.coders[cid].spec.urn = urn
        components.coders[cid].component_coder_ids.extend(parts)
    read = Coders(components).event_reader("kv", nested=False)
    encoded = coders.StrUtf8Coder().get_impl().encode_nested("key") + b"\x00opaque tail"
    assert read(encoded) == ("key", b"\x00opaque tail")
    with pytest.raises(OpaqueCoder, match="key coder u"):
        Coders(components).event_reader("vk", nested=False)


def test_test_stream_of_pickled_elements_runs():
    stream = test_stream.TestStream().add_elements([("k", {"a": 1})]).advance_watermark_to_infinity()
    with beam.Pipeline(runner=ReferenceRunner()) as p:
        assert_that(p | stream | beam.Map(lambda kv: kv[1]["a"]), equal_to([1]))


def _flatten_of_strs_one_length_prefixed() -> beam_runner_api_pb2.Pipeline:
    """Two PCollections of strings into a Flatten; the SDK writes one of them length-prefixed."""
    p = beam.Pipeline()
    plain = p | "Plain" >> beam.Create(["a", "b"]).with_output_types(str)
    prefixed = p | "Prefixed" >> beam.Create(["c"]).with_output_types(str)
    assert_that((plain, prefixed) | beam.Flatten(), equal_to(["a", "b", "c"]))
    proto = p.to_runner_api()
    components = proto.components
    producer = next(t for t in components.transforms.values() if t.unique_name == "Prefixed/Map(decode)")
    [pcoll] = producer.outputs.values()
    components.coders["lp_str"].spec.urn = urns.LENGTH_PREFIX_CODER
    components.coders["lp_str"].component_coder_ids.append(components.pcollections[pcoll].coder_id)
    components.pcollections[pcoll].coder_id = "lp_str"
    return proto


@pytest.mark.parametrize("backend", ["reference", "spark"])
def test_a_flatten_input_that_differs_by_a_length_prefix_is_re_encoded_by_the_runner(backend):
    # no SDK transform: the runner unwraps the prefix itself (graph/recode.py)
    proto = _flatten_of_strs_one_length_prefixed()
    graph = front_end.checked_graph(proto, front_end.REFERENCE)
    transcodes = {t.id for t in graph.transforms if t.urn in (urns.IDENTITY_DOFN, urns.SDK_FLATTEN)}
    [flatten] = [t for t in graph.transforms if t.name == "Flatten"]
    assert all(graph.producer[p] not in transcodes for p in flatten.main_inputs()) and transcodes, (
        "only assert_that's own CoGroupByKey, of pickled coders, asks the SDK"
    )
    if backend == "reference":
        ReferenceRunner().run_portable_pipeline(proto, PipelineOptions())  # assert_that inside
    else:
        from reference_runner.spark import SparkRunner

        SparkRunner().run_portable_pipeline(proto, PipelineOptions()).wait_until_finish()
