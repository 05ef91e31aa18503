"""The Spark backend used directly from Beam, on the process's local SparkSession."""

import apache_beam as beam
import pytest
from apache_beam.metrics import Metrics
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms import combiners, userstate, window
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import Timestamp

pytest.importorskip("pyspark")

from reference_runner.knobs import OptionError  # noqa: E402
from reference_runner.spark import SparkRunner  # noqa: E402
from reference_runner.spark.spark_backend import SparkJobFailed  # noqa: E402


def test_word_count_with_a_side_input():
    with beam.Pipeline(runner=SparkRunner()) as p:
        stop = p | "Stop" >> beam.Create(["b"])
        counts = (
            p
            | beam.Create(["a b", "b c c"])
            | beam.FlatMap(str.split)
            | beam.Filter(lambda w, s: w != s, beam.pvalue.AsSingleton(stop))
            | beam.Map(lambda w: (w, 1))
            | beam.CombinePerKey(sum)
        )
        assert_that(counts, equal_to([("a", 1), ("c", 2)]))


def test_a_stage_with_two_outputs_feeds_both():
    with beam.Pipeline(runner=SparkRunner()) as p:
        split = beam.Map(lambda x: beam.pvalue.TaggedOutput("odd", x) if x % 2 else x).with_outputs("odd", main="even")
        parts = p | beam.Create(range(6)) | split
        assert_that(parts.even, equal_to([0, 2, 4]), label="even")
        assert_that(parts.odd, equal_to([1, 3, 5]), label="odd")


def test_user_code_runs_once_per_element_when_two_stages_read_its_output():
    seen = Metrics.counter("spark", "seen")

    def count(x):
        seen.inc()
        return x

    p = beam.Pipeline(runner=SparkRunner())
    counted = p | beam.Create(range(10)) | beam.Map(count)
    assert_that(counted | "Double" >> beam.Map(lambda x: 2 * x), equal_to([2 * x for x in range(10)]), label="a")
    assert_that(
        counted
        | "Keyed" >> beam.Map(lambda x: (x % 2, x))
        | beam.GroupByKey()
        | beam.MapTuple(lambda k, vs: (k, sum(vs))),
        equal_to([(0, 20), (1, 25)]),
        label="b",
    )
    result = p.run()
    [counter] = result.metrics().query(MetricsFilter().with_name("seen"))["counters"]
    assert counter.committed == 10


def test_the_users_error_reaches_the_caller_without_the_jvm_stack():
    def explode(x):
        raise ValueError(f"bad element {x}")

    p = beam.Pipeline(runner=SparkRunner())
    _ = p | beam.Create([7]) | beam.Map(explode)
    with pytest.raises(SparkJobFailed, match="bad element 7") as info:
        p.run()
    assert "org.apache.spark" not in str(info.value)


def _innermost_helper(x):
    raise ValueError(f"raised deep down for {x}")


def _outer_helper(x):
    return _innermost_helper(x)


def test_the_users_whole_traceback_reaches_the_caller_nested_frames_included():
    p = beam.Pipeline(runner=SparkRunner())
    _ = p | beam.Create([7]) | beam.Map(_outer_helper)
    with pytest.raises(SparkJobFailed) as info:
        p.run()
    message = str(info.value)
    # the error first, then every frame down to the function that raised
    assert message.splitlines()[0].endswith("ValueError: raised deep down for 7 [while running 'Map(_outer_helper)']")
    assert "in _outer_helper" in message and "in _innermost_helper" in message
    assert 'raise ValueError(f"raised deep down for {x}")' in message
    assert "org.apache.spark" not in message


def test_a_side_input_over_the_size_limit_is_refused_by_name():
    p = beam.Pipeline(runner=SparkRunner(), options=PipelineOptions(["--spark_max_side_input_mib=1"]))
    side = p | "Side" >> beam.Create(["x" * (2 << 20)])
    _ = p | beam.Create([1]) | beam.Map(lambda x, s: x, beam.pvalue.AsList(side))
    with pytest.raises(SparkJobFailed, match="over the limit"):
        p.run()


