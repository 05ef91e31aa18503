"""The transforms a generated pipeline is made of. Each step says two things of itself: the Python
source that applies it (``render``, the one text both the kit's run and the repro program execute)
and what the Beam model makes of it (``apply``, through conformance.model). User code (a map's
lambda) is written once, as source; the model evaluates that same text, so only Beam's rules are
the model's, never the user's arithmetic.

Every element is a key-value pair of a str and an int, typed so that each PCollection a step
declares has standard coders (KV, string, varint, iterable): a runner of any SDK can read them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import ClassVar

from conformance.model import batch, stateful, windows
from conformance.model.batch import END_OF_WINDOW, Elem

# user functions of the menu: source text over k (the key) and v (the value)
VALUE_MAPS = ("v + 1", "v * 2", "v - 3", "v % 7", "-v")
FILTERS = ("v % 2 == 0", "v > 0", "k != 'a'", "v % 3 != 1")
FLAT_MAPS = ("[(k, v), (k, v + 100)]", "[(k, v)] * (v % 3)", "[(k + k, v)]")
REKEYS = ("k + str(v % 2)", "'k' + str(abs(v) % 3)")
REDUCERS = ("sum(vs)", "len(vs)", "max(vs)", "min(vs)")
COMBINE_FNS = ("Sum", "Max", "Min")
TIMESTAMP_COMBINERS = {
    batch.END_OF_WINDOW: "window.TimestampCombiner.OUTPUT_AT_EOW",
    batch.EARLIEST: "window.TimestampCombiner.OUTPUT_AT_EARLIEST",
    batch.LATEST: "window.TimestampCombiner.OUTPUT_AT_LATEST",
}
MS = 1000


def user_fn(args: str, body: str) -> Callable:
    """The model's copy of a user function: the same source text, evaluated."""
    return eval(f"lambda {args}: {body}", {})  # noqa: S307 - the kit's own menu, never input


@dataclass
class Flow:
    """What the model knows of the PCollection a step reads: its elements and windowing."""

    elems: list[Elem]
    windowfn: object = field(default_factory=windows.GlobalWindows)
    timestamp_combiner: str = END_OF_WINDOW


class Source:
    """Lines that write the program's helper classes, once each."""

    def __init__(self, prefix_var: str = "prefix"):
        self.lines: list[str] = []
        self.helpers: set[str] = set()
        self.count = 0
        self.prefix_var = prefix_var

    def name(self, what: str) -> str:
        self.count += 1
        return f'{self.prefix_var} + "{self.count:02d} {what}"'

    def emit(self, expression: str) -> str:
        var = f"pc{self.count}"
        self.lines.append(f"    {var} = {expression}")
        return var


class Step(ABC):
    """One transform of a generated pipeline."""

    kind: ClassVar[str] = ""  # its name in signatures and reports
    capability: ClassVar[str] = "pardo.basic"
    # element-wise steps keep windows, timestamps and panes, and may sit anywhere
    elementwise: ClassVar[bool] = False

    @abstractmethod
    def render(self, src: Source, pc: str) -> str:
        """Writes the lines that apply the step to ``pc``; returns the variable of its output."""

    @abstractmethod
    def apply(self, flow: Flow) -> Flow:
        """What the model makes of the step."""

    def capabilities(self) -> set[str]:
        return {self.capability}


def _kv_map(flow: Flow, fn: Callable) -> Flow:
    return replace(flow, elems=[e._replace(value=fn(*e.value)) for e in flow.elems])


@dataclass(frozen=True)
class MapValues(Step):
    expr: str
    kind = "Map"
    elementwise = True

    def render(self, src, pc):
        return src.emit(
            f"{pc} | {src.name('Map')} >> beam.MapTuple(lambda k, v: (k, {self.expr})).with_output_types(KV)"
        )

    def apply(self, flow):
        fn = user_fn("k, v", self.expr)
        return _kv_map(flow, lambda k, v: (k, fn(k, v)))


@dataclass(frozen=True)
class FilterValues(Step):
    cond: str
    kind = "Filter"
    elementwise = True

    def render(self, src, pc):
        return src.emit(f"{pc} | {src.name('Filter')} >> beam.Filter(lambda kv: (lambda k, v: {self.cond})(*kv))")

    def apply(self, flow):
        fn = user_fn("k, v", self.cond)
        return replace(flow, elems=[e for e in flow.elems if fn(*e.value)])


@dataclass(frozen=True)
class FlatMapValues(Step):
    expr: str
    kind = "FlatMap"
    elementwise = True

    def render(self, src, pc):
        return src.emit(
            f"{pc} | {src.name('FlatMap')} >> beam.FlatMapTuple(lambda k, v: {self.expr}).with_output_types(KV)"
        )

    def apply(self, flow):
        fn = user_fn("k, v", self.expr)
        return replace(flow, elems=[e._replace(value=out) for e in flow.elems for out in fn(*e.value)])


