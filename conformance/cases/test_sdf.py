"""Splittable DoFn: initial splits, self-checkpointing, watermark estimation, bundle finalization.

Every splittable DoFn here emits one output per claimed offset. Whatever the runner does with the
restrictions (initial splits, checkpoints and resumptions, dynamic splits), the model requires
that the union of all processed restrictions is the element's whole restriction, each position
processed exactly once, and that outputs keep the input element's timestamp and window unless
the DoFn sets a timestamp itself.
"""

import os
import time

import apache_beam as beam
from apache_beam.io.restriction_trackers import OffsetRange, OffsetRestrictionTracker
from apache_beam.io.watermark_estimators import ManualWatermarkEstimator, MonotonicWatermarkEstimator
from apache_beam.transforms import window
from apache_beam.transforms.core import RestrictionProvider, WatermarkEstimatorProvider
from apache_beam.utils.timestamp import MIN_TIMESTAMP, Duration, Timestamp

from conformance.api import (
    GLOBAL,
    NO_FIRING,
    ON_TIME_ONLY,
    W,
    capability,
    check,
    created,
    el,
    grouped,
    pane,
    sorted_groups,
)

# --------------------------------------------------------------------------- restriction providers


class CountProvider(RestrictionProvider):
    """Element n -> the offsets [0, n), initially split into pieces of ``piece`` offsets."""

    def __init__(self, piece=None):
        self.piece = piece

    def initial_restriction(self, n):
        return OffsetRange(0, n)

    def create_tracker(self, restriction):
        return OffsetRestrictionTracker(restriction)

    def restriction_size(self, n, restriction):
        return restriction.size()

    def split(self, n, restriction):
        if self.piece is None:
            yield restriction
            return
        start = restriction.start
        while start < restriction.stop:
            stop = min(start + self.piece, restriction.stop)
            yield OffsetRange(start, stop)
            start = stop


class WordProvider(RestrictionProvider):
    """A text -> its character offsets, initially split at every space (one piece per word,
    each space belonging to the word before it): uneven pieces chosen by the provider."""

    def initial_restriction(self, text):
        return OffsetRange(0, len(text))

    def create_tracker(self, restriction):
        return OffsetRestrictionTracker(restriction)

    def restriction_size(self, text, restriction):
        return restriction.size()

    def split_and_size(self, text, restriction):
        start = restriction.start
        for pos in range(restriction.start, restriction.stop):
            if text[pos] == " " or pos == restriction.stop - 1:
                yield OffsetRange(start, pos + 1), pos + 1 - start
                start = pos + 1


def claimed_offsets(tracker):
    """Claim positions one by one until the tracker refuses; yields each claimed position."""
    pos = tracker.current_restriction().start
    while tracker.try_claim(pos):
        yield pos
        pos += 1


class EmitOffsets(beam.DoFn):
    """n -> (n, 0), (n, 1), ..., (n, n - 1), over restrictions split in pieces of 3."""

    def process(self, n, tracker=beam.DoFn.RestrictionParam(CountProvider(piece=3))):
        for pos in claimed_offsets(tracker):
            yield n, pos


class EmitEachOffsetAlone(beam.DoFn):
    """Like EmitOffsets, but the initial split gives every offset its own restriction."""

    def process(self, n, tracker=beam.DoFn.RestrictionParam(CountProvider(piece=1))):
        for pos in claimed_offsets(tracker):
            yield n, pos


class EmitCharacters(beam.DoFn):
    def process(self, text, tracker=beam.DoFn.RestrictionParam(WordProvider())):
        for pos in claimed_offsets(tracker):
            yield text, pos, text[pos]


class SelfProvidingRange(beam.DoFn, RestrictionProvider):
    """A DoFn that is its own RestrictionProvider: (start, stop) -> the offsets in between,
    initially split in halves."""

    def initial_restriction(self, bounds):
        return OffsetRange(*bounds)

    def create_tracker(self, restriction):
        return OffsetRestrictionTracker(restriction)

    def restriction_size(self, bounds, restriction):
        return restriction.size()

    def split(self, bounds, restriction):
        middle = (restriction.start + restriction.stop) // 2
        yield OffsetRange(restriction.start, middle)
        yield OffsetRange(middle, restriction.stop)

    def process(self, bounds, tracker=beam.DoFn.RestrictionParam()):
        yield from claimed_offsets(tracker)