def test_a_limit_that_is_not_a_positive_integer_is_refused_by_name():
    # in process as over the job server: the options are read by one table (spark/settings.py)
    p = beam.Pipeline(runner=SparkRunner(), options=PipelineOptions(["--spark_max_side_input_mib=0"]))
    _ = p | beam.Create([1])
    with pytest.raises(OptionError, match="spark_max_side_input_mib must be a positive integer, not '0'"):
        p.run()


class _CountAtEndOfKey(beam.DoFn):
    """Counts and gathers each key's values in state; a timer at the end of the global window emits them."""

    COUNT = userstate.CombiningValueStateSpec("count", beam.coders.VarIntCoder(), combiners.CountCombineFn())
    VALUES = userstate.BagStateSpec("values", beam.coders.VarIntCoder())
    END = userstate.TimerSpec("end", userstate.TimeDomain.WATERMARK)

    def process(
        self, kv, count=beam.DoFn.StateParam(COUNT), values=beam.DoFn.StateParam(VALUES), end=beam.DoFn.TimerParam(END)
    ):
        count.add(kv[1])
        values.add(kv[1])
        end.set(GlobalWindow().max_timestamp())

    @userstate.on_timer(END)
    def emit(self, key=beam.DoFn.KeyParam, count=beam.DoFn.StateParam(COUNT), values=beam.DoFn.StateParam(VALUES)):
        yield key, count.read(), sorted(values.read())


def test_stateful_pardo_counts_every_key_exactly_over_several_partitions():
    # 4 partitions, bundles of 5 elements: a partition holds many keys, keys span bundles, and
    # each chunk's state is dropped once its timers fired; no key may see another's state.
    data = [(f"k{k}", v) for k in range(200) for v in range(k % 7 + 1)]
    expected = [(f"k{k}", k % 7 + 1, list(range(k % 7 + 1))) for k in range(200)]
    options = PipelineOptions(["--spark_bundle_size=5"])
    with beam.Pipeline(runner=SparkRunner(parallelism=4), options=options) as p:
        out = p | beam.Create(data) | beam.Reshuffle() | beam.ParDo(_CountAtEndOfKey())
        assert_that(out, equal_to(expected))


class _Countdown(beam.DoFn):
    """Each key's timer re-arms itself, one second later, three times; state counts the firings."""

    FIRED = userstate.ReadModifyWriteStateSpec("fired", beam.coders.VarIntCoder())
    TICK = userstate.TimerSpec("tick", userstate.TimeDomain.WATERMARK)

    def process(self, kv, tick=beam.DoFn.TimerParam(TICK)):
        tick.set(Timestamp(kv[1]))

    @userstate.on_timer(TICK)
    def on_tick(
        self,
        key=beam.DoFn.KeyParam,
        ts=beam.DoFn.TimestampParam,
        fired=beam.DoFn.StateParam(FIRED),
        tick=beam.DoFn.TimerParam(TICK),
    ):
        n = (fired.read() or 0) + 1
        fired.write(n)
        yield key, int(ts), n
        if n < 3:
            tick.set(ts + 1)


def test_timers_set_by_callbacks_fire_per_key_until_done_on_spark():
    data = [(f"k{k}", k % 5) for k in range(40)]
    expected = [(f"k{k}", k % 5 + i, i + 1) for k in range(40) for i in range(3)]
    options = PipelineOptions(["--spark_bundle_size=3"])
    with beam.Pipeline(runner=SparkRunner(parallelism=4), options=options) as p:
        out = p | beam.Create(data) | beam.ParDo(_Countdown())
        assert_that(out, equal_to(expected))


class _TimerAfterExpiry(beam.DoFn):
    LATE = userstate.TimerSpec("late", userstate.TimeDomain.WATERMARK)

    def process(self, kv, late=beam.DoFn.TimerParam(LATE), w=beam.DoFn.WindowParam):
        late.set(w.max_timestamp() + 6)  # allowed lateness is 5 s

    @userstate.on_timer(LATE)
    def on_late(self):
        yield "never"


def test_a_timer_set_after_its_window_expires_fails_the_job_by_name():
    p = beam.Pipeline(runner=SparkRunner())
    _ = (
        p
        | beam.Create([("k", 1)])
        | beam.Map(lambda kv: window.TimestampedValue(kv, 1))
        | beam.WindowInto(window.FixedWindows(10), allowed_lateness=5)
        | beam.ParDo(_TimerAfterExpiry())
    )
    with pytest.raises(
        SparkJobFailed, match=r"timer ts-late of .* set for Timestamp\(15\.999000\), after its window's expiration"
    ):
        p.run()