@dataclass(frozen=True)
class Rekey(Step):
    expr: str
    kind = "Rekey"
    elementwise = True

    def render(self, src, pc):
        return src.emit(
            f"{pc} | {src.name('Rekey')} >> beam.MapTuple(lambda k, v: ({self.expr}, v)).with_output_types(KV)"
        )

    def apply(self, flow):
        fn = user_fn("k, v", self.expr)
        return _kv_map(flow, lambda k, v: (fn(k, v), v))


@dataclass(frozen=True)
class ShiftTimestamps(Step):
    """Moves every timestamp later by whole seconds (a TimestampedValue keeps the windows; the
    model does not fix the pane of such an output)."""

    seconds: int
    kind = "TimestampedValue"
    capability = "window.timestamp_control"

    def render(self, src, pc):
        return src.emit(
            f"{pc} | {src.name('Shift')} >> beam.Map(lambda kv, t=beam.DoFn.TimestampParam: "
            f"window.TimestampedValue(kv, t + {self.seconds})).with_output_types(KV)"
        )

    def apply(self, flow):
        return replace(
            flow, elems=[e._replace(timestamp=e.timestamp + self.seconds * MS, pane=None) for e in flow.elems]
        )


@dataclass(frozen=True)
class WindowSpec:
    """A WindowFn by its parameters in whole seconds: ("fixed", size, offset), ("sliding", size,
    period), ("sessions", gap) or ("global",)."""

    shape: tuple

    _NAMES = {"fixed": "FixedWindows", "sliding": "SlidingWindows", "sessions": "Sessions", "global": "GlobalWindows"}

    def model(self):
        kind, *args = self.shape
        return windows.by_name(self._NAMES[kind], [a * MS for a in args])

    def source(self) -> str:
        kind, *args = self.shape
        return f"window.{self._NAMES[kind]}({', '.join(map(str, args))})"

    @property
    def capability(self) -> str:
        return {"fixed": "gbk.fixed", "sliding": "gbk.sliding", "sessions": "gbk.sessions", "global": "window.global"}[
            self.shape[0]
        ]

    @property
    def merging(self) -> bool:
        return self.shape[0] == "sessions"

    @property
    def is_global(self) -> bool:
        return self.shape[0] == "global"


@dataclass(frozen=True)
class WindowInto(Step):
    spec: WindowSpec
    timestamp_combiner: str = END_OF_WINDOW
    kind = "WindowInto"

    def render(self, src, pc):
        tsc = (
            ""
            if self.timestamp_combiner == END_OF_WINDOW
            else f", timestamp_combiner={TIMESTAMP_COMBINERS[self.timestamp_combiner]}"
        )
        return src.emit(f"{pc} | {src.name('Window')} >> beam.WindowInto({self.spec.source()}{tsc})")

    def apply(self, flow):
        fn = self.spec.model()
        return replace(
            flow, elems=batch.window_into(flow.elems, fn), windowfn=fn, timestamp_combiner=self.timestamp_combiner
        )

    def capabilities(self):
        caps = {self.spec.capability}
        if self.timestamp_combiner != END_OF_WINDOW:
            caps.add("window.timestamp_control")
        return caps


@dataclass(frozen=True)
class GroupAndReduce(Step):
    reducer: str
    kind = "GroupByKey"

    def render(self, src, pc):
        grouped = src.emit(f"{pc} | {src.name('GroupByKey')} >> beam.GroupByKey()")
        return src.emit(
            f"{grouped} | {src.name('Reduce')} >> beam.MapTuple(lambda k, vs: (k, {self.reducer})).with_output_types(KV)"  # noqa: E501
        )

    def apply(self, flow):
        fn = user_fn("vs", self.reducer)
        groups = batch.group_by_key(flow.elems, flow.windowfn, flow.timestamp_combiner)
        return replace(flow, elems=[g._replace(value=(g.value[0], fn(g.value[1]))) for g in groups])

    def capabilities(self):
        return {"gbk.global"}


_COMBINE_MODEL = {"Sum": sum, "Max": max, "Min": min}


@dataclass(frozen=True)
class CombinePerKey(Step):
    fn: str
    kind = "CombinePerKey"
    capability = "combine.per_key"

    def render(self, src, pc):
        src.helpers.add(self.fn)
        return src.emit(f"{pc} | {src.name('CombinePerKey')} >> beam.CombinePerKey({self.fn}())")

    def apply(self, flow):
        return replace(
            flow,
            elems=batch.combine_per_key(flow.elems, flow.windowfn, _COMBINE_MODEL[self.fn], flow.timestamp_combiner),
        )


