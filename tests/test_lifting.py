"""Combiner lifting: when the front end lifts CombinePerKey, and that lifted and unlifted runs agree."""

import apache_beam as beam
import pytest
from apache_beam.portability.api import beam_runner_api_pb2
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms import combiners, trigger, window

from reference_runner import ReferenceRunner
from reference_runner.executor.reference_backend import ReferenceBackend
from reference_runner.graph import lifting, urns
from reference_runner.knobs import Knobs

LIFTED_PARTS = [
    urns.COMBINE_PRECOMBINE,
    urns.GROUP_BY_KEY,
    urns.COMBINE_MERGE_ACCUMULATORS,
    urns.COMBINE_EXTRACT_OUTPUTS,
]


def _windowed_means(p, windowing):
    data = [("a", 1), ("a", 4), ("b", 3), ("a", 9), ("a", 11), ("b", 30)]
    return (
        p
        | beam.Create(data).with_output_types(tuple[str, int])
        | beam.Map(lambda kv: window.TimestampedValue(kv, kv[1])).with_output_types(tuple[str, int])
        | beam.WindowInto(windowing)
        | beam.CombinePerKey(combiners.MeanCombineFn())
        | beam.ParDo(_WithWindow())
    )


class _WithWindow(beam.DoFn):
    def process(self, kv, w=beam.DoFn.WindowParam):
        yield kv[0], kv[1], float(w.start), float(w.end)


def _leaf_urns(pipeline, lift):
    """URNs of the leaf transforms inside the CombinePerKey, in execution order."""
    return [
        t.urn
        for t in ReferenceBackend(Knobs(lift=lift)).plan(pipeline.to_runner_api()).graph.transforms
        if t.name.startswith("CombinePerKey")
    ]


@pytest.mark.parametrize(
    "windowing, expected",
    [
        (window.FixedWindows(10), [("a", 14 / 3, 0, 10), ("b", 3.0, 0, 10), ("a", 11.0, 10, 20), ("b", 30.0, 30, 40)]),
        (window.Sessions(4), [("a", 2.5, 1, 8), ("b", 3.0, 3, 7), ("a", 10.0, 9, 15), ("b", 30.0, 30, 34)]),
    ],
)
def test_lifted_and_unlifted_agree_and_only_lifted_has_precombine(windowing, expected):
    for lift in (True, False):
        for fuse in (True, False):
            with beam.Pipeline(runner=ReferenceRunner(fuse=fuse, lift=lift)) as p:
                assert_that(_windowed_means(p, windowing), equal_to(expected))
    p = beam.Pipeline()
    _windowed_means(p, windowing)
    lifted, unlifted = _leaf_urns(p, lift=True), _leaf_urns(p, lift=False)
    assert lifted == LIFTED_PARTS
    assert urns.COMBINE_PRECOMBINE not in unlifted


def test_lift_option_from_the_command_line():
    options = beam.options.pipeline_options.PipelineOptions(["--reference_lift=false"])
    with beam.Pipeline(runner=ReferenceRunner(), options=options) as p:
        out = p | beam.Create([("x", 1), ("x", 2)]).with_output_types(tuple[str, int]) | beam.CombinePerKey(sum)
        assert_that(out, equal_to([("x", 3)]))


@pytest.mark.parametrize("lift, fuse", [(True, True), (True, False), (False, True)])
def test_keys_equal_in_python_but_not_encoded_stay_distinct(lift, fuse):
    # 1, 1.0 and True are one dict key to the SDK's precombine, three keys to the model: lifted,
    # the runner hands the SDK each key's encoding instead.
    p = beam.Pipeline(runner=ReferenceRunner(lift=lift, fuse=fuse))
    out = (
        p
        | beam.Create([(1, 10), (1.0, 20), (True, 30), (1, 1)])
        | beam.CombinePerKey(sum)
        | beam.MapTuple(lambda k, s: (type(k).__name__, s))
    )
    assert_that(out, equal_to([("int", 11), ("float", 20), ("bool", 30)]))
    if lift:  # a Python CombineFn: the re-keying is a ParDo of ours, in the SDK
        assert _leaf_urns(p, lift=True) == [urns.PAR_DO, *LIFTED_PARTS, urns.PAR_DO]
    p.run()