def offsets_of(*counts):
    return [(n, i) for n in counts for i in range(n)]


# --------------------------------------------------------------------------- initial splits


@capability("sdf.initial_splits")
def test_offset_range_split_in_pieces_emits_every_offset_once(runner):
    # Initial splits partition the restriction: the union is the whole range, once each (SEMANTICS 10).
    p = runner.pipeline()
    check(p | beam.Create([7, 10, 1, 0]) | beam.ParDo(EmitOffsets()), created(offsets_of(7, 10, 1, 0)))
    runner.run(p)


@capability("sdf.initial_splits")
def test_split_into_single_offsets_emits_every_offset_once(runner):
    # A split may produce as many restrictions as positions; still exactly once each (SEMANTICS 10).
    p = runner.pipeline()
    check(p | beam.Create([5, 12]) | beam.ParDo(EmitEachOffsetAlone()), created(offsets_of(5, 12)))
    runner.run(p)


@capability("sdf.initial_splits")
def test_custom_split_and_size_into_uneven_pieces(runner):
    # A provider's own split_and_size (one piece per word) still covers every character once (SEMANTICS 10).
    texts = ["to be or not", "splittable", "a bc def"]
    p = runner.pipeline()
    out = p | beam.Create(texts) | beam.ParDo(EmitCharacters())
    check(out, created([(t, i, c) for t in texts for i, c in enumerate(t)]))
    runner.run(p)


@capability("sdf.initial_splits")
def test_dofn_as_its_own_restriction_provider(runner):
    # RestrictionParam() without a provider uses the DoFn itself; halves cover the range once (SEMANTICS 10).
    p = runner.pipeline()
    out = p | beam.Create([(3, 9), (100, 103), (5, 5)]) | beam.ParDo(SelfProvidingRange())
    check(out, created(list(range(3, 9)) + [100, 101, 102]))
    runner.run(p)


@capability("sdf.initial_splits")
def test_outputs_keep_element_timestamp_and_window(runner):
    # Every piece of a split element carries the element's timestamp and window (SEMANTICS 10).
    p = runner.pipeline()
    out = (
        p
        | beam.Create([(2, 3), (3, 14)])
        | beam.Map(lambda nt: window.TimestampedValue(nt[0], nt[1]))
        | beam.WindowInto(window.FixedWindows(10))
        | beam.ParDo(EmitOffsets())
    )
    check(
        out,
        [
            el((2, 0), 3, W(0, 10), NO_FIRING),
            el((2, 1), 3, W(0, 10), NO_FIRING),
            el((3, 0), 14, W(10, 20), NO_FIRING),
            el((3, 1), 14, W(10, 20), NO_FIRING),
            el((3, 2), 14, W(10, 20), NO_FIRING),
        ],
    )
    runner.run(p)


@capability("sdf.initial_splits")
def test_split_outputs_group_downstream(runner):
    # Outputs of all pieces of one element reach a GroupByKey together, once each (SEMANTICS 8 and 10).
    p = runner.pipeline()
    out = p | beam.Create([4, 6]) | beam.ParDo(EmitOffsets()) | beam.GroupByKey() | sorted_groups()
    check(out, grouped([(4, [0, 1, 2, 3]), (6, [0, 1, 2, 3, 4, 5])]))
    runner.run(p)


# --------------------------------------------------------------------------- self-checkpointing


class CheckpointingOffsets(beam.DoFn):
    """n -> (n, i) for every offset, claiming at most ``batch`` offsets per call and then
    deferring the rest of the restriction (a self-checkpoint) with ``delay`` seconds."""

    def __init__(self, batch, delay=None):
        self.batch = batch
        self.delay = delay

    def process(self, n, tracker=beam.DoFn.RestrictionParam(CountProvider())):
        restriction = tracker.current_restriction()
        pos = restriction.start
        for _ in range(self.batch):
            if not tracker.try_claim(pos):
                return
            yield n, pos
            pos += 1
        if pos < restriction.stop:
            tracker.defer_remainder(None if self.delay is None else Duration.of(self.delay))


