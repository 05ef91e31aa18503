"""Side inputs read per window and pane (engine/sideinputs.py), with plain elements."""

from typing import Any

from reference_runner.engine.sideinputs import SideInputBuffer


def _decode(element):
    """Side elements are (value, encoded window, pane index or None)."""
    _, window, index = element
    return [window], index


def test_buffer_keeps_the_latest_pane_per_window_and_accumulates_unknown_panes():
    buf: Any = SideInputBuffer(_decode)  # (elements are plain tuples here, not encoded)
    buf.add([("a", b"w1", 0), ("b", b"w1", 0), ("x", b"w2", None)])
    assert buf.contents() == {b"w1": [("a", b"w1", 0), ("b", b"w1", 0)], b"w2": [("x", b"w2", None)]}
    assert buf.fired(b"w1") and not buf.fired(b"w2")  # w2 only becomes ready by the watermark
    version = buf.version
    buf.add([("c", b"w1", 1), ("y", b"w2", None)])
    assert buf.contents() == {b"w1": [("c", b"w1", 1)], b"w2": [("x", b"w2", None), ("y", b"w2", None)]}
    buf.add([("late", b"w1", 0)])  # an older pane than the latest is superseded already
    assert buf.contents()[b"w1"] == [("c", b"w1", 1)]
    assert buf.version > version
