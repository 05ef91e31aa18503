"""User types the runner cannot import: keys, values and windows of a class of the user's own.

A portable runner must never need the user's code. A coder it does not know is length-prefixed
and carried as bytes, keys are grouped by their encoded bytes, and only standard coders are
decoded runner-side; that is also what lets pipelines of the Java and Go SDKs run.

The user types here live in a module written at run time into a temporary directory that only
this process puts on its path: a runner process started elsewhere (a job server) cannot import
it. Their classes are pickled by value, so every SDK worker (LOOPBACK, EXTERNAL, PROCESS) gets
them with the pipeline's DoFns and coders; that is why every PCollection of them is typed, so that
it gets the user's coder: a pickling coder writes an instance's class by reference, which only
this process could import. And their coders refuse to decode outside an SDK worker's bundle, so a
runner that decodes user data itself - in process or not - fails these cases with a message
naming the type.
"""

import atexit
import importlib.util
import os
import shutil
import sys
import tempfile
import textwrap
import uuid

import apache_beam as beam
from apache_beam.coders import coders
from apache_beam.internal.cloudpickle import cloudpickle
from apache_beam.transforms import window
from apache_beam.transforms.timeutil import TimeDomain
from apache_beam.transforms.userstate import BagStateSpec, TimerSpec, on_timer

from conformance.api import GLOBAL, TestStream, W, capability, check, el, stamped_by_value

_SOURCE = '''
"""User types of a conformance case: not importable by any other process."""
import struct

from apache_beam.coders import coders
from apache_beam.runners.worker import statesampler
from apache_beam.transforms import window


def _in_sdk_bundle(what):
    # An SDK worker processes bundles under a state sampler; a runner's own threads do not.
    if statesampler.get_current_tracker() is None:
        raise RuntimeError(f"{what} was decoded outside an SDK worker's bundle: the runner decoded "
                           "a user type it cannot import; it must carry it as opaque bytes")


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __eq__(self, other):
        return isinstance(other, Point) and (self.x, self.y) == (other.x, other.y)

    def __hash__(self):
        return hash((self.x, self.y))

    def __repr__(self):
        return f"Point({self.x}, {self.y})"


class _UserCoder(coders.Coder):
    def is_deterministic(self):
        return True

    def __eq__(self, other):
        return type(self) is type(other)

    def __hash__(self):
        return hash(type(self))


class PointCoder(_UserCoder):
    def encode(self, p):
        return struct.pack(">qq", p.x, p.y)

    def decode(self, data):
        _in_sdk_bundle("Point")
        return Point(*struct.unpack(">qq", data))

    def to_type_hint(self):
        return Point


class TextPoint(Point):
    """A Point with a coder of its own (its coordinates as text)."""


class TextPointCoder(_UserCoder):
    def encode(self, p):
        return f"{p.x},{p.y}".encode()

    def decode(self, data):
        _in_sdk_bundle("TextPoint")
        return TextPoint(*map(int, data.decode().split(",")))


class Parity(window.BoundedWindow):
    """All even (or all odd) seconds of one minute: a window type of the user's own."""

    def __init__(self, minute, odd):
        super().__init__(window.Timestamp(seconds=(minute + 1) * 60))
        self.minute, self.odd = minute, odd

    @property
    def start(self):
        return window.Timestamp(seconds=self.minute * 60)

    def __eq__(self, other):
        return isinstance(other, Parity) and (self.minute, self.odd) == (other.minute, other.odd)

    def __hash__(self):
        return hash((self.minute, self.odd))

    def __repr__(self):
        return f"Parity({self.minute}, {'odd' if self.odd else 'even'})"


class ParityCoder(_UserCoder):
    def encode(self, w):
        return struct.pack(">q?", w.minute, w.odd)

    def decode(self, data):
        _in_sdk_bundle("Parity window")
        return Parity(*struct.unpack(">q?", data))


class ParityWindows(window.NonMergingWindowFn):
    def assign(self, context):
        seconds = context.timestamp.micros // 1_000_000
        return [Parity(seconds // 60, seconds % 2 == 1)]

    def get_window_coder(self):
        return ParityCoder()


from apache_beam.coders import typecoders
typecoders.registry.register_coder(Point, PointCoder)
typecoders.registry.register_coder(TextPoint, TextPointCoder)
'''


