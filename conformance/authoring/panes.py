"""Pane helpers shared by the cases about windowing, triggers and lateness: group a keyed
PCollection into its panes in one step, and the PaneInfo a pane of each timing carries
(conformance/SEMANTICS.md, section 5).

group_panes is the one way a case windows, groups and sorts: its transforms are labelled Window,
Group and Sort, so a pipeline holds one of it (a case that groups twice labels its own transforms).
"""

from __future__ import annotations

import apache_beam as beam
from apache_beam.transforms import trigger

from conformance.authoring.checks import sorted_groups
from conformance.authoring.elements import Pane, pane

ACCUMULATING = trigger.AccumulationMode.ACCUMULATING
DISCARDING = trigger.AccumulationMode.DISCARDING


def group_panes(
    pcoll: beam.PCollection,
    windowfn=None,
    trigger_fn=None,
    mode=None,
    lateness=0,
    timestamp_combiner=None,
    sort_key=None,
) -> beam.PCollection:
    """The panes a GroupByKey emits from ``pcoll``, each as (key, sorted values).

    With ``windowfn``, the elements are first put into its windows with ``trigger_fn``, the
    accumulation ``mode``, ``lateness`` (allowed lateness, seconds) and ``timestamp_combiner`` (the
    SDK's defaults where not given); without it they keep the windows they have. Each group's values
    are sorted as sorted_groups() sorts them, or by ``sort_key`` when given (``repr`` for values that
    do not compare)."""
    if windowfn is not None:
        kwargs = {} if timestamp_combiner is None else {"timestamp_combiner": timestamp_combiner}
        pcoll = pcoll | "Window" >> beam.WindowInto(
            windowfn, trigger=trigger_fn, accumulation_mode=mode, allowed_lateness=lateness, **kwargs
        )
    grouped = pcoll | "Group" >> beam.GroupByKey()
    if sort_key is None:
        return grouped | "Sort" >> sorted_groups()
    return grouped | "Sort" >> beam.MapTuple(lambda k, vs: (k, sorted(vs, key=sort_key)))


def early_pane(index: int, *, last: bool = False) -> Pane:
    """A pane fired before the input watermark passed the end of its window."""
    return pane(first=index == 0, last=last, timing="EARLY", index=index, nonspec=-1)


def on_time_pane(index: int, *, last: bool) -> Pane:
    """The first pane fired once the input watermark passed the end of its window."""
    return pane(first=index == 0, last=last, timing="ON_TIME", index=index, nonspec=0)


def late_pane(index: int, nonspec: int, *, last: bool = False) -> Pane:
    """A pane fired after its window's ON_TIME pane (or any non-early pane)."""
    return pane(first=index == 0, last=last, timing="LATE", index=index, nonspec=nonspec)