@capability("sdf.self_checkpoint")
def test_checkpoint_with_resume_delay_emits_every_offset_once(runner):
    # defer_remainder(delay) hands the rest back for resumption: nothing lost, nothing repeated (SEMANTICS 10).
    p = runner.pipeline()
    check(p | beam.Create([5, 3]) | beam.ParDo(CheckpointingOffsets(batch=2, delay=0.05)), created(offsets_of(5, 3)))
    runner.run(p)


@beam.DoFn.unbounded_per_element()
class UnboundedCheckpointingOffsets(CheckpointingOffsets):
    """The same DoFn declared unbounded per element: its output PCollection is unbounded."""


@capability("sdf.self_checkpoint")
def test_unbounded_per_element_sdf_resumes_until_done(runner):
    # An SDF declared unbounded is resumed after each checkpoint until its restriction is done (SEMANTICS 10).
    p = runner.pipeline()
    out = p | beam.Create([4, 2]) | beam.ParDo(UnboundedCheckpointingOffsets(batch=1, delay=0.02))
    check(out, created(offsets_of(4, 2)))
    runner.run(p)


@capability("sdf.self_checkpoint")
def test_checkpoint_after_every_offset_without_delay(runner):
    # One position per invocation, resumed immediately: still the whole range exactly once (SEMANTICS 10).
    p = runner.pipeline()
    check(p | beam.Create([6]) | beam.ParDo(CheckpointingOffsets(batch=1)), created(offsets_of(6)))
    runner.run(p)


@capability("sdf.self_checkpoint")
def test_resumed_residuals_keep_element_timestamp_and_window(runner):
    # Outputs produced after a resumption carry the original element's timestamp and window (SEMANTICS 10).
    p = runner.pipeline()
    out = (
        p
        | beam.Create([(4, 21)])
        | beam.Map(lambda nt: window.TimestampedValue(nt[0], nt[1]))
        | beam.WindowInto(window.FixedWindows(10))
        | beam.ParDo(CheckpointingOffsets(batch=1, delay=0.01))
    )
    check(out, [el((4, i), 21, W(20, 30), NO_FIRING) for i in range(4)])
    runner.run(p)


@capability("sdf.self_checkpoint")
def test_checkpointed_outputs_sum_once_downstream(runner):
    # A downstream CombinePerKey sees every offset once: 0 + 1 + ... + (n - 1) per element (SEMANTICS 8 and 10).
    p = runner.pipeline()
    out = p | beam.Create([10, 7]) | beam.ParDo(CheckpointingOffsets(batch=3, delay=0.01)) | beam.CombinePerKey(sum)
    check(out, grouped([(10, 45), (7, 21)]))
    runner.run(p)


# --------------------------------------------------------------------------- watermark estimation


class ManualWatermarkOffsets(beam.DoFn):
    """n -> (n, i) at timestamp times[i] seconds; after each output the manual watermark is set to
    that output's timestamp; checkpoints after every ``batch`` outputs."""

    def __init__(self, times, batch=2):
        self.times = times
        self.batch = batch

    def process(
        self,
        n,
        tracker=beam.DoFn.RestrictionParam(CountProvider()),
        estimator=beam.DoFn.WatermarkEstimatorParam(ManualWatermarkEstimator.default_provider()),
    ):
        restriction = tracker.current_restriction()
        pos = restriction.start
        for _ in range(self.batch):
            if not tracker.try_claim(pos):
                return
            yield window.TimestampedValue((n, pos), self.times[pos])
            estimator.set_watermark(Timestamp.of(self.times[pos]))
            pos += 1
        if pos < restriction.stop:
            tracker.defer_remainder(Duration.of(0.01))


