"""One client of the soak benchmark: tiny LOOPBACK jobs, one after another, against a job
endpoint, each reported as one JSON line on stdout ({"client", "n", "state", "seconds"}).

    python -m benchmarks.soak_client --endpoint localhost:8099 --jobs 200 --client 0

The job is Create of 3 elements, Map, GroupByKey and an in-pipeline check of the result, so a
wrong answer ends the job FAILED rather than DONE. Each job does what PortableRunner does for
LOOPBACK: it starts a worker pool in this process, points the pipeline's environment at it,
and stops the pool (with PortableRunner's one second of grace) once the job has ended. The
pipeline proto is built once and sent over the Job API directly, so that what is timed is the
server's work, not the 1.6 s a PortableRunner client spends per job on its own (building the
pipeline, `pip freeze` for the submission environment, a one second sleep while it waits).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time

import grpc
from apache_beam.portability.api import beam_job_api_pb2, beam_job_api_pb2_grpc, beam_runner_api_pb2
from apache_beam.runners.worker.worker_pool_main import BeamFnExternalWorkerPoolServicer

from benchmarks.jobserver import external, tiny_pipeline
from reference_runner.lifecycle import TERMINAL

STOPPED = beam_job_api_pb2.JobState.STOPPED


def run_one(stub, pipeline: beam_runner_api_pb2.Pipeline, timeout: float) -> str:
    """One job on its own LOOPBACK pool; its final state's name."""
    address, pool = BeamFnExternalWorkerPoolServicer.start(use_process=False)
    try:
        job = beam_runner_api_pb2.Pipeline()
        job.CopyFrom(pipeline)
        for env in job.components.environments.values():
            env.payload = beam_runner_api_pb2.ExternalPayload(endpoint={"url": address}).SerializeToString()
        prepared = stub.Prepare(beam_job_api_pb2.PrepareJobRequest(pipeline=job, job_name="soak"), timeout=timeout)
        job_id = stub.Run(
            beam_job_api_pb2.RunJobRequest(preparation_id=prepared.preparation_id), timeout=timeout
        ).job_id
        state = "UNSPECIFIED"
        events = stub.GetStateStream(beam_job_api_pb2.GetJobStateRequest(job_id=job_id), timeout=timeout)
        for n, event in enumerate(events):
            state = beam_job_api_pb2.JobState.Enum.Name(event.state)
            if event.state in TERMINAL and not (n == 0 and event.state == STOPPED):  # Beam's service starts at STOPPED
                break
        return state
    finally:
        pool.stop(1)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.soak_client", description=__doc__.split("\n\n")[0])
    parser.add_argument("--endpoint", required=True, help="Job API endpoint, host:port")
    parser.add_argument("--jobs", type=int, default=100, help="jobs to submit, one after another (default 100)")
    parser.add_argument("--client", type=int, default=0, help="this client's number, echoed in every line")
    parser.add_argument("--timeout", type=float, default=300, help="seconds one job may take (default 300)")
    args = parser.parse_args(argv)
    logging.getLogger().setLevel(logging.ERROR)
    pipeline = tiny_pipeline(external("localhost:1"))  # (each job points it at its own pool)
    stub = beam_job_api_pb2_grpc.JobServiceStub(grpc.insecure_channel(args.endpoint))
    for n in range(args.jobs):
        started = time.perf_counter()
        try:
            state = run_one(stub, pipeline, args.timeout)
        except grpc.RpcError as e:  # a refused or lost submission is a job that did not end DONE
            state = f"ERROR {e.code().name}: {str(e.details())[:200]}"
        line = {"client": args.client, "n": n, "state": state, "seconds": time.perf_counter() - started}
        print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
