"""The transcript format (conformance/authoring/transcripts.py): every shipped file loads, and a
malformed or hostile one is refused with an error naming the file and the problem."""

import textwrap

import pytest

from conformance.authoring import transcripts

_GOOD = """\
about: a scenario
capability: triggers.count
window_fn: FixedWindows(10)
trigger: Repeatedly(AfterCount(2))
accumulation: discarding
steps:
  - elements: [1, 2]
    expect:
      - {window: [0, 10], values: [2, 1], timestamp: 9.999, timing: EARLY, index: 0, nonspec: -1, last: false}
  - watermark: inf
"""


def _write(tmp_path, text, name="t.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_shipped_transcripts_load_and_are_enough():
    loaded = transcripts.load_all()
    assert len(loaded) >= 25
    assert all(t.expected() for t in loaded), "every transcript expects at least one pane"
    assert len({t.name for t in loaded}) == len(loaded)


def test_a_good_transcript_builds_its_windowing_and_panes(tmp_path):
    t = transcripts.load(_write(tmp_path, _GOOD))
    assert type(t.trigger).__name__ == "Repeatedly" and t.window_fn.size == 10
    [expected] = t.expected()
    assert expected.value == ("k", [1, 2]) and expected.pane.first and expected.pane.timing == "EARLY"


@pytest.mark.parametrize(
    "change, message",
    [
        (("trigger: Repeatedly(AfterCount(2))", "trigger: __import__('os').system('true')"), "cannot build"),
        (("trigger: Repeatedly(AfterCount(2))", "trigger: Repeatedly(AfterCount(2)).__class__"), "cannot build"),
        (("window_fn: FixedWindows(10)", "window_fn: FixedWindows('10')"), "cannot build"),
        (("  - watermark: inf\n", ""), "last step must be `watermark: inf`"),
        (("accumulation: discarding", "accumulation: sometimes"), "accumulation must be"),
        (("about: a scenario", "about: a scenario\nfavourite: blue"), "unknown keys"),
        (("timing: EARLY", "timing: SOON"), "timing must be"),
        (("nonspec: -1, ", ""), "a pane has exactly"),
        (("  - elements: [1, 2]", "  - elements: [one]"), "list of event times"),
        (("  - watermark: inf", "  - watermark: inf\n    processing_time: 3"), "exactly one of"),
        (("about: a scenario", "about: [unclosed"), "not valid YAML"),
    ],
)
def test_malformed_transcripts_are_refused_by_name(tmp_path, change, message):
    old, new = change
    assert old in _GOOD
    path = _write(tmp_path, _GOOD.replace(old, new))
    with pytest.raises(transcripts.TranscriptError, match=message) as info:
        transcripts.load(path)
    assert path in str(info.value)
