"""Soak: a job server under a long stream of tiny LOOPBACK jobs, sequential and concurrent.

    python -m benchmarks.soak --backend reference --clients 1 --jobs 2000 --plot reports/soak.png
    python -m benchmarks.soak --backend spark --clients 10 --jobs 200 --json reports/soak-spark.json

Starts ``reference-runner serve`` (and, unless --no-peer, Beam's local job service after it, with
the same load) and runs --clients client processes (benchmarks/soak_client.py), each submitting
--jobs jobs one after another. While they run it samples the server's process tree from /proc:
resident memory (RSS), threads and open file descriptors, against jobs finished. At the end it
reports job latency (p50, p99), jobs that did not end DONE, and how much RSS, threads and fds
grew from job --settle on; with --plot it draws RSS and latency against jobs (needs matplotlib:
pip install '.[benchmark]').
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

from benchmarks.processes import start_listening
from benchmarks.procstat import usage
from benchmarks.report import write_json

SERVERS = {
    "reference": "{python} -m reference_runner.jobserver --port {port} --log-level WARNING",
    "spark": "{python} -m reference_runner.jobserver --port {port} --log-level WARNING --backend spark",
    "beam-local-job-service": "{python} -m apache_beam.runners.portability.local_job_service_main --port {port}",
}


class Soak:
    """One server under load: its samples and every job's outcome."""

    def __init__(
        self,
        name: str,
        clients: int,
        jobs: int,
        interval: float,
        timeout: float,
        server_args: str = "",
        partial: str | None = None,
    ):
        self.name, self.clients, self.jobs, self.interval, self.timeout = name, clients, jobs, interval, timeout
        self.server_args = server_args
        self.partial = partial  # where the figures so far are written every half minute, if anywhere
        self.outcomes: list[dict] = []  # soak_client lines, in the order they finished
        self.samples: list[dict] = []
        self._reported = -1
        self._lock = threading.Lock()

    def run(self) -> dict:
        # the server's log, for a failed run
        log = open(os.path.join(tempfile.gettempdir(), f"soak-{self.name}-{os.getpid()}.log"), "w")
        server, address = start_listening(f"{SERVERS[self.name]} {self.server_args}", log=log, timeout=180)
        started = time.perf_counter()
        try:
            clients = [
                subprocess.Popen(
                    [sys.executable, "-m", "benchmarks.soak_client", "--endpoint", address]
                    + ["--jobs", str(self.jobs), "--client", str(c), "--timeout", str(self.timeout)],
                    stdout=subprocess.PIPE,
                    text=True,
                    start_new_session=True,
                )
                for c in range(self.clients)
            ]
            readers = [threading.Thread(target=self._read, args=(c,), daemon=True) for c in clients]
            for r in readers:
                r.start()
            total = self.clients * self.jobs
            written = time.monotonic()
            while any(r.is_alive() for r in readers):
                self._sample(server.pid, started)
                if self.partial and time.monotonic() - written > 30:  # a long run cut short keeps its figures
                    write_json(self.partial, self.summary(time.perf_counter() - started))
                    written = time.monotonic()
                self._progress(total)
                for r in readers:
                    r.join(self.interval / len(readers))
            self._sample(server.pid, started)
            if sys.stderr.isatty():
                print(file=sys.stderr)
            if server.poll() is not None:
                raise RuntimeError(f"{self.name} server exited with {server.returncode}; log in {log.name}")
        finally:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
            log.close()
        return self.summary(time.perf_counter() - started)

    def _progress(self, total: int) -> None:
        """On a terminal, one line kept up to date; in a log, a line per tenth of the jobs."""
        done = len(self.outcomes)
        tty = sys.stderr.isatty()
        if not tty and done // max(1, total // 10) == self._reported:
            return
        self._reported = done // max(1, total // 10)
        bad = sum(o["state"] != "DONE" for o in self.outcomes)
        line = f"{self.name}: {done}/{total} jobs, {bad} not DONE, server RSS {self.samples[-1]['rss_mib']:.0f} MiB"
        print(f"\r{line}" if tty else line, end="" if tty else "\n", file=sys.stderr, flush=True)

    def _read(self, client: subprocess.Popen) -> None:
        for line in client.stdout:
            with self._lock:
                self.outcomes.append(json.loads(line))
        client.wait()

    def _sample(self, pid: int, started: float) -> None:
        whole, server = usage(pid), usage(pid, children=False)  # (for the reference backend, the same)
        self.samples.append(
            {
                "seconds": time.perf_counter() - started,
                "jobs": len(self.outcomes),
                "rss_mib": server.rss_mib,
                "threads": server.threads,
                "fds": server.fds,
                "tree_rss_mib": whole.rss_mib,
                "tree_threads": whole.threads,
                "tree_fds": whole.fds,
                "tree_processes": whole.processes,
                "jvm_rss_mib": whole.by_name.get("java", 0.0),
            }
        )

    def summary(self, seconds: float) -> dict:
        latencies = sorted(o["seconds"] for o in self.outcomes)
        return {
            "server": self.name,
            "clients": self.clients,
            "jobs_per_client": self.jobs,
            "jobs": len(self.outcomes),
            "not_done": [o for o in self.outcomes if o["state"] != "DONE"][:20],
            "not_done_count": sum(o["state"] != "DONE" for o in self.outcomes),
            "seconds": seconds,
            "p50_seconds": _quantile(latencies, 0.5),
            "p99_seconds": _quantile(latencies, 0.99),
            "samples": self.samples,
            "latencies": [o["seconds"] for o in self.outcomes],
        }