@dataclass(frozen=True)
class CombineGlobally(Step):
    """The values combined per window (without defaults), keyed "all" again."""

    fn: str
    kind = "CombineGlobally"
    capability = "combine.globally"

    def render(self, src, pc):
        src.helpers.add(self.fn)
        values = src.emit(f"{pc} | {src.name('Values')} >> beam.Map(lambda kv: kv[1]).with_output_types(int)")
        combined = src.emit(
            f"{values} | {src.name('CombineGlobally')} >> beam.CombineGlobally({self.fn}()).without_defaults()"
        )
        return src.emit(f"{combined} | {src.name('Key')} >> beam.Map(lambda s: ('all', s)).with_output_types(KV)")

    def apply(self, flow):
        values = [e._replace(value=e.value[1]) for e in flow.elems]
        combined = batch.combine_globally(values, flow.windowfn, _COMBINE_MODEL[self.fn], flow.timestamp_combiner)
        return replace(flow, elems=[e._replace(value=("all", e.value)) for e in combined])


@dataclass(frozen=True)
class FlattenWith(Step):
    """Flatten of the input with itself (``branch`` empty: the same PCollection twice) or with an
    element-wise branch of it."""

    branch: tuple = ()
    kind = "Flatten"

    def render(self, src, pc):
        other = pc
        for step in self.branch:
            other = step.render(src, other)
        return src.emit(f"({pc}, {other}) | {src.name('Flatten')} >> beam.Flatten()")

    def apply(self, flow):
        other = flow
        for step in self.branch:
            other = step.apply(other)
        return replace(flow, elems=batch.flatten(flow.elems, other.elems))

    def capabilities(self):
        return {"flatten.basic" if self.branch else "flatten.same_input"} | {
            c for s in self.branch for c in s.capabilities()
        }


@dataclass(frozen=True)
class CoGroup(Step):
    """CoGroupByKey of the input and an element-wise branch of it, reduced to sum(left) * 100 + len(right)."""

    branch: tuple = ()
    kind = "CoGroupByKey"
    capability = "gbk.global"

    def render(self, src, pc):
        other = pc
        for step in self.branch:
            other = step.render(src, other)
        joined = src.emit(f"{{'l': {pc}, 'r': {other}}} | {src.name('CoGroupByKey')} >> beam.CoGroupByKey()")
        return src.emit(
            f"{joined} | {src.name('Join')} >> beam.MapTuple(lambda k, g: (k, sum(g['l']) * 100 + len(list(g['r'])))).with_output_types(KV)"  # noqa: E501
        )

    def apply(self, flow):
        other = flow
        for step in self.branch:
            other = step.apply(other)
        joined = batch.co_group_by_key({"l": flow.elems, "r": other.elems}, flow.windowfn, flow.timestamp_combiner)
        return replace(
            flow,
            elems=[g._replace(value=(g.value[0], sum(g.value[1]["l"]) * 100 + len(g.value[1]["r"]))) for g in joined],
        )

    def capabilities(self):
        return {self.capability} | {c for s in self.branch for c in s.capabilities()}


@dataclass(frozen=True)
class Reshuffle(Step):
    kind = "Reshuffle"
    capability = "reshuffle"

    def render(self, src, pc):
        return src.emit(f"{pc} | {src.name('Reshuffle')} >> beam.Reshuffle()")

    def apply(self, flow):
        return flow  # the identity, panes included (SEMANTICS 10)


@dataclass(frozen=True)
class PartitionTake(Step):
    """Partition by value modulo ``parts``, keeping partition ``index``."""

    parts: int
    index: int
    kind = "Partition"
    capability = "library.partition"

    def render(self, src, pc):
        split = src.emit(f"{pc} | {src.name('Partition')} >> beam.Partition(lambda kv, n: kv[1] % n, {self.parts})")
        return src.emit(f"{split}[{self.index}]")

    def apply(self, flow):
        return replace(flow, elems=[e for e in flow.elems if e.value[1] % self.parts == self.index])


SIDE_KINDS = ("list", "iter", "singleton", "dict")


