"""PySpark's worker daemon, with Beam and the backend imported before it forks workers.

Spark forks every Python worker from one daemon process. Importing apache_beam takes about a
second; done here, once, each forked worker starts with it loaded (configured as
spark.python.daemon.module by reference_runner.spark.session).
"""

import importlib

for _module in ("apache_beam", "apache_beam.runners.worker.sdk_worker", "reference_runner.spark.tasks"):
    importlib.import_module(_module)

if __name__ == "__main__":
    from pyspark import daemon

    daemon.manager()
