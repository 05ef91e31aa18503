"""Round trip of a tiny job through our job server vs Beam's local job service, in one run.

Both servers get the same prebuilt pipeline (Create of 3 elements, Map, GroupByKey, an in-pipeline
check of the result) with an EXTERNAL environment pointing at one shared Beam worker pool, and
the client speaks the Job API directly (Prepare, Run, state stream), so what is timed is the
servers' work: accepting the job, starting a worker through the pool, running it. Jobs alternate
between the servers so machine noise hits both.

    python -m benchmarks.jobserver --jobs 20 --json reports/benchmark-jobserver.json
    python -m benchmarks.jobserver --spark      # also our Spark job server (executors start the workers)

With --spark, the Spark job server also runs the same pipeline with the embedded Python
environment (user code in Spark's own Python workers, no environment worker to start), in the
same run: the ratio of the EXTERNAL job to that one is what reaching the environment's own
workers costs on Spark.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import time

import apache_beam as beam
import grpc
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.portability.api import beam_job_api_pb2, beam_job_api_pb2_grpc
from apache_beam.runners.portability.portable_runner import PortableRunner
from apache_beam.runners.runner import PipelineResult, PipelineState
from apache_beam.testing.util import assert_that, equal_to

from benchmarks.processes import start_listening
from benchmarks.report import write_json

SERVERS = {
    "reference-job-server": "{python} -m reference_runner.jobserver --port {port}",
    "beam-local-job-service": "{python} -m apache_beam.runners.portability.local_job_service_main --port {port}",
}
SPARK = {"spark-job-server": "{python} -m reference_runner.jobserver --port {port} --backend spark"}
DONE, FAILED = beam_job_api_pb2.JobState.DONE, beam_job_api_pb2.JobState.FAILED


class _Capture(PortableRunner):
    """Prepares the pipeline exactly as PortableRunner would send it, and sends nothing."""

    def run_portable_pipeline(self, pipeline, options):
        self.proto = self._optimize_pipeline(pipeline, options)
        for env in self.proto.components.environments.values():
            del env.dependencies[:]  # the pool's workers share this interpreter: nothing to stage
        return PipelineResult(PipelineState.DONE)


EMBEDDED = ["--environment_type=beam:env:embedded_python:v1"]


def external(worker_pool: str) -> list[str]:
    """The options of an EXTERNAL environment served by the worker pool at ``worker_pool``."""
    return ["--environment_type=EXTERNAL", f"--environment_config={worker_pool}"]


def tiny_pipeline(environment: list[str]):
    """The tiny job's pipeline proto, in the environment the ``environment`` options give."""
    capture = _Capture()
    p = beam.Pipeline(runner=capture, options=PipelineOptions(environment))
    out = (
        p
        | beam.Create([1, 2, 3])
        | beam.Map(lambda x: (x % 2, x))
        | beam.GroupByKey()
        | beam.MapTuple(lambda k, vs: (k, sorted(vs)))
    )
    assert_that(out, equal_to([(0, [2]), (1, [1, 3])]))  # a wrong answer fails the job
    p.run()
    return capture.proto


def round_trip(stub, pipeline) -> float:
    started = time.perf_counter()
    prepared = stub.Prepare(beam_job_api_pb2.PrepareJobRequest(pipeline=pipeline, job_name="tiny"), timeout=60)
    job_id = stub.Run(beam_job_api_pb2.RunJobRequest(preparation_id=prepared.preparation_id), timeout=60).job_id
    for event in stub.GetStateStream(beam_job_api_pb2.GetJobStateRequest(job_id=job_id), timeout=120):
        if event.state in (DONE, FAILED, beam_job_api_pb2.JobState.CANCELLED):
            break
    elapsed = time.perf_counter() - started
    if event.state != DONE:
        errors = [
            m.message_response.message_text
            for m in stub.GetMessageStream(beam_job_api_pb2.JobMessagesRequest(job_id=job_id), timeout=10)
            if m.HasField("message_response")
        ]
        raise RuntimeError(
            f"job {job_id} ended in state {beam_job_api_pb2.JobState.Enum.Name(event.state)}: "
            f"{errors[-1][-2000:] if errors else 'no message'}"
        )
    return elapsed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.jobserver", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--jobs", type=int, default=20, help="jobs per server (default 20; the first of each is warm-up)"
    )
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the figures as JSON to PATH")
    parser.add_argument(
        "--spark",
        action="store_true",
        help="also time our Spark job server (local[2]; its executors start the environment's workers)",
    )
    args = parser.parse_args(argv)
    servers = {**SERVERS, **(SPARK if args.spark else {})}
    # The pool starts each worker as `python -c ...`: that must be this interpreter.
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
    processes = []
    try:
        pool, pool_address = start_listening(
            "{python} -m apache_beam.runners.worker.worker_pool_main --service_port={port}", env
        )
        processes.append(pool)
        in_pool = tiny_pipeline(external(pool_address))
        embedded = tiny_pipeline(EMBEDDED)
        contenders = {}  # name -> (stub, pipeline)
        for name, command in servers.items():
            process, address = start_listening(command)
            processes.append(process)
            stub = beam_job_api_pb2_grpc.JobServiceStub(grpc.insecure_channel(address))
            contenders[name] = (stub, in_pool)
            if name == "spark-job-server":
                contenders["spark-job-server-embedded"] = (stub, embedded)
        times: dict[str, list[float]] = {name: [] for name in contenders}
        for n in range(args.jobs):
            for name, (stub, pipeline) in contenders.items():
                times[name].append(round_trip(stub, pipeline))
            print(f"\rjob {n + 1}/{args.jobs}", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
    finally:
        for process in processes:  # each leads its own process group: the pool's workers go too
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    medians = {name: statistics.median(values[1:] or values) for name, values in times.items()}
    peer = medians["beam-local-job-service"]
    ratios = {name: peer / median for name, median in medians.items() if name != "beam-local-job-service"}
    ratio = ratios["reference-job-server"]
    print(f"tiny job round trip, median of {args.jobs - 1} warm jobs (Create 3, Map, GroupByKey, check):")
    for name, median in medians.items():
        print(f"  {name:24s} {median * 1000:8.1f} ms")
    for name, each in ratios.items():
        print(f"  ratio (Beam local job service / {name}): {each:.2f}x")
    if "spark-job-server" in medians:
        environment_cost = medians["spark-job-server"] / medians["spark-job-server-embedded"]
        ratios["spark_external_over_embedded"] = environment_cost
        print(f"  ratio (spark-job-server EXTERNAL / embedded): {environment_cost:.2f}x")
    write_json(
        args.json,
        {
            "benchmark": "jobserver-round-trip",
            "jobs": args.jobs,
            "median_seconds": medians,
            "all_seconds": times,
            "ratio_beam_over_ours": ratio,
            "ratios_beam_over_each": ratios,
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
