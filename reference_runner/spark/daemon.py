"""PySpark's worker daemon, with Beam and the backend imported before it forks workers.

Spark forks every Python worker from one daemon process. Importing apache_beam takes about a
second; done here, once, each forked worker starts with it loaded (configured as
spark.python.daemon.module by reference_runner.spark.session).

PySpark's reused workers run a full gc.collect() after every task. With Beam imported that is
some 120,000 objects to scan, 0.1-0.4 s of CPU per task (more than most of our tasks take: a
micro-batch pass runs a few small tasks per stage). What was imported here lives as long as the
process, so it is frozen (gc.freeze) before the workers fork: their collections then scan only
what they made themselves. (Freezing also keeps those pages shared with the daemon.)
"""

import gc
import importlib

for _module in (
    "apache_beam",
    "apache_beam.runners.worker.sdk_worker",
    "reference_runner.spark.tasks",
    "reference_runner.spark.partitions",
):
    importlib.import_module(_module)

if __name__ == "__main__":
    from pyspark import daemon

    gc.collect()
    gc.freeze()
    daemon.manager()