def _quantile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def growth(samples: list[dict], settle: int, field: str) -> float:
    """How much ``field`` grew from the first sample at or past job ``settle`` to the last."""
    after = [s for s in samples if s["jobs"] >= settle]
    if len(after) < 2:
        return float("nan")
    return after[-1][field] - after[0][field]


def plot(results: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (rss, latency) = plt.subplots(2, 1, figsize=(9, 7), sharex=True)
    for r in results:
        label = f"{r['server']} ({r['clients']}x{r['jobs_per_client']})"
        rss.plot([s["jobs"] for s in r["samples"]], [s["rss_mib"] for s in r["samples"]], label=f"{label} server")
        if any(s["jvm_rss_mib"] for s in r["samples"]):
            rss.plot([s["jobs"] for s in r["samples"]], [s["jvm_rss_mib"] for s in r["samples"]], label=f"{label} JVM")
        latency.plot(range(1, len(r["latencies"]) + 1), r["latencies"], ".", markersize=2, label=label)
    rss.set_ylabel("RSS (MiB)")
    rss.set_ylim(bottom=0)
    rss.legend(fontsize=8)
    latency.set_ylabel("job latency (s)")
    latency.set_xlabel("jobs finished")
    latency.set_yscale("log")
    latency.legend(fontsize=8)
    fig.suptitle("job server soak: tiny LOOPBACK jobs")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.soak",
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--backend", choices=["reference", "spark"], default="reference", help="our server's backend")
    parser.add_argument("--clients", type=int, default=1, help="client processes submitting at once (default 1)")
    parser.add_argument("--jobs", type=int, default=200, help="jobs per client, one after another (default 200)")
    parser.add_argument("--settle", type=int, default=100, help="growth is measured from this job on (default 100)")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between samples (default 1)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds one job may take (default 300)")
    parser.add_argument(
        "--server-args", default="", metavar="ARGS", help="more options for our server, e.g. '--spare-workers 0'"
    )
    parser.add_argument(
        "--no-peer", action="store_true", help="skip Beam's local job service under the same load (the ratios)"
    )
    parser.add_argument("--json", default=None, metavar="PATH", help="write every sample and latency as JSON")
    parser.add_argument("--plot", default=None, metavar="PATH", help="draw RSS and latency against jobs as PNG")
    args = parser.parse_args(argv)
    names = [args.backend] + ([] if args.no_peer else ["beam-local-job-service"])
    results = []
    for name in names:
        results.append(
            Soak(
                name,
                args.clients,
                args.jobs,
                args.interval,
                args.timeout,
                args.server_args if name == args.backend else "",
                partial=f"{args.json}.{name}.partial" if args.json else None,
            ).run()
        )
    print(f"soak: {args.clients} client(s) x {args.jobs} tiny LOOPBACK jobs")
    for r in results:
        r["growth_from_settle"] = {
            field: growth(r["samples"], args.settle, field)
            for field in ("rss_mib", "threads", "fds", "tree_rss_mib", "jvm_rss_mib")
        }
        g = r["growth_from_settle"]
        print(
            f"  {r['server']:24s} p50 {r['p50_seconds'] * 1000:7.0f} ms  p99 {r['p99_seconds'] * 1000:7.0f} ms  "
            f"not DONE {r['not_done_count']:4d}/{r['jobs']}  from job {args.settle}: RSS {g['rss_mib']:+.1f} MiB, "
            f"threads {g['threads']:+.0f}, fds {g['fds']:+.0f}"
            + (f", JVM {g['jvm_rss_mib']:+.1f} MiB" if args.backend == "spark" and r["server"] == "spark" else "")
        )
    if len(results) == 2:
        ours, peer = results
        print(
            f"  ratio p50 (Beam local job service / ours): {peer['p50_seconds'] / ours['p50_seconds']:.2f}x; "
            f"p99: {peer['p99_seconds'] / ours['p99_seconds']:.2f}x"
        )
    write_json(args.json, {"benchmark": "jobserver-soak", "settle": args.settle, "runs": results})
    if args.plot:
        plot(results, args.plot)
        print(f"  plot: {args.plot}")
    return 1 if any(r["not_done_count"] for r in results[:1]) else 0


if __name__ == "__main__":
    sys.exit(main())
