"""A boot program for Python SDK workers in PROCESS environments, without a container.

A runner starts a PROCESS environment's command with the standard boot flags (--id,
--control_endpoint, --logging_endpoint, --artifact_endpoint, --provision_endpoint). This one
starts Beam's Python SDK harness in this interpreter and connects it to the control endpoint.
Point a PROCESS environment at a script that runs ``python -m reference_runner.worker.boot "$@"``.
"""

from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m reference_runner.worker.boot", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--id", required=True, help="the worker id the runner knows this worker by")
    parser.add_argument("--control_endpoint", required=True, help="the runner's Fn API control address")
    for flag in ("logging_endpoint", "artifact_endpoint", "provision_endpoint", "semi_persist_dir"):
        parser.add_argument(f"--{flag}", default=None, help="accepted for compatibility; unused")
    args, _ = parser.parse_known_args(argv)
    from apache_beam.runners.worker.sdk_worker import SdkHarness

    SdkHarness(args.control_endpoint, worker_id=args.id).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