class MonotonicOffsets(beam.DoFn):
    """n -> (n, i) at timestamp times[i] seconds, the watermark following the observed timestamps."""

    def __init__(self, times):
        self.times = times

    def process(
        self,
        n,
        tracker=beam.DoFn.RestrictionParam(CountProvider()),
        estimator=beam.DoFn.WatermarkEstimatorParam(MonotonicWatermarkEstimator.default_provider()),
    ):
        for pos in claimed_offsets(tracker):
            yield window.TimestampedValue((n, pos), self.times[pos])


@capability("sdf.watermark_estimation")
def test_manual_watermark_drives_fixed_windows(runner):
    # Outputs never behind the manual watermark are on time: each Fixed(3) window fires once,
    # at its end of window, with all of its values (SEMANTICS 4, 5 and 10).
    times = [0, 1, 2, 3, 4, 5, 6, 7]
    p = runner.pipeline()
    out = (
        p
        | beam.Create([8])
        | beam.ParDo(ManualWatermarkOffsets(times))
        | beam.WindowInto(window.FixedWindows(3))
        | beam.GroupByKey()
        | sorted_groups()
    )
    check(
        out,
        [
            el((8, [0, 1, 2]), 2.999, W(0, 3), ON_TIME_ONLY),
            el((8, [3, 4, 5]), 5.999, W(3, 6), ON_TIME_ONLY),
            el((8, [6, 7]), 8.999, W(6, 9), ON_TIME_ONLY),
        ],
        label="groups",
    )
    check(
        out | beam.Map(lambda kv: kv[0]),
        [el(8, timestamp=t, pane=pane(timing="ON_TIME")) for t in (2.999, 5.999, 8.999)],
        label="on-time",
    )
    runner.run(p)


@capability("sdf.watermark_estimation")
def test_manual_watermark_outputs_keep_their_timestamps(runner):
    # Timestamps set by the SDF are the outputs' timestamps; the element stays in the global window (SEMANTICS 10).
    times = [1, 4, 9, 16]
    p = runner.pipeline()
    out = p | beam.Create([4]) | beam.ParDo(ManualWatermarkOffsets(times, batch=1))
    check(out, [el((4, i), t, GLOBAL, NO_FIRING) for i, t in enumerate(times)])
    runner.run(p)


@capability("sdf.watermark_estimation")
def test_monotonic_watermark_drives_sessions(runner):
    # Monotonically increasing output timestamps 0,1,2,10,11,20 form Sessions(3) [0,5), [10,14), [20,23).
    # (SEMANTICS 4 and 10)
    times = [0, 1, 2, 10, 11, 20]
    p = runner.pipeline()
    out = (
        p
        | beam.Create([6])
        | beam.ParDo(MonotonicOffsets(times))
        | beam.WindowInto(window.Sessions(3))
        | beam.GroupByKey()
        | sorted_groups()
    )
    check(
        out,
        [
            el((6, [0, 1, 2]), 4.999, W(0, 5), ON_TIME_ONLY),
            el((6, [3, 4]), 13.999, W(10, 14), ON_TIME_ONLY),
            el((6, [5]), 22.999, W(20, 23), ON_TIME_ONLY),
        ],
    )
    runner.run(p)


@capability("sdf.watermark_estimation")
def test_monotonic_watermark_outputs_keep_their_timestamps(runner):
    # Each output has the timestamp the SDF gave it, and is in the global window (SEMANTICS 10).
    times = [3, 5, 8]
    p = runner.pipeline()
    out = p | beam.Create([3]) | beam.ParDo(MonotonicOffsets(times))
    check(out, [el((3, i), t, GLOBAL, NO_FIRING) for i, t in enumerate(times)])
    runner.run(p)


# A watermark estimator is the SDF's promise that no output will be earlier than its watermark, and
# the runner holds the SDF's output watermark there, not at its input's: downstream windows before
# it close while the SDF goes on. Outputs alone cannot show that (a runner holding the watermark
# until the SDF finishes gives the same panes), so the SDF below waits for it: after its outputs
# for window [0, 10) it moves its watermark past that window and self-checkpoints until the
# window's group has been seen downstream (a marker file, so these cases need workers that share
# the test's filesystem, as the bundle finalization cases do), then emits its remaining outputs
# and a flag saying whether the window fired first. It stops waiting after POLLS resumptions of
# WAIT seconds each, so a runner that never lets the window fire fails the case instead of hanging.
POLLS, WAIT = 300, 0.1
EARLY_TIMES, HELD_AT, AFTER_TIMES = (1, 2, 3), 15, (21, 22)


