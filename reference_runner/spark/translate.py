"""Fused stages -> an RDD lineage, then one Spark action that runs all of it.

Every PCollection is an RDD of encoded windowed elements. Impulse is a one-element RDD; a fused
SDK stage is mapPartitions over its input running the stage's descriptor in an in-process SDK
worker; GroupByKey is a shuffle on encoded key bytes, sorted within partitions, grouped key by
key; a stage headed by a stateful ParDo is such a shuffle too, sorted by key and timestamp
(spark/stateful.py); Flatten is a union; Reshuffle dealt over the partitions (spark/spread.py). Side
inputs are collected once and broadcast (one read by pane as the latest pane of each window).
An RDD read by more than one stage is persisted, so user code runs once per element (if Spark
drops a cached partition it runs again: its metrics then replace the earlier run's, see
tasks.PartitionRun). Every stage whose outputs nobody reads ends in the job's one action.
"""

from __future__ import annotations

import functools

from pyspark.accumulators import _accumulatorRegistry

import reference_runner.spark.stateful as stateful
import reference_runner.spark.tasks as tasks
from reference_runner.engine.sideinputs import SideInputBuffer
from reference_runner.graph.plan import SideInput
from reference_runner.runtime import sidewindows, stage_specs
from reference_runner.spark.shipped import ShippedStage, coders_of
from reference_runner.spark.spread import spread


class SideInputTooLarge(RuntimeError):
    pass


class Translation:
    def __init__(self, spark, plans: list[ShippedStage], parallelism: int, bundle_size: int, max_side_input_bytes: int):
        self.sc = spark.sparkContext
        self.plans = plans
        self.parallelism = parallelism
        self.bundle_size = bundle_size
        self.max_side_input_bytes = max_side_input_bytes
        self.metrics = self.sc.accumulator({}, tasks.ReportsParam())
        self.rdds: dict = {}
        self._persisted: list = []
        self._broadcasts: list = []
        readers: dict[str, int] = {}
        for p in plans:
            for pcoll in p.inputs + [s.pcoll for s in p.stage.side_inputs]:
                readers[pcoll] = readers.get(pcoll, 0) + 1
        self.readers = readers

    def run(self) -> list[bytes]:
        """Build the lineage and run it; returns the monitoring infos the bundles reported."""
        terminals = []
        try:
            for p in self.plans:
                produced = getattr(self, f"_{p.kind.value}")(p)
                if not any(self.readers.get(o) for o in p.outputs):
                    # nothing reads it (a trailing GroupByKey, Flatten or Reshuffle too, and a
                    # stage without outputs): only an action makes it, and what feeds it, run
                    terminals.append(produced)
            if terminals:
                self.sc.union(terminals).foreach(_discard)
            return [info for infos in self.metrics.value.values() for info in infos]
        finally:
            self._release()

    def _release(self) -> None:
        """Let go of what the job held on the driver and executors: persisted RDDs, broadcasts,
        and the metrics accumulator (PySpark's registry keeps every accumulator ever created;
        updates that arrive for one no longer registered are dropped)."""
        for rdd in self._persisted:
            rdd.unpersist()
        for broadcast in self._broadcasts:
            broadcast.destroy()
        _accumulatorRegistry.pop(self.metrics.aid, None)

    # -- one method per stage kind ------------------------------------------------------------
    def _impulse(self, p: ShippedStage):
        [out] = p.outputs
        rdd = self.sc.parallelize([stage_specs.impulse_element(coders_of(p.components), out)], 1)
        self._publish(out, rdd)
        return rdd

    def _flatten(self, p: ShippedStage):
        [out] = p.outputs
        parts = []
        for pcoll in p.inputs:
            rdd = self.rdds[pcoll]
            if pcoll in p.stage.converted:
                rdd = rdd.mapPartitions(functools.partial(tasks.transcode, p, pcoll))
            parts.append(rdd)
        rdd = self.sc.union(parts) if parts else self.sc.emptyRDD()
        if p.stage.redistribute:
            rdd = spread(rdd, self.parallelism)
        self._publish(out, rdd)
        return rdd

    def _group(self, p: ShippedStage):
        [out] = p.outputs
        keyed = self.rdds[p.inputs[0]].map(functools.partial(tasks.key_of, p))
        shuffled = keyed.repartitionAndSortWithinPartitions(
            self.parallelism, tasks.partition_of, keyfunc=lambda key: key
        )
        rdd = shuffled.mapPartitions(functools.partial(tasks.group_partition, p), preservesPartitioning=True)
        self._publish(out, rdd)
        return rdd

    def _sdk(self, p: ShippedStage):
        side_values = self._broadcast_side_inputs(p) if p.stage.side_inputs else None
        [main] = p.inputs
        source = self.rdds[main]
        if p.stage.keyed_head:  # by key, each key's elements in timestamp order
            run = functools.partial(stateful.run_stateful_stage, p, side_values, self.bundle_size, self.metrics)
            source = source.map(functools.partial(stateful.sort_key, p)).repartitionAndSortWithinPartitions(
                self.parallelism, stateful.partition_of
            )
        else:
            run = functools.partial(tasks.run_sdk_stage, p, side_values, p.bundle_size(self.bundle_size), self.metrics)
        if p.stage.splittable:  # initial splits of restrictions spread over every partition
            source = spread(source, self.parallelism)
        rdd = source.mapPartitionsWithIndex(run)  # the partition's index keys its metrics report
        if len(p.outputs) == 1:
            self._publish(p.outputs[0], rdd)
        elif p.outputs:
            rdd.persist()  # several outputs: each is a filter over the one run of the stage
            self._persisted.append(rdd)
            for index, pcoll in enumerate(p.outputs):
                self._publish(pcoll, rdd.filter(functools.partial(_tagged, index)).map(_value))
        return rdd

    # -- helpers ------------------------------------------------------------------------------
    def _publish(self, pcoll: str, rdd) -> None:
        if self.readers.get(pcoll, 0) > 1:
            rdd.persist()
            self._persisted.append(rdd)
        self.rdds[pcoll] = rdd

    def _broadcast_side_inputs(self, p: ShippedStage):
        values = {}
        for side in p.stage.side_inputs:
            if side.pcoll not in values:
                elements = self.rdds[side.pcoll].collect()
                size = sum(map(len, elements))
                if size > self.max_side_input_bytes:
                    raise SideInputTooLarge(
                        f"side input {side.tag} of {side.transform_id} holds {size} bytes, over the limit of "
                        f"{self.max_side_input_bytes} (--spark_max_side_input_mib); side inputs are "
                        "broadcast to every executor"
                    )
                values[side.pcoll] = _visible(p, side, elements)
        broadcast = self.sc.broadcast(values)
        self._broadcasts.append(broadcast)
        return broadcast


def _visible(p: ShippedStage, side: SideInput, elements: list):
    """What readers see of a side input: every element, or, for one read by pane (its producer
    fires several panes per window), window -> the latest pane (engine/sideinputs.py)."""
    if not side.by_pane:
        return elements
    buffer = SideInputBuffer(sidewindows.pane_decoder(coders_of(p.components), side.pcoll, side.own_panes))
    buffer.add(elements)
    return buffer.contents()


def _discard(_):
    pass


def _tagged(index: int, pair) -> bool:
    return pair[0] == index


def _value(pair):
    return pair[1]