def _user_module():
    """The user types, written where only this process looks for them."""
    name = f"conformance_user_types_{uuid.uuid4().hex[:8]}"
    directory = tempfile.mkdtemp(prefix="conformance-user-types-")
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    path = os.path.join(directory, f"{name}.py")
    with open(path, "w") as f:
        f.write(textwrap.dedent(_SOURCE))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    cloudpickle.register_pickle_by_value(module)  # SDK workers get the classes with the pipeline
    return module


_types = _user_module()
Point, ParityWindows = _types.Point, _types.ParityWindows


def _xy(p):
    """A Point as a plain tuple, for checks (done in the SDK, so outputs are plain data)."""
    return p.x, p.y


_POINTS = [(Point(1, 2), 10), (Point(3, 4), 20), (Point(1, 2), 30), (Point(5, 6), 40)]


@capability("coders.opaque_user_types")
def test_user_type_keys_group_by_encoding(runner):
    # GroupByKey by encoded key bytes: equal Points (same encoding) form one group (SEMANTICS 1 and 8).
    p = runner.pipeline()
    out = (
        p
        | beam.Create(_POINTS).with_output_types(tuple[Point, int])
        | beam.GroupByKey()
        | beam.MapTuple(lambda k, vs: (_xy(k), sorted(vs)))
    )
    check(
        out,
        [el(((1, 2), [10, 30]), window=GLOBAL), el(((3, 4), [20]), window=GLOBAL), el(((5, 6), [40]), window=GLOBAL)],
    )
    runner.run(p)


@capability("coders.opaque_user_types")
def test_user_type_values_through_group_and_combine(runner):
    # Values of a user type cross a GroupByKey and a lifted CombinePerKey as opaque bytes (SEMANTICS 1 and 8).
    p = runner.pipeline()
    points = p | beam.Create([("a", Point(1, 1)), ("a", Point(2, 3)), ("b", Point(4, 5))]).with_output_types(
        tuple[str, Point]
    )
    grouped = points | beam.GroupByKey() | beam.MapTuple(lambda k, vs: (k, sorted(_xy(v) for v in vs)))
    check(grouped, [("a", [(1, 1), (2, 3)]), ("b", [(4, 5)])], label="grouped")
    summed = points | beam.CombinePerKey(_SumPoints()) | beam.MapTuple(lambda k, v: (k, _xy(v)))
    check(summed, [("a", (3, 4)), ("b", (4, 5))], label="combined")
    runner.run(p)


class _SumPoints(beam.CombineFn):
    def create_accumulator(self):
        return Point(0, 0)

    def add_input(self, acc, p):
        return Point(acc.x + p.x, acc.y + p.y)

    def merge_accumulators(self, accs):
        accs = list(accs)
        return Point(sum(a.x for a in accs), sum(a.y for a in accs))

    def extract_output(self, acc):
        return acc

    def get_accumulator_coder(self):
        return _types.PointCoder()


@capability("coders.opaque_user_types")
def test_user_type_keys_in_stateful_dofn_with_timer(runner):
    # State and timers are per user-type key: the runner keys them by bytes, never decoding one (SEMANTICS 1 and 7).
    class Collect(beam.DoFn):
        SEEN = BagStateSpec("seen", coders.VarIntCoder())
        FLUSH = TimerSpec("flush", TimeDomain.WATERMARK)

        def process(self, kv, seen=beam.DoFn.StateParam(SEEN), flush=beam.DoFn.TimerParam(FLUSH)):
            seen.add(kv[1])
            flush.set(window.GlobalWindow().max_timestamp())

        @on_timer(FLUSH)
        def on_flush(self, key=beam.DoFn.KeyParam, seen=beam.DoFn.StateParam(SEEN)):
            yield _xy(key), sorted(seen.read())

    p = runner.pipeline()
    out = p | beam.Create(_POINTS).with_output_types(tuple[Point, int]) | beam.ParDo(Collect())
    check(out, [((1, 2), [10, 30]), ((3, 4), [20]), ((5, 6), [40])])
    runner.run(p)