class _MarkFirstWindow(beam.DoFn):
    """Creates ``fired`` in ``directory`` on seeing a group of window [0, 10)."""

    def __init__(self, directory):
        self.directory = directory

    def process(self, kv, w=beam.DoFn.WindowParam):
        if w.start == 0:
            _touch(os.path.join(self.directory, "fired"))
        yield kv


class _WaitForWindowProvider(CountProvider):
    """Positions: the early outputs, moving the watermark past window [0, 10), POLLS polls, the
    outputs after the wait."""

    def initial_restriction(self, directory):
        return OffsetRange(0, len(EARLY_TIMES) + 1 + POLLS + len(AFTER_TIMES))


@beam.DoFn.unbounded_per_element()
class _WaitForWindow(beam.DoFn):
    """Outputs ("early", i) at EARLY_TIMES, then moves its watermark to HELD_AT (``hold``) and
    self-checkpoints until window [0, 10) was seen downstream; then ("fired first", bool) at 20 and
    ("after", i) at AFTER_TIMES. Subclasses choose the estimator and how the watermark moves."""

    def advance(self, estimator, ts):
        """Called after each output at ``ts``; the watermark must not pass it."""

    def hold(self, estimator):
        """Move the watermark to HELD_AT; may yield outputs."""
        return ()

    def waiting(self, directory, tracker, estimator):
        early = len(EARLY_TIMES)
        first_after = early + 1 + POLLS
        pos = tracker.current_restriction().start
        while pos < early:
            if not tracker.try_claim(pos):
                return
            yield window.TimestampedValue(("early", pos), EARLY_TIMES[pos])
            self.advance(estimator, EARLY_TIMES[pos])
            pos += 1
        if pos == early:
            if not tracker.try_claim(pos):
                return
            yield from self.hold(estimator)
            pos += 1
        fired = os.path.exists(os.path.join(directory, "fired"))
        if pos < first_after:
            if not fired:
                if tracker.try_claim(pos):
                    tracker.defer_remainder(Duration.of(WAIT))
                return
            pos = first_after
        while tracker.try_claim(pos):
            if pos == first_after:
                yield window.TimestampedValue(("fired first", fired), 20)
            index = pos - first_after
            yield window.TimestampedValue(("after", index), AFTER_TIMES[index])
            self.advance(estimator, AFTER_TIMES[index])
            pos += 1


class _WaitWithManualWatermark(_WaitForWindow):
    def advance(self, estimator, ts):
        estimator.set_watermark(Timestamp.of(ts))

    def hold(self, estimator):
        estimator.set_watermark(Timestamp.of(HELD_AT))
        return ()

    def process(
        self,
        directory,
        tracker=beam.DoFn.RestrictionParam(_WaitForWindowProvider()),
        estimator=beam.DoFn.WatermarkEstimatorParam(ManualWatermarkEstimator.default_provider()),
    ):
        yield from self.waiting(directory, tracker, estimator)


class _MonotonicFromMinimum(WatermarkEstimatorProvider):
    """MonotonicWatermarkEstimator starting at the minimum timestamp. (Beam 2.77's default provider
    starts it at None, and its current_watermark() then compares an observed timestamp with None
    and raises, which every checkpoint of such an SDF calls.)"""

    def initial_estimator_state(self, element, restriction):
        return MIN_TIMESTAMP

    def create_watermark_estimator(self, estimator_state):
        return MonotonicWatermarkEstimator(estimator_state)


class _WaitWithMonotonicWatermark(_WaitForWindow):
    """The monotonic estimator follows output timestamps: an output at HELD_AT moves it there."""

    def hold(self, estimator):
        yield window.TimestampedValue(("held", 0), HELD_AT)

    def process(
        self,
        directory,
        tracker=beam.DoFn.RestrictionParam(_WaitForWindowProvider()),
        estimator=beam.DoFn.WatermarkEstimatorParam(_MonotonicFromMinimum()),
    ):
        yield from self.waiting(directory, tracker, estimator)


