"""Streaming side inputs in the engine (engine/sideinputs.py, ElementManager's held main input),
driven with plain elements: no SDK, no protos."""

from reference_runner.engine import manager as m
from reference_runner.engine.sideinputs import SideInputBuffer

S = 1_000_000  # one second in micros


def _decode(element):
    """Side elements are (value, encoded window, pane index or None)."""
    _, window, index = element
    return [window], index


def test_buffer_keeps_the_latest_pane_per_window_and_accumulates_unknown_panes():
    buf = SideInputBuffer(_decode)
    buf.add([("a", b"w1", 0), ("b", b"w1", 0), ("x", b"w2", None)])
    assert buf.contents() == {b"w1": [("a", b"w1", 0), ("b", b"w1", 0)], b"w2": [("x", b"w2", None)]}
    assert buf.fired(b"w1") and not buf.fired(b"w2")  # w2 only becomes ready by the watermark
    version = buf.version
    buf.add([("c", b"w1", 1), ("y", b"w2", None)])
    assert buf.contents() == {b"w1": [("c", b"w1", 1)], b"w2": [("x", b"w2", None), ("y", b"w2", None)]}
    buf.add([("late", b"w1", 0)])  # an older pane than the latest is superseded already
    assert buf.contents()[b"w1"] == [("c", b"w1", 1)]
    assert buf.version > version


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
    assert bundle.inputs == [b"m"]
    assert em.side_input("side")[1] == {b"w1": [(3, b"w1", 1)], b"w2": [(5, b"w2", 0), (6, b"w2", 0)]}
