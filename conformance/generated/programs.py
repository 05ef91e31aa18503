"""A generated pipeline: a source (a Create of timestamped pairs, or a TestStream script), a chain
of steps (conformance/generated/steps.py) and, for a triggered program, a last windowing with a
trigger and a GroupByKey. ``source_text`` writes it as a Python module whose ``build(p, prefix)``
applies it (what the kit runs and what a repro program runs); ``expectation`` is what the Beam model
makes of it (conformance.model), exact or, where the runner may choose, as constraints."""

from __future__ import annotations

from dataclasses import dataclass

from conformance.generated import steps as st
from conformance.model import streaming, triggers
from conformance.model.batch import END_OF_WINDOW, Elem

MS = st.MS


@dataclass(frozen=True)
class Create:
    """(key, value, timestamp in seconds) pairs, stamped with their timestamps."""

    elements: tuple
    kind = "Create"


@dataclass(frozen=True)
class Stream:
    """A TestStream script: ("elements", ((key, value, seconds), ...)), ("watermark", seconds) or
    ("processing_time", seconds advanced); the stream ends with the watermark at infinity."""

    events: tuple
    kind = "TestStream"

    def elements(self) -> list:
        return [e for kind, body in self.events if kind == "elements" for e in body]


@dataclass(frozen=True)
class Triggered:
    """The program's last windowing, with a trigger, then a GroupByKey (values left unsorted)."""

    window: st.WindowSpec
    trigger: triggers.Trigger
    accumulating: bool = False
    lateness: int = 0  # seconds
    timestamp_combiner: str = END_OF_WINDOW

    def strategy(self) -> streaming.Strategy:
        return streaming.Strategy(
            self.window.model(), self.trigger, self.accumulating, self.lateness * MS, self.timestamp_combiner
        )


@dataclass(frozen=True)
class Program:
    source: Create | Stream
    steps: tuple = ()
    triggered: Triggered | None = None

    @property
    def streaming(self) -> bool:
        return isinstance(self.source, Stream)

    @property
    def size(self) -> int:
        """Transforms as a reader counts them: the source, each step, and WindowInto + GroupByKey."""
        return 1 + len(self.steps) + (2 if self.triggered else 0)

    def transforms(self) -> list[str]:
        kinds = [self.source.kind] + [s.kind for s in self.steps]
        if self.triggered is not None:
            kinds += ["WindowInto", "GroupByKey"]
        return kinds

    def capabilities(self) -> list[str]:
        caps: set[str] = {"teststream"} if self.streaming else set()
        for s in self.steps:
            caps |= s.capabilities()
        if self.triggered is not None:
            caps |= trigger_capabilities(self.triggered)
        return sorted(caps)

    # --- the program as Python source ----------------------------------------------------------

    def source_text(self) -> str:
        src = st.Source()
        pc = self._render_source(src)
        for step in self.steps:
            pc = step.render(src, pc)
        if self.triggered is not None:
            t = self.triggered
            args = [t.window.source(), f"trigger={render_trigger(t.trigger)}"]
            args.append(
                "accumulation_mode=trigger.AccumulationMode." + ("ACCUMULATING" if t.accumulating else "DISCARDING")
            )
            if t.lateness:
                args.append(f"allowed_lateness={t.lateness}")
            if t.timestamp_combiner != END_OF_WINDOW:
                args.append(f"timestamp_combiner={st.TIMESTAMP_COMBINERS[t.timestamp_combiner]}")
            pc = src.emit(f"{pc} | {src.name('Window')} >> beam.WindowInto({', '.join(args)})")
            pc = src.emit(f"{pc} | {src.name('GroupByKey')} >> beam.GroupByKey()")
        helpers = "".join(text for name, text in st.HELPERS.items() if name in src.helpers)
        body = "\n".join(src.lines)
        return f"{PRELUDE}{helpers}\n\ndef build(p, prefix=''):\n{body}\n    return {pc}\n"

    def _render_source(self, src: st.Source) -> str:
        if isinstance(self.source, Create):
            created = src.emit(f"p | {src.name('Create')} >> beam.Create({list(self.source.elements)!r})")
            return src.emit(
                f"{created} | {src.name('Stamp')} >> beam.Map(lambda e: window.TimestampedValue((e[0], e[1]), e[2]))"
                ".with_output_types(KV)"
            )
        chain = ["TestStream(coder=KV_CODER)"]
        for kind, body in self.source.events:
            if kind == "elements":
                values = ", ".join(f"window.TimestampedValue(({k!r}, {v}), {t})" for k, v, t in body)
                chain.append(f".add_elements([{values}])")
            elif kind == "watermark":
                chain.append(f".advance_watermark_to({body})")
            else:
                chain.append(f".advance_processing_time({body})")
        chain.append(".advance_watermark_to_infinity()")
        stream = "\n        ".join(chain)
        return src.emit(f"p | {src.name('TestStream')} >> (\n        {stream}\n    ).with_output_types(KV)")

    # --- what the model makes of it ----------------------------------------------------------

    def expectation(self):
        if self.triggered is None:
            flow = st.Flow(self._input_elems())
            for step in self.steps:
                flow = step.apply(flow)
            return Exact(tuple(flow.elems))
        return Replayed(streaming.replay(self._stream_events(), self.triggered.strategy()))

    def _input_elems(self) -> list[Elem]:
        rows = self.source.elements if isinstance(self.source, Create) else self.source.elements()
        return [Elem((k, v), t * MS) for k, v, t in rows]

    def _stream_events(self) -> list:
        """The script as the GroupByKey sees it: each event's elements through the steps."""
        assert isinstance(self.source, Stream)
        events: list = []
        for kind, body in self.source.events:
            if kind == "elements":
                flow = st.Flow([Elem((k, v), t * MS) for k, v, t in body])
                for step in self.steps:
                    flow = step.apply(flow)
                events.append(streaming.Elements(tuple((e.value[0], e.value[1], e.timestamp) for e in flow.elems)))
            elif kind == "watermark":
                events.append(streaming.Watermark(body * MS))
            else:
                events.append(streaming.ProcessingTime(body * MS))
        return events