def _run_waiting_sdf(runner, tmp_path, sdf, extra):
    p = runner.pipeline()
    out = (
        p
        | beam.Create([str(tmp_path)])
        | beam.ParDo(sdf)
        | beam.WindowInto(window.FixedWindows(10))
        | beam.GroupByKey()
        | sorted_groups()
        | beam.ParDo(_MarkFirstWindow(str(tmp_path)))
    )
    on_time = pane(first=True, last=True, timing="ON_TIME", index=0, nonspec=0)
    check(
        out,
        [
            el(("early", [0, 1, 2]), 9.999, W(0, 10), on_time),
            el(("fired first", [True]), 29.999, W(20, 30), on_time),
            el(("after", [0, 1]), 29.999, W(20, 30), on_time),
        ]
        + extra,
    )
    runner.run(p)


@capability("sdf.watermark_estimation")
def test_manual_watermark_closes_windows_while_sdf_runs(runner, tmp_path):
    # Set past window [0, 10) by a ManualWatermarkEstimator, the SDF's watermark lets that window fire
    # (on time, with all its values) before the SDF, waiting for it, goes on (SEMANTICS 5 and 10).
    _run_waiting_sdf(runner, tmp_path, _WaitWithManualWatermark(), [])


@capability("sdf.watermark_estimation")
def test_monotonic_watermark_closes_windows_while_sdf_runs(runner, tmp_path):
    # A MonotonicWatermarkEstimator's watermark follows the outputs: after one at 15 the SDF's watermark
    # is past window [0, 10), which fires before the SDF, waiting for it, goes on (SEMANTICS 5 and 10).
    held = pane(first=True, last=True, timing="ON_TIME", index=0, nonspec=0)
    _run_waiting_sdf(runner, tmp_path, _WaitWithMonotonicWatermark(), [el(("held", [0]), 19.999, W(10, 20), held)])


# --------------------------------------------------------------------------- bundle finalization


def _touch(path):
    with open(path, "a") as f:
        f.write("finalized\n")


def wait_for_files(directory, names, timeout=10.0):
    """The finalized names once all are present (callbacks may run asynchronously), or what was there."""
    deadline = time.monotonic() + timeout
    while True:
        present = set(os.listdir(directory))
        if names <= present or time.monotonic() > deadline:
            return present
        time.sleep(0.05)


class FinalizePerElement(beam.DoFn):
    """Registers, per element, a finalization callback that creates a file named after it."""

    def __init__(self, directory):
        self.directory = directory

    def process(self, element, finalizer=beam.DoFn.BundleFinalizerParam):
        path = os.path.join(self.directory, str(element))
        finalizer.register(lambda: _touch(path))
        yield element


class FinalizeOffsets(beam.DoFn):
    """A splittable DoFn registering a finalization callback per claimed offset."""

    def __init__(self, directory):
        self.directory = directory

    # The finalizer comes before the tracker: Beam Python 2.77 mis-assigns a BundleFinalizerParam
    # declared after a RestrictionParam ("got multiple values for argument 'tracker'").
    def process(
        self, n, finalizer=beam.DoFn.BundleFinalizerParam, tracker=beam.DoFn.RestrictionParam(CountProvider(piece=2))
    ):
        for pos in claimed_offsets(tracker):
            path = os.path.join(self.directory, f"{n}-{pos}")
            finalizer.register(lambda path=path: _touch(path))
            yield n, pos


@capability("sdf.bundle_finalization")
def test_callbacks_run_after_the_bundle_commits(runner, tmp_path):
    # Every callback registered by a successful bundle is invoked once the bundle is committed (SEMANTICS 8).
    p = runner.pipeline()
    check(p | beam.Create(["a", "b", "c"]) | beam.ParDo(FinalizePerElement(str(tmp_path))), created(["a", "b", "c"]))
    runner.run(p)
    assert wait_for_files(tmp_path, {"a", "b", "c"}) == {"a", "b", "c"}