class _Panes(beam.DoFn):
    def process(self, kv, pane=beam.DoFn.PaneInfoParam):
        yield f"{pane.timing} {pane.index} {'last' if pane.is_last else 'not-last'}"


def test_a_count_trigger_fires_early_panes_in_batch_then_the_on_time_pane():
    # Each key's elements reach the trigger one by one before the watermark passes the window:
    # AfterWatermark(early=AfterCount(2)), discarding, over 5 elements -> 2 EARLY panes of 2, then
    # the ON_TIME pane with the fifth (the last pane, allowed lateness 0).
    from apache_beam.transforms import trigger
    from apache_beam.utils.windowed_value import PaneInfoTiming

    with beam.Pipeline(runner=SparkRunner()) as p:
        out = (
            p
            | beam.Create([("k", v) for v in range(5)])
            | beam.Map(lambda kv: window.TimestampedValue(kv, 1))
            | beam.WindowInto(
                window.FixedWindows(10),
                trigger=trigger.AfterWatermark(early=trigger.AfterCount(2)),
                accumulation_mode=trigger.AccumulationMode.DISCARDING,
            )
            | beam.GroupByKey()
        )
        assert_that(
            out | beam.ParDo(_Panes()),
            equal_to(
                [
                    f"{PaneInfoTiming.EARLY} 0 not-last",
                    f"{PaneInfoTiming.EARLY} 1 not-last",
                    f"{PaneInfoTiming.ON_TIME} 2 last",
                ]
            ),
            label="panes",
        )
        assert_that(out | beam.FlatMap(lambda kv: list(kv[1])), equal_to(list(range(5))), label="values")


def test_a_processing_time_trigger_in_batch_runs_as_micro_batches():
    # Bounded input with a trigger waiting for processing time: the batch translation has no
    # clock, so the pipeline runs as micro-batches; the input ends before any processing-time
    # firing, so the window's final pane at the end holds the element, once.
    from apache_beam.transforms import trigger

    with beam.Pipeline(runner=SparkRunner()) as p:
        out = (
            p
            | beam.Create([("k", 1)])
            | beam.WindowInto(
                window.GlobalWindows(),
                trigger=trigger.Repeatedly(trigger.AfterProcessingTime(5)),
                accumulation_mode=trigger.AccumulationMode.DISCARDING,
            )
            | beam.GroupByKey()
            | beam.MapTuple(lambda k, vs: (k, list(vs)))
        )
        assert_that(out, equal_to([("k", [1])]))


class _MarksItsInstance(beam.DoFn):
    """Appends each element to a file named after the DoFn instance that processed it."""

    def __init__(self, folder):
        self.folder = folder

    def process(self, element):
        import os
        import uuid

        if not hasattr(self, "token"):  # a new instance (an address may be reused, a uuid is not)
            self.token = uuid.uuid4().hex
        with open(os.path.join(self.folder, self.token), "a") as marks:
            marks.write(f"{element[0]}\n")
        yield element


class _MarksItsInstanceAndTearsDown(_MarksItsInstance):
    def teardown(self):
        pass


def _runs_seen_per_instance(dofn, folder, runs=3) -> list:
    import os

    for run in range(runs):
        with beam.Pipeline(runner=SparkRunner()) as p:
            _ = p | beam.Create([(run, i) for i in range(4)]) | beam.ParDo(dofn(str(folder)))
    return [len(set(open(os.path.join(folder, name)).read().split())) for name in os.listdir(folder)]


def test_a_stateless_stage_runs_on_warm_executor_workers_across_jobs(tmp_path):
    # Executors keep an SDK worker whose DoFns have no setup or teardown: a later job's identical
    # stage runs on the same DoFn instances instead of unpickling and building them again.
    # (which Python worker a task lands on is Spark's choice: over six jobs some instance is reused)
    runs_per_instance = _runs_seen_per_instance(_MarksItsInstance, tmp_path, runs=6)
    assert max(runs_per_instance) > 1


