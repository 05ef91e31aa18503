"""Triggers in batch: what the model still fixes for a non-default trigger without TestStream.

In a bounded pipeline every element reaches the GroupByKey before its input watermark passes
the end of any window (the elements of Create hold the watermark at the minimum timestamp
until all of them are processed). When, and how often, a runner evaluates an element-count
trigger while the input arrives is not fixed: Beam's capability matrix says intermediate
firings are effectively meaningless in batch and that batch watermarks jump from the beginning
to the end of time once the input is consumed, and Beam's own Prism test of AfterCount in batch
(prism_runner_test.py, test_after_count_trigger_batch) expects one pane per window holding all
of its elements. So a runner may fire no EARLY pane at all, and the last pane may hold any
number of new elements. What the model does fix:

- every pane before a window's last is EARLY (nonspeculative index -1): the watermark had not
  passed the window's end when it fired;
- an EARLY pane holds at least n elements more than the previous pane (discarding: at least n),
  or the count trigger could not have fired;
- when the watermark passes the end, the window fires exactly one more pane, its last: ON_TIME,
  nonspeculative index 0 (AfterWatermark's on-time pane; for a trigger without one, the final
  pane at garbage collection, which with allowed lateness 0 is the end of the window: the Python
  SDK declares ClosingBehavior EMIT_ALWAYS, so it is emitted even when empty);
- pane indices run 0, 1, 2, ... per key and window, is_first only on index 0, is_last only on
  the final pane; no pane is LATE;
- accumulating panes of a window nest, the last holding every element of the window; discarding
  panes are disjoint and together hold every element of the window exactly once.

Which elements a pane holds depends on how the runner bundled the input, so the cases check
these properties over whatever panes the runner produced (``satisfies``), never pane contents.
"""

import collections

from apache_beam.transforms import trigger, window

from conformance.api import ACCUMULATING, DISCARDING, capability, check, group_panes, keyed_input, satisfies

# (key, value, timestamp in seconds): "a" has 7 elements in [0, 10) (one value twice) and 4 in
# [10, 20); "b" has 1 in [0, 10), fewer than any count below; "c" 5 in [20, 30).
INPUT = (
    [("a", v, v) for v in (1, 2, 3, 4, 5, 6)]
    + [("a", 4, 9)]
    + [("a", v, v) for v in (11, 12, 13, 14)]
    + [("b", 100, 5)]
    + [("c", v, v) for v in (21, 22, 23, 24, 25)]
)


