"""Our job server inside the test process, for the pipelines of other SDKs on our own targets.

The reference and Spark targets run Python pipelines in process. A Java, Go or TypeScript
pipeline can only reach a runner through the Job API, so these targets serve it from the same
process, started on first use, with the target's schedule or Spark master.
"""

from __future__ import annotations

import threading


class InProcessJobServer:
    """Made with its target, started by the first ``endpoint()`` (most sessions never ask)."""

    def __init__(self, **settings):
        self._settings = settings  # reference_runner.jobserver.server.JobServer's arguments
        self._server = None
        self._lock = threading.Lock()

    def endpoint(self) -> str:
        with self._lock:
            if self._server is None:
                from reference_runner.jobserver.server import JobServer

                self._server = JobServer(port=0, **self._settings).start()
            return self._server.address

    def stop(self) -> None:
        with self._lock:
            if self._server is not None:
                self._server.stop()
                self._server = None