def test_a_dofn_with_teardown_gets_a_new_instance_per_partition(tmp_path):
    runs_per_instance = _runs_seen_per_instance(_MarksItsInstanceAndTearsDown, tmp_path)
    assert runs_per_instance and max(runs_per_instance) == 1


def test_a_warm_executor_never_shows_a_stage_the_side_input_of_an_earlier_job():
    # The SDK keeps a global window's side input in the bundle processor: a stage reused from an
    # earlier job must not see that job's values.
    for value in (10, 20, 30):
        with beam.Pipeline(runner=SparkRunner()) as p:
            side = p | "Side" >> beam.Create([value])
            out = p | "Main" >> beam.Create([1, 2]) | beam.Map(lambda x, s: (x, s), beam.pvalue.AsSingleton(side))
            assert_that(out, equal_to([(1, value), (2, value)]))


def test_reshuffle_is_a_repartition_not_a_group_by_key():
    from reference_runner.graph import plan as planning
    from reference_runner.graph.front_end import SPARK

    p = beam.Pipeline()
    _ = p | beam.Create(range(10)) | beam.Reshuffle() | beam.Map(lambda x: x)
    stages = planning.build_plan(p.to_runner_api(), SPARK).stages
    assert [s.kind for s in stages].count(planning.StageKind.GROUP) == 0  # Create's and the user's Reshuffle
    assert sum(s.redistribute for s in stages) == 2
    with beam.Pipeline(runner=SparkRunner()) as p:
        out = (
            p
            | beam.Create([("a", 1), ("b", 2)])
            | beam.Map(lambda kv: window.TimestampedValue(kv, kv[1]))
            | beam.WindowInto(window.FixedWindows(10))
            | beam.Reshuffle()
            | beam.Map(lambda kv, t=beam.DoFn.TimestampParam, w=beam.DoFn.WindowParam: (kv, t, w.end))
        )
        assert_that(out, equal_to([(("a", 1), Timestamp(1), Timestamp(10)), (("b", 2), Timestamp(2), Timestamp(10))]))


def test_a_triggered_side_input_shows_readers_its_latest_pane_per_window():
    # Python's CombineGlobally with its default reads its combined output as a side input and
    # insists on one value: over a repeating trigger only the latest pane may be visible.
    from apache_beam.transforms import trigger

    with beam.Pipeline(runner=SparkRunner()) as p:
        total = (
            p
            | beam.Create(list(range(1, 11)))
            | beam.WindowInto(
                window.GlobalWindows(),
                trigger=trigger.Repeatedly(trigger.AfterCount(3)),
                accumulation_mode=trigger.AccumulationMode.ACCUMULATING,
            )
            | beam.CombineGlobally(sum)
        )
        assert_that(total, equal_to([55]))


def test_a_group_keeps_the_arrival_order_of_values_from_one_bundle():
    # (see tests/test_reference_runner.py: what users rely on and Beam's runners keep)
    with beam.Pipeline(runner=SparkRunner()) as p:
        out = (
            p
            | beam.Create([None])
            | beam.FlatMap(lambda _: [("k", i) for i in range(50)])
            | beam.GroupByKey()
            | beam.MapTuple(lambda k, vs: list(vs))
        )
        assert_that(out, equal_to([list(range(50))]))


def test_jobs_running_at_once_each_get_a_fair_scheduler_pool_of_their_own():
    import threading

    from reference_runner.spark import fair_pools, session

    spark = session.get()
    assert spark.sparkContext.getConf().get("spark.scheduler.mode") == "FAIR"
    seen: dict[str, str] = {}
    inside, leave = threading.Barrier(3), threading.Event()

    def job(name: str) -> None:
        with fair_pools.pool_of_its_own(spark.sparkContext) as pool:
            # what Spark reads for this thread's jobs
            seen[name] = spark.sparkContext.getLocalProperty("spark.scheduler.pool")
            assert seen[name] == pool
            inside.wait(30)
            leave.wait(30)

    threads = [threading.Thread(target=job, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    inside.wait(30)
    assert seen["a"] != seen["b"]  # side by side: two pools
    leave.set()
    for t in threads:
        t.join()
    with fair_pools.pool_of_its_own(spark.sparkContext) as again:
        assert again in seen.values()  # the names are reused: Spark keeps every pool it was given
