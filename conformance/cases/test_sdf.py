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
from apache_beam.transforms.core import RestrictionProvider
from apache_beam.utils.timestamp import Duration, Timestamp

from conformance.api import GLOBAL, ON_TIME_ONLY, W, capability, check, el, sorted_groups


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
        for pos in claimed_offsets(tracker):
            yield pos


def offsets_of(*counts):
    return [(n, i) for n in counts for i in range(n)]


# --------------------------------------------------------------------------- initial splits

@capability("sdf.initial_splits")
def test_offset_range_split_in_pieces_emits_every_offset_once(runner):
    # Initial splits partition the restriction: the union is the whole range, once each.
    p = runner.pipeline()
    check(p | beam.Create([7, 10, 1, 0]) | beam.ParDo(EmitOffsets()), offsets_of(7, 10, 1, 0))
    runner.run(p)


@capability("sdf.initial_splits")
def test_split_into_single_offsets_emits_every_offset_once(runner):
    # A split may produce as many restrictions as positions; still exactly once each.
    p = runner.pipeline()
    check(p | beam.Create([5, 12]) | beam.ParDo(EmitEachOffsetAlone()), offsets_of(5, 12))
    runner.run(p)


@capability("sdf.initial_splits")
def test_custom_split_and_size_into_uneven_pieces(runner):
    # A provider's own split_and_size (one piece per word) still covers every character once.
    texts = ["to be or not", "splittable", "a bc def"]
    p = runner.pipeline()
    out = p | beam.Create(texts) | beam.ParDo(EmitCharacters())
    check(out, [(t, i, c) for t in texts for i, c in enumerate(t)])
    runner.run(p)


@capability("sdf.initial_splits")
def test_dofn_as_its_own_restriction_provider(runner):
    # RestrictionParam() without a provider uses the DoFn itself; halves cover the range once.
    p = runner.pipeline()
    out = p | beam.Create([(3, 9), (100, 103), (5, 5)]) | beam.ParDo(SelfProvidingRange())
    check(out, list(range(3, 9)) + [100, 101, 102])
    runner.run(p)


@capability("sdf.initial_splits")
def test_outputs_keep_element_timestamp_and_window(runner):
    # Every piece of a split element carries the element's timestamp and window.
    p = runner.pipeline()
    out = (p | beam.Create([(2, 3), (3, 14)])
             | beam.Map(lambda nt: window.TimestampedValue(nt[0], nt[1]))
             | beam.WindowInto(window.FixedWindows(10))
             | beam.ParDo(EmitOffsets()))
    check(out, [el((2, 0), 3, W(0, 10)), el((2, 1), 3, W(0, 10)),
                el((3, 0), 14, W(10, 20)), el((3, 1), 14, W(10, 20)), el((3, 2), 14, W(10, 20))])
    runner.run(p)


@capability("sdf.initial_splits")
def test_split_outputs_group_downstream(runner):
    # Outputs of all pieces of one element reach a GroupByKey together, once each.
    p = runner.pipeline()
    out = (p | beam.Create([4, 6]) | beam.ParDo(EmitOffsets())
             | beam.GroupByKey() | sorted_groups())
    check(out, [(4, [0, 1, 2, 3]), (6, [0, 1, 2, 3, 4, 5])])
    runner.run(p)