@capability("coders.opaque_user_types")
def test_user_type_side_inputs(runner):
    # A list and a dict side input of user types: served to the SDK as the bytes it wrote (SEMANTICS 1 and 6).
    p = runner.pipeline()
    points = p | "Points" >> beam.Create([Point(1, 2), Point(3, 4)]).with_output_types(Point)
    by_name = p | "Named" >> beam.Create([("p", Point(7, 8))]).with_output_types(tuple[str, Point])
    out = (
        p
        | "Main" >> beam.Create(["x"])
        | beam.Map(
            lambda _, ps, named: (sorted(_xy(q) for q in ps), _xy(named["p"])),
            ps=beam.pvalue.AsList(points),
            named=beam.pvalue.AsDict(by_name),
        )
    )
    check(out, [([(1, 2), (3, 4)], (7, 8))])
    runner.run(p)


@capability("coders.opaque_user_types")
def test_user_types_of_two_coders_flattened_then_grouped(runner):
    # A Flatten of Points and TextPoints (two user coders) into Points, then a GroupByKey: the SDK
    # re-encodes the TextPoints, the runner only moves and groups bytes (SEMANTICS 1 and 3).
    p = runner.pipeline()
    points = p | "Points" >> beam.Create([("k", Point(1, 2))]).with_output_types(tuple[str, Point])
    texts = (
        p
        | "Pairs" >> beam.Create([("k", (3, 4)), ("j", (5, 6))])
        | beam.MapTuple(lambda k, xy: (k, _types.TextPoint(*xy))).with_output_types(tuple[str, _types.TextPoint])
    )
    out = (
        (points, texts)
        | beam.Flatten().with_output_types(tuple[str, Point])
        | beam.GroupByKey()
        | beam.MapTuple(lambda k, vs: (k, sorted(_xy(v) for v in vs)))
    )
    check(out, [("k", [(1, 2), (3, 4)]), ("j", [(5, 6)])])
    runner.run(p)


@capability("coders.opaque_user_types")
def test_window_of_a_user_type_groups_and_keeps_its_window(runner):
    # A WindowFn with a window class and coder of the user's own: the runner learns each window's
    # max timestamp without decoding it (custom_window) and groups per window by its bytes (SEMANTICS 1 and 4).
    p = runner.pipeline()
    data = [("k", 1), ("k", 3), ("k", 2), ("k", 61), ("j", 5)]
    out = (
        p
        | beam.Create(data)
        | stamped_by_value()
        | beam.WindowInto(ParityWindows())
        | beam.GroupByKey()
        | beam.ParDo(_WithParity())
    )
    check(
        out,
        [
            el(("k", 0, True, [1, 3]), 59.999),
            el(("k", 0, False, [2]), 59.999),
            el(("k", 1, True, [61]), 119.999),
            el(("j", 0, True, [5]), 59.999),
        ],
    )
    runner.run(p)


class _WithParity(beam.DoFn):
    def process(self, kv, w=beam.DoFn.WindowParam):
        yield kv[0], w.minute, w.odd, sorted(kv[1])


@capability("coders.opaque_user_types.streaming")
def test_user_types_from_a_test_stream(runner):
    # TestStream events of a user type (encoded with the user's coder): the runner emits the
    # encoded elements as they are, windows them and groups them by bytes. The output is typed as
    # in every case here: untyped, it would get a pickling coder, and pickle writes a Point's class
    # by reference, which no SDK worker outside this process can import (EXTERNAL, PROCESS, Spark's).
    # The one TestStream of the suite whose coder is not standard: a user type is the subject (SEMANTICS 1 and 9).
    stream = (
        TestStream(
            coder=coders.TupleCoder([coders.StrUtf8Coder(), _types.PointCoder()]),
            python_only="its subject is a user type the runner cannot decode: it must emit the events "
            "of the user's coder without decoding them",
        )
        .add_elements([window.TimestampedValue(("k", Point(1, 1)), 1), window.TimestampedValue(("k", Point(2, 2)), 2)])
        .advance_watermark_to(10)
        .add_elements([window.TimestampedValue(("k", Point(3, 3)), 12)])
        .advance_watermark_to_infinity()
        .with_output_types(tuple[str, Point])
    )
    p = runner.pipeline()
    out = (
        p
        | stream
        | beam.WindowInto(window.FixedWindows(10))
        | beam.GroupByKey()
        | beam.MapTuple(lambda k, vs: (k, sorted(_xy(v) for v in vs)))
    )
    check(out, [el(("k", [(1, 1), (2, 2)]), 9.999, W(0, 10)), el(("k", [(3, 3)]), 19.999, W(10, 20))])
    runner.run(p)
