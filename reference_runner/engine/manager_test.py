"""The ElementManager (engine/manager.py) driven with plain elements: no SDK, no protos. TestStream
events and the processing-time clock; side inputs, streaming (held main input) and batch."""

from reference_runner.engine import manager as m
from reference_runner.engine import triggers as t
from reference_runner.engine.grouping import Grouping
from reference_runner.engine.triggers_test import Codec

S = 1_000_000  # one second in micros


def _decode(element):
    """Side elements are (value, encoded window, pane index or None)."""
    _, window, index = element
    return [window], index


def _manager(events):
    # stream -> "main" read by "read" with side input "side" (straight from the stream). Main
    # elements are (name, side window they need, its max timestamp).
    return m.ElementManager(
        [
            m.StageSpec("stream", m.StageKind.TEST_STREAM, [], ["main", "side"], events=events),
            m.StageSpec(
                "read",
                m.StageKind.SDK,
                ["main"],
                ["out"],
                side_inputs=["side"],
                side_windows=lambda e: [("side", e[1], e[2])],
            ),
        ],
        side_decoders={"side": _decode},
    )


def _run_until_quiet(em):
    """Bundles of "read" run (committed without output) until nothing can run; their inputs."""
    seen = []
    while (bundle := em.next_bundle()) is not None:
        seen.append((bundle.inputs, em.side_input("side")[1]))
        em.commit(bundle, {})
    return seen


def test_main_input_waits_for_a_pane_or_the_side_watermark_and_holds_the_watermark():
    events = [
        (m.ELEMENTS, "main", [("a", b"w1", 9 * S), ("b", b"w2", 19 * S)]),
        (m.ELEMENTS, "side", [(1, b"w1", 0)]),
        (m.WATERMARK, "main", 20 * S),
        (m.WATERMARK, "side", 20 * S),
    ]
    em = _manager(events)
    em.start({})
    assert em.advance_time() and _run_until_quiet(em) == []  # held: nothing fired for w1 yet
    assert em.output_watermark["read"] == m.MIN_TIMESTAMP
    assert em.advance_time()  # a pane for w1: a runs, seeing it
    assert _run_until_quiet(em) == [([("a", b"w1", 9 * S)], {b"w1": [(1, b"w1", 0)]})]
    assert em.advance_time() and _run_until_quiet(em) == []  # the stream's watermark is min(main, side)
    assert em.advance_time()  # the side watermark passed w2's end: b sees its (empty) window
    assert _run_until_quiet(em) == [([("b", b"w2", 19 * S)], {b"w1": [(1, b"w1", 0)]})]
    while em.advance_time():
        pass
    assert em.done()


def test_batch_side_inputs_are_read_whole_once_the_producer_finished():
    em = m.ElementManager(
        [
            m.StageSpec("imp", m.StageKind.IMPULSE, [], ["side"]),
            m.StageSpec("imp2", m.StageKind.IMPULSE, [], ["main"]),
            m.StageSpec("read", m.StageKind.SDK, ["main"], [], side_inputs=["side"]),
        ]
    )
    em.start({"side": [b"s"], "main": [b"m"]})
    bundle = em.next_bundle()
    assert bundle is not None
    assert bundle.inputs == [b"m"] and em.side_input("side") == (0, [b"s"])


def test_batch_triggered_side_input_is_read_once_finished_showing_the_latest_pane_per_window():
    # A side input with decoders in batch (the executor gives them for triggered side inputs): read
    # once its producer finished, as a window -> latest pane map, not every pane it fired.
    em = m.ElementManager(
        [
            m.StageSpec("side_src", m.StageKind.IMPULSE, [], ["side"]),
            m.StageSpec("main_src", m.StageKind.IMPULSE, [], ["main"]),
            m.StageSpec("read", m.StageKind.SDK, ["main"], [], side_inputs=["side"]),
        ],
        side_decoders={"side": _decode},
    )
    em.start({"side": [(1, b"w1", 0), (3, b"w1", 1), (5, b"w2", 0), (6, b"w2", 0)], "main": [b"m"]})
    bundle = em.next_bundle()
    assert bundle is not None
    assert bundle.inputs == [b"m"]
    assert em.side_input("side")[1] == {b"w1": [(3, b"w1", 1)], b"w2": [(5, b"w2", 0), (6, b"w2", 0)]}


def test_element_manager_applies_teststream_events_one_at_a_time_and_moves_the_clock():
    trig = t.AfterWatermark(early=t.AfterProcessingTime((("delay", 5 * S),)))
    grouping = Grouping(Codec(), trigger=trig)
    events = [
        (m.ELEMENTS, "in", [("k", 1, 1, 10)]),
        (m.PROCESSING_TIME, None, 6 * S),
        (m.ELEMENTS, "in", [("k", 2, 2, 10)]),
        (m.WATERMARK, "in", 5 * S),
    ]
    em = m.ElementManager(
        [
            m.StageSpec("stream", m.StageKind.TEST_STREAM, [], ["in"], events=events),
            m.StageSpec("group", m.StageKind.GROUP, ["in"], ["out"], grouping=grouping),
            m.StageSpec("sink", m.StageKind.SDK, ["out"], []),
        ]
    )
    em.start({})
    steps = 0
    while em.advance_time():
        steps += 1
    assert steps == 5  # four events, then the exhausted stream's watermark goes to +inf
    assert em.now == 6 * S
    assert [(p[1], p[4][0]) for p in em.pending["sink"]] == [([1], "EARLY"), ([2], "ON_TIME")]
    assert em.output_watermark["group"] == m.PLUS_INFINITY