def _expected_windows():
    """(key, window start in ms) -> sorted values of every element in that window."""
    out = collections.defaultdict(list)
    for key, value, t in INPUT:
        out[(key, t // 10 * 10_000)].append(value)
    return {k: sorted(v) for k, v in out.items()}


def _panes(runner, trigger_fn, mode):
    """The pipeline, and the panes of INPUT in fixed windows of 10 s under ``trigger_fn`` and ``mode``."""
    # Python refuses at construction a trigger that may finish; the flag is not sent to the runner.
    p = runner.pipeline("--allow_unsafe_triggers")
    return p, group_panes(keyed_input(p, INPUT), window.FixedWindows(10), trigger_fn, mode)


def _sub(bigger, smaller):
    """bigger - smaller as multisets; raises if smaller is not contained in bigger."""
    rest = collections.Counter(bigger)
    rest.subtract(smaller)
    if any(n < 0 for n in rest.values()):
        raise AssertionError(f"{sorted(smaller)} is not contained in {sorted(bigger)}")
    return sorted(rest.elements())


def _verify(count, accumulating):
    """The predicate over the produced records for an element-count trigger of ``count``."""

    def verify(records):
        expected = _expected_windows()
        panes = collections.defaultdict(list)
        for r in records:
            panes[(r.value[0], r.window.start_ms)].append(r)
        assert set(panes) == set(expected), f"panes for {sorted(panes)}, windows with data {sorted(expected)}"
        for where, found in sorted(panes.items()):
            found.sort(key=lambda r: r.pane.index)
            everything = expected[where]
            label = f"key {where[0]!r}, window at {where[1] / 1000:g}s"
            indices = [r.pane.index for r in found]
            assert indices == list(range(len(found))), f"{label}: pane indices {indices}, expected 0..{len(found) - 1}"
            *early, last = found
            for r in found:
                assert r.pane.first == (r.pane.index == 0), f"{label}: is_first wrong in {r!r}"
                assert r.pane.last == (r is last), f"{label}: is_last wrong in {r!r}"
                assert r.timestamp_ms == r.window.end_ms - 1, f"{label}: {r!r} not at the window's end"
            for r in early:
                assert (r.pane.timing, r.pane.nonspec) == ("EARLY", -1), (
                    f"{label}: a pane before the last must be EARLY (the watermark had not passed the "
                    f"window's end: all input comes first in batch): {r!r}"
                )
            assert (last.pane.timing, last.pane.nonspec) == ("ON_TIME", 0), (
                f"{label}: the last pane must be the window's one ON_TIME pane: {last!r}"
            )
            seen = []  # everything emitted so far (discarding), or the previous pane (accumulating)
            for r in found:
                values = r.value[1]
                if accumulating:
                    new = _sub(values, seen)
                    seen = values
                else:
                    new = values
                    seen = seen + values
                if r is not last:
                    assert len(new) >= count, (
                        f"{label}: EARLY pane {r!r} brought {len(new)} new element(s), fewer than the count {count}"
                    )
            what = "the last accumulating pane" if accumulating else "the discarding panes together"
            assert sorted(seen) == everything, f"{label}: {what} hold {sorted(seen)}, the window {everything}"
        return True

    return verify


def _describe(trigger_text, mode_text):
    return (
        f"{trigger_text}, {mode_text}, in batch: per key and window, any EARLY panes of at least the "
        "count each, then one last ON_TIME pane; indices from 0"
    )


@capability("triggers.batch_count")
def test_repeated_count_trigger_fires_early_panes_in_batch(runner):
    # Repeatedly(AfterCount(2)), discarding: windows with 2 or more elements may fire EARLY panes (2 or
    # more new elements each) before the end of input; every window ends with its final pane (ON_TIME,
    # is_last) when the watermark passes its end, which is its garbage-collection time (SEMANTICS 5).
    p, out = _panes(runner, trigger.Repeatedly(trigger.AfterCount(2)), DISCARDING)
    check(out, satisfies(_verify(2, accumulating=False), _describe("Repeatedly(AfterCount(2))", "discarding")))
    runner.run(p)


@capability("triggers.batch_count")
def test_early_count_firings_then_on_time_pane_in_batch(runner):
    # AfterWatermark(early=AfterCount(3)), discarding: any EARLY panes hold at least 3 elements, then the
    # ON_TIME pane (is_last, allowed lateness 0) when the watermark passes the end (SEMANTICS 5).
    p, out = _panes(runner, trigger.AfterWatermark(early=trigger.AfterCount(3)), DISCARDING)
    check(
        out, satisfies(_verify(3, accumulating=False), _describe("AfterWatermark(early=AfterCount(3))", "discarding"))
    )
    runner.run(p)


@capability("triggers.batch_accumulating")
def test_accumulating_panes_nest_in_batch(runner):
    # Accumulating, AfterWatermark(early=AfterCount(2)): each pane of a window holds every element of
    # the pane before it and at least 2 more; the ON_TIME pane holds every element of the window (SEMANTICS 5).
    p, out = _panes(runner, trigger.AfterWatermark(early=trigger.AfterCount(2)), ACCUMULATING)
    check(
        out,
        satisfies(
            _verify(2, accumulating=True),
            _describe("AfterWatermark(early=AfterCount(2))", "accumulating, panes nested"),
        ),
    )
    runner.run(p)


@capability("triggers.batch_accumulating")
def test_accumulating_repeated_count_panes_nest_in_batch(runner):
    # Accumulating, Repeatedly(AfterCount(3)): nested panes, each at least 3 elements more than the one
    # before; the final pane holds every element of the window (SEMANTICS 5).
    p, out = _panes(runner, trigger.Repeatedly(trigger.AfterCount(3)), ACCUMULATING)
    check(
        out,
        satisfies(_verify(3, accumulating=True), _describe("Repeatedly(AfterCount(3))", "accumulating, panes nested")),
    )
    runner.run(p)


@capability("triggers.batch_discarding")
def test_discarding_panes_are_disjoint_and_complete_in_batch(runner):
    # Discarding, AfterWatermark(early=AfterCount(2)): the panes of a window are disjoint and together
    # hold every element of the window exactly once (a value added twice is there twice; SEMANTICS 5).
    p, out = _panes(runner, trigger.AfterWatermark(early=trigger.AfterCount(2)), DISCARDING)
    check(
        out,
        satisfies(
            _verify(2, accumulating=False),
            _describe("AfterWatermark(early=AfterCount(2))", "discarding, panes disjoint"),
        ),
    )
    runner.run(p)