@dataclass(frozen=True)
class Exact:
    """The model fixes the output: every element with its value, timestamp, window and (where
    not None) pane."""

    elems: tuple


@dataclass(frozen=True)
class Replayed:
    """A triggered GroupByKey's panes: exact per key and window where the replay fixes them,
    constraints where the runner chose the bundling."""

    replay: streaming.Replay


PRELUDE = """import typing

import apache_beam as beam
from apache_beam.testing.test_stream import TestStream
from apache_beam.transforms import trigger, userstate, window

KV = typing.Tuple[str, int]
KV_CODER = beam.coders.TupleCoder([beam.coders.StrUtf8Coder(), beam.coders.VarIntCoder()])
"""


def render_trigger(t: triggers.Trigger) -> str:
    """The Beam Python source of a model trigger (processing-time delays in seconds)."""
    if isinstance(t, triggers.AfterCount):
        return f"trigger.AfterCount({t.count})"
    if isinstance(t, triggers.AfterProcessingTime):
        return f"trigger.AfterProcessingTime({t.delay // MS})"
    if isinstance(t, triggers.AfterWatermark):
        parts = [f"{n}={render_trigger(x)}" for n, x in (("early", t.early), ("late", t.late)) if x is not None]
        return f"trigger.AfterWatermark({', '.join(parts)})"
    if isinstance(t, triggers.Default):
        return "trigger.DefaultTrigger()"
    if isinstance(t, triggers.Never):
        return "trigger._Never()"
    if isinstance(t, triggers.Repeatedly):
        return f"trigger.Repeatedly({render_trigger(t.child)})"
    if isinstance(t, triggers.OrFinally):
        return f"trigger.OrFinally({render_trigger(t.trigger)}, {render_trigger(t.until)})"
    if isinstance(t, (triggers.AfterAny, triggers.AfterAll, triggers.AfterEach)):
        return f"trigger.{type(t).__name__}({', '.join(render_trigger(c) for c in t.triggers)})"
    raise TypeError(f"no Beam source for trigger {t!r}")


def trigger_capabilities(t: Triggered) -> set[str]:
    caps = {"triggers.pane_info", "triggers.accumulating" if t.accumulating else "triggers.discarding"}
    for part in t.trigger.walk():
        if isinstance(part, triggers.AfterCount):
            caps.add("triggers.count")
        elif isinstance(part, triggers.AfterProcessingTime):
            caps.add("triggers.processing_time")
        elif isinstance(part, (triggers.AfterWatermark, triggers.Default)):
            caps.add("triggers.event_time")
        if isinstance(
            part, (triggers.Repeatedly, triggers.AfterAny, triggers.AfterAll, triggers.AfterEach, triggers.OrFinally)
        ):
            caps.add("triggers.composite")
    if t.lateness:
        caps.add("lateness.allowed")
    caps.add(t.window.capability)
    return caps


# which capability a deviation counts against, most specific first
PRIMARY = (
    "triggers.count",
    "triggers.processing_time",
    "triggers.composite",
    "lateness.allowed",
    "triggers.accumulating",
    "triggers.discarding",
    "triggers.pane_info",
    "timers.output_timestamp",
    "state.bag",
    "side_inputs.dict",
    "side_inputs.singleton",
    "side_inputs.list",
    "side_inputs.iterable",
    "combine.globally",
    "combine.per_key",
    "gbk.sessions",
    "gbk.sliding",
    "window.timestamp_control",
    "flatten.same_input",
    "flatten.basic",
    "reshuffle",
    "library.partition",
    "gbk.fixed",
    "gbk.global",
    "triggers.event_time",
    "teststream",
    "pardo.basic",
)


def primary_capability(caps: list[str]) -> str:
    for c in PRIMARY:
        if c in caps:
            return c
    return caps[0] if caps else "pardo.basic"