@pytest.mark.parametrize("fuse", [True, False])
def test_pickled_str_keys_pass_as_they_are_and_never_meet_other_keys_encodings(fuse):
    # Re-keying lets strs through and turns every other key into its encoding; a bytes key equal
    # to another key's encoding, or a str that spells one, must still be a key of its own.
    from apache_beam.coders import coders

    one = coders.FastPrimitivesCoder().get_impl().encode_nested(1)
    data = [("a", 1), ("a", 2), (1, 10), (True, 20), (one, 100), (one.decode("latin-1"), 1000), (b"a", 5)]
    p = beam.Pipeline(runner=ReferenceRunner(fuse=fuse))
    out = p | beam.Create(data) | beam.CombinePerKey(sum) | beam.MapTuple(lambda k, s: (repr(k), s))
    assert_that(
        out,
        equal_to(
            [("'a'", 3), ("1", 10), ("True", 20), (repr(one), 100), (repr(one.decode("latin-1")), 1000), ("b'a'", 5)]
        ),
    )
    from reference_runner.graph import rekey

    rekeying = [
        t for t in ReferenceBackend().plan(p.to_runner_api()).graph.transforms if t.name.endswith("/KeysToBytes")
    ]
    assert rekeying and all(
        b"KeysToBytesUnlessStr" in t.proto.spec.payload or _pickled_class(t) is rekey.KeysToBytesUnlessStr
        for t in rekeying
    )
    p.run()


def _pickled_class(transform):
    from apache_beam.internal import pickler

    payload = beam_runner_api_pb2.ParDoPayload.FromString(transform.proto.spec.payload)
    return type(pickler.loads(payload.do_fn.payload)[0])


def test_a_combine_fn_of_another_sdk_is_rekeyed_by_the_runner():
    from reference_runner.graph import lifting

    p = beam.Pipeline()
    _ = p | beam.Create([(1, 10), (1.0, 20)]) | beam.CombinePerKey(sum)
    proto = p.to_runner_api()
    for t in proto.components.transforms.values():
        if t.spec.urn == urns.COMBINE_PER_KEY:  # as if a Java CombineFn: no Python DoFn may be added
            payload = beam_runner_api_pb2.CombinePayload.FromString(t.spec.payload)
            payload.combine_fn.urn = "beam:combinefn:javasdk:v1"
            t.spec.payload = payload.SerializeToString()
    lifted = lifting.lift(proto)
    leaf_urns = {t.spec.urn for t in lifted.components.transforms.values() if not t.subtransforms}
    assert {urns.KEYS_TO_BYTES, urns.KEYS_FROM_BYTES} <= leaf_urns


def test_keys_whose_equality_is_their_encoding_are_not_rekeyed():
    p = beam.Pipeline()
    _ = p | beam.Create([("a", 1)]).with_output_types(tuple[str, int]) | beam.CombinePerKey(sum)
    assert _leaf_urns(p, lift=True) == LIFTED_PARTS


def test_non_default_trigger_is_not_lifted():
    p = beam.Pipeline()
    _ = (
        p
        | beam.Create([("k", 1)]).with_output_types(tuple[str, int])
        | beam.WindowInto(
            window.GlobalWindows(),
            trigger=trigger.Repeatedly(trigger.AfterCount(2)),
            accumulation_mode=trigger.AccumulationMode.DISCARDING,
        )
        | beam.CombinePerKey(sum)
    )
    proto = p.to_runner_api()
    assert lifting.lift(proto) is proto  # nothing lifted: the composite keeps its own subtransforms


def test_lifting_leaves_the_submitted_pipeline_unchanged():
    p = beam.Pipeline()
    _ = p | beam.Create([("k", 1)]).with_output_types(tuple[str, int]) | beam.CombinePerKey(sum)
    proto = p.to_runner_api()
    before = proto.SerializeToString()
    lifted = lifting.lift(proto)
    assert lifted is not proto and proto.SerializeToString() == before


def test_only_the_stage_whose_outputs_are_all_partial_accumulators_is_precombined():
    # (the Spark backend gives such a stage larger bundles: its output is one accumulator per key
    # of each bundle, spark/translate.py)
    p = beam.Pipeline()
    means = _windowed_means(p, window.FixedWindows(10))
    _ = means | "Again" >> beam.Map(lambda row: row)
    for lift in (True, False):
        stages = ReferenceBackend(Knobs(lift=lift)).plan(p.to_runner_api()).stages
        precombined = [s for s in stages if s.precombined]
        if lift:
            [stage] = precombined
            graph = ReferenceBackend(Knobs(lift=lift)).plan(p.to_runner_api()).graph
            by_id = {t.id: t for t in graph.transforms}
            assert by_id[stage.transforms[-1]].urn == urns.COMBINE_PRECOMBINE
        else:
            assert precombined == []