@capability("sdf.bundle_finalization")
def test_splittable_dofn_callbacks_cover_every_offset(runner, tmp_path):
    # Callbacks registered from every split piece of a splittable DoFn are all invoked (SEMANTICS 8 and 10).
    p = runner.pipeline()
    check(p | beam.Create([5, 2]) | beam.ParDo(FinalizeOffsets(str(tmp_path))), created(offsets_of(5, 2)))
    runner.run(p)
    expected = {f"{n}-{i}" for n, i in offsets_of(5, 2)}
    assert wait_for_files(tmp_path, expected) == expected


@capability("sdf.bundle_finalization")
def test_callbacks_after_group_by_key(runner, tmp_path):
    # Finalization also works in a stage fed by a GroupByKey: one callback per group (SEMANTICS 8).
    p = runner.pipeline()
    out = (
        p
        | beam.Create([("x", 1), ("y", 2), ("x", 3)])
        | beam.GroupByKey()
        | beam.MapTuple(lambda k, vs: f"{k}{sum(vs)}")
        | beam.ParDo(FinalizePerElement(str(tmp_path)))
    )
    check(out, grouped(["x4", "y2"]))
    runner.run(p)
    assert wait_for_files(tmp_path, {"x4", "y2"}) == {"x4", "y2"}


# --------------------------------------------------------------------------- failures


class _FailAtOffset(beam.DoFn):
    """n -> (n, i) over restrictions split in pieces of 3; claiming offset ``at`` of element ``on`` raises."""

    def __init__(self, message, on, at):
        self._message, self._on, self._at = message, on, at

    def process(self, n, tracker=beam.DoFn.RestrictionParam(CountProvider(piece=3))):
        for pos in claimed_offsets(tracker):
            if n == self._on and pos == self._at:
                raise RuntimeError(self._message)
            yield n, pos


class _FailingSplitProvider(CountProvider):
    """A provider that raises for element ``on`` in the first of its methods the runner calls
    after the initial restriction: the initial split, or, on a runner that does not split,
    creating the tracker for the element's whole initial restriction."""

    def __init__(self, message, on):
        super().__init__(piece=2)
        self._message, self._on = message, on

    def split(self, n, restriction):
        if n == self._on:
            raise ValueError(self._message)
        yield from super().split(n, restriction)

    def create_tracker(self, restriction):
        # Only a runner that skipped split() for element ``on`` tracks its unsplit restriction:
        # split() yields pieces of two offsets, and a runner never merges pieces.
        if restriction == OffsetRange(0, self._on):
            raise ValueError(self._message)
        return super().create_tracker(restriction)


@capability("sdf.failure")
def test_exception_in_splittable_process_fails_job_with_message(runner):
    # SEMANTICS 8: an exception in a splittable DoFn's process, after it claimed part of its
    # restriction (here in the third piece of element 8), fails the job with the user's message.
    message = "conformance-boom-in-sdf-process-4f70"
    p = runner.pipeline()
    _ = p | beam.Create([5, 8]) | beam.ParDo(_FailAtOffset(message, on=8, at=7))
    runner.run_expecting_failure(p, match=message)


@capability("sdf.failure")
def test_exception_in_restriction_split_fails_job_with_message(runner):
    # An exception in the restriction provider fails the job with the user's message too. Here it
    # comes from the initial split, which runs before process, on a runner that splits; the model
    # lets a runner skip initial splitting and process an element against its whole initial
    # restriction (Beam runs splittable DoFns that way on runners that do not split: BEAM-11472,
    # apache/beam#13556), so on such a runner it comes from creating that restriction's tracker (SEMANTICS 8 and 10).
    message = "conformance-boom-in-sdf-split-a3d5"

    class Fn(beam.DoFn):
        def process(self, n, tracker=beam.DoFn.RestrictionParam(_FailingSplitProvider(message, on=6))):
            for pos in claimed_offsets(tracker):
                yield n, pos

    p = runner.pipeline()
    _ = p | beam.Create([4, 6]) | beam.ParDo(Fn())
    runner.run_expecting_failure(p, match=message)
