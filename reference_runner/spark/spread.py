"""Elements moved over every partition one by one: Reshuffle, and a splittable DoFn's initial
restrictions.

PySpark's ``repartition`` moves pickled batches of up to ten elements, not elements: the nine
restrictions of a ReadFromText over eight files, all from one Impulse's partition, landed in one
partition together, and the whole read ran in one task. Here each element is keyed by its
position (offset by its partition's index), and that key alone picks its partition.
"""

from __future__ import annotations


def spread(rdd, partitions: int):
    """``rdd``'s elements dealt over ``partitions`` partitions, round robin."""
    return rdd.mapPartitionsWithIndex(_by_position).partitionBy(partitions, int).values()


def _by_position(index: int, elements):
    return ((index + position, element) for position, element in enumerate(elements))