@dataclass(frozen=True)
class WithSideInput(Step):
    """Adds to each value what a side input of the same PCollection shows its window: the sum of
    an AsList, the max of an AsIter (0 if empty), an AsSingleton of the combined sum (default 0),
    or the key's sum in an AsDict (0 if absent)."""

    view: str
    kind = "SideInput"
    capability = "side_inputs.windowed"

    def render(self, src, pc):
        if self.view in ("list", "iter"):
            side = src.emit(f"{pc} | {src.name('SideValues')} >> beam.Map(lambda kv: kv[1]).with_output_types(int)")
            view, use = ("AsList", "sum(s)") if self.view == "list" else ("AsIter", "max(s, default=0)")
            arg = f"beam.pvalue.{view}({side})"
        elif self.view == "singleton":
            src.helpers.add("Sum")
            values = src.emit(f"{pc} | {src.name('SideValues')} >> beam.Map(lambda kv: kv[1]).with_output_types(int)")
            side = src.emit(f"{values} | {src.name('SideSum')} >> beam.CombineGlobally(Sum()).without_defaults()")
            arg, use = f"beam.pvalue.AsSingleton({side}, default_value=0)", "s"
        else:
            src.helpers.add("Sum")
            side = src.emit(f"{pc} | {src.name('SideSums')} >> beam.CombinePerKey(Sum())")
            arg, use = f"beam.pvalue.AsDict({side})", "s.get(kv[0], 0)"
        return src.emit(
            f"{pc} | {src.name('WithSide')} >> beam.Map(lambda kv, s: (kv[0], kv[1] + {use}), s={arg}).with_output_types(KV)"  # noqa: E501
        )

    def apply(self, flow):
        by_window: dict = {}
        for e in flow.elems:
            by_window.setdefault(e.window, []).append(e.value)
        out = []
        for e in flow.elems:
            seen = by_window.get(windows.side_window(flow.windowfn, e.window), [])
            if self.view == "list" or self.view == "singleton":
                extra = sum(v for _, v in seen)
            elif self.view == "iter":
                extra = max((v for _, v in seen), default=0)
            else:
                extra = sum(v for k, v in seen if batch.key_identity(k) == batch.key_identity(e.value[0]))
            out.append(e._replace(value=(e.value[0], e.value[1] + extra)))
        return replace(flow, elems=out)

    def capabilities(self):
        return {f"side_inputs.{self.view}" if self.view != "iter" else "side_inputs.iterable", "side_inputs.windowed"}


@dataclass(frozen=True)
class Accumulate(Step):
    """A stateful DoFn: per key and window, a bag, a combining (sum) and a value (max) state, and an
    event-time timer at the window's max timestamp that emits (key, count), (key, sum), (key, max)."""

    kind = "StatefulDoFn"
    capability = "state.bag"

    def render(self, src, pc):
        src.helpers.update(("Sum", "Accumulate"))
        return src.emit(f"{pc} | {src.name('Stateful')} >> beam.ParDo(Accumulate()).with_output_types(KV)")

    def apply(self, flow):
        return replace(flow, elems=stateful.accumulate(flow.elems))

    def capabilities(self):
        return {"state.bag", "state.combining", "state.value", "timers.event_time", "timers.output_timestamp"}


def _best_of(name: str, pick: str) -> str:
    """A typed CombineFn keeping the ``pick`` (max or min) of its inputs."""
    return f"""
@beam.typehints.with_input_types(int)
@beam.typehints.with_output_types(int)
class {name}(beam.CombineFn):
    def create_accumulator(self):
        return None

    def add_input(self, best, value):
        return value if best is None else {pick}(best, value)

    def merge_accumulators(self, bests):
        return {pick}((b for b in bests if b is not None), default=None)

    def extract_output(self, best):
        return best
"""


# in the order they are written: the stateful DoFn's combining state uses Sum
HELPERS = {
    "Sum": """
@beam.typehints.with_input_types(int)
@beam.typehints.with_output_types(int)
class Sum(beam.CombineFn):
    def create_accumulator(self):
        return 0

    def add_input(self, total, value):
        return total + value

    def merge_accumulators(self, totals):
        return sum(totals)

    def extract_output(self, total):
        return total
""",
    "Max": _best_of("Max", "max"),
    "Min": _best_of("Min", "min"),
    "Accumulate": """
class Accumulate(beam.DoFn):
    BAG = userstate.BagStateSpec("bag", beam.coders.VarIntCoder())
    TOTAL = userstate.CombiningValueStateSpec("total", beam.coders.VarIntCoder(), Sum())
    BIGGEST = userstate.ReadModifyWriteStateSpec("biggest", beam.coders.VarIntCoder())
    FLUSH = userstate.TimerSpec("flush", userstate.TimeDomain.WATERMARK)

    def process(
        self,
        kv,
        w=beam.DoFn.WindowParam,
        bag=beam.DoFn.StateParam(BAG),
        total=beam.DoFn.StateParam(TOTAL),
        biggest=beam.DoFn.StateParam(BIGGEST),
        flush=beam.DoFn.TimerParam(FLUSH),
    ):
        bag.add(kv[1])
        total.add(kv[1])
        best = biggest.read()
        biggest.write(kv[1] if best is None else max(best, kv[1]))
        flush.set(w.max_timestamp())

    @userstate.on_timer(FLUSH)
    def flushed(
        self,
        key=beam.DoFn.KeyParam,
        bag=beam.DoFn.StateParam(BAG),
        total=beam.DoFn.StateParam(TOTAL),
        biggest=beam.DoFn.StateParam(BIGGEST),
    ):
        yield key, len(list(bag.read()))
        yield key, total.read()
        yield key, biggest.read()
""",
}
