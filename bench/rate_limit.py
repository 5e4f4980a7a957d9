"""Rate-limit accuracy of the cluster-wide limiter, measured at the server.

    python -m bench.rate_limit --json [--rate 20] [--seconds 10] [--procs 2]

Starts its own redis-server (embedded, in a temporary directory, AOF off), a
threaded HTTP server on 127.0.0.1 that timestamps every request it receives,
and ``--procs`` worker processes. Each worker loops, bounded by time and by
count: ``acquire`` a grant from one bucket limited to ``--rate``, GET the
server, release. A long wait (``MustWait``) is slept, as a re-scheduled unit
would be. The figure is the arrival rate at the server over the steady window:
from ``--warmup`` seconds after the first request (the initial burst) to the
last request. The goal is ``measured_per_s`` within 5 % of ``target_per_s``.
The last line is the JSON result.
"""

from __future__ import annotations

import argparse
import http.client
import multiprocessing
import sys
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import redis

from bench import report
from config import Politeness
from external_interface import keys
from external_interface.politeness import MustWait, acquire
from external_interface.politeness.factory import limiter_from_redis
from ops.embedded_redis import scratch_server

SPAWN = multiprocessing.get_context("spawn")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark once and print the figures."""
    args = parse_args(argv)
    with scratch_server(args.redis_socket, "bench-rate-") as socket, Arrivals() as server:
        result = run(args, socket, server)
    report(result, args.json)
    return 0


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(prog="python -m bench.rate_limit", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, default=20.0, help="the bucket's requests/s")
    parser.add_argument("--burst", type=int, default=1, help="the bucket's burst")
    parser.add_argument("--jitter", type=float, default=0.01,
                        help="the limiter's jitter tolerance, seconds (0: strict GCRA)")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long workers run")
    parser.add_argument("--procs", type=int, default=2, help="worker processes")
    parser.add_argument("--warmup", type=float, default=1.0, help="seconds left out at start")
    parser.add_argument("--redis-socket", help="use this server instead of starting one")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    return parser.parse_args(argv)


class Arrivals:
    """A threaded HTTP server on loopback that records when each request arrived
    (monotonic seconds); it answers ``ok``, or serves the files under ``root``."""

    def __init__(self, root: Path | None = None) -> None:
        self.times: list[float] = []
        times = self.times

        class Handler(SimpleHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive: one connection per worker

            def do_GET(self) -> None:
                times.append(time.monotonic())  # list.append is atomic under the GIL
                if root is not None:
                    super().do_GET()
                    return
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, format: str, *args: Any) -> None:
                """Silence: a line per request would cost more than the request."""

        self.server = ThreadingHTTPServer(("127.0.0.1", 0),
                                          partial(Handler, directory=str(root or ".")))
        self.server.daemon_threads = True
        self.port = int(self.server.server_address[1])
        self.url = f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Arrivals:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@dataclass(frozen=True)
class Job:
    """What one worker process is told: where, what bucket, until when."""

    socket: str
    port: int
    bucket: str
    policy: Politeness
    jitter_s: float
    seconds: float
    max_requests: int


def run(args: argparse.Namespace, socket: str, server: Arrivals) -> dict[str, Any]:
    """Start the workers, wait for them, and turn the server's arrivals into figures."""
    policy = Politeness(rate_per_s=args.rate, burst=args.burst)
    job = Job(socket, server.port, f"bench-{uuid.uuid4().hex[:8]}", policy, args.jitter,
              args.seconds, max_requests=int(args.rate * args.seconds * 2) + 10)
    results, ready = SPAWN.Queue(), SPAWN.Barrier(args.procs + 1)
    workers = [SPAWN.Process(target=work, args=(job, ready, results)) for _ in range(args.procs)]
    for worker in workers:
        worker.start()
    try:
        ready.wait(timeout=60)
        tallies = [results.get(timeout=args.seconds + 60) for _ in workers]
    finally:
        for worker in workers:
            worker.join(timeout=10)
            if worker.is_alive():
                worker.kill()
        cleanup(socket, job.bucket)
    return {
        "target_per_s": args.rate,
        **figures(sorted(server.times), args.rate, args.warmup),
        "procs": args.procs,
        "burst": args.burst,
        "jitter_s": args.jitter,
        "seconds": args.seconds,
        "per_proc": [t["requests"] for t in tallies],
        "must_wait": sum(t["must_wait"] for t in tallies),
    }


def work(job: Job, ready: Any, results: Any) -> None:
    """A worker process: acquire, GET, release, until the time or the count is up.

    It starts when every worker is connected (``ready``), so that all of them
    run over the same window.
    """
    client = redis.Redis(unix_socket_path=job.socket)
    limiter = limiter_from_redis(client, jitter_s=job.jitter_s)
    conn = http.client.HTTPConnection("127.0.0.1", job.port, timeout=10)
    client.ping()
    tally = {"requests": 0, "must_wait": 0}
    ready.wait(timeout=60)
    stop_at = time.monotonic() + job.seconds
    while time.monotonic() < stop_at and tally["requests"] < job.max_requests:
        try:
            with acquire(limiter, job.bucket, job.policy, max_inline_wait_s=1.0):
                get(conn)
            tally["requests"] += 1
        except MustWait as wait:
            tally["must_wait"] += 1
            time.sleep(wait.seconds)
    conn.close()
    results.put(tally)


def get(conn: http.client.HTTPConnection) -> None:
    """One GET on a kept-alive connection, body read so the connection can be reused."""
    conn.request("GET", "/")
    conn.getresponse().read()


def figures(times: list[float], rate: float, warmup: float) -> dict[str, Any]:
    """Arrival rate over the steady window, and the busiest second seen anywhere."""
    if len(times) < 3:
        raise RuntimeError(f"only {len(times)} requests reached the server")
    steady = [t for t in times if t >= times[0] + warmup]
    measured = (len(steady) - 1) / (steady[-1] - steady[0])
    return {
        "measured_per_s": round(measured, 3),
        "error_pct": round(100 * (measured - rate) / rate, 2),
        "within_5pct": abs(measured - rate) <= 0.05 * rate,
        "requests": len(times),
        "steady_requests": len(steady),
        "steady_window_s": round(steady[-1] - steady[0], 3),
        "busiest_1s": busiest_second(times),
    }


def busiest_second(times: list[float]) -> int:
    """The most arrivals in any one-second window (sorted times, two pointers)."""
    most, first = 0, 0
    for last, t in enumerate(times):
        while times[first] <= t - 1.0:
            first += 1
        most = max(most, last - first + 1)
    return most


def cleanup(socket: str, bucket: str) -> None:
    """Delete the run's keys, for a shared server."""
    with redis.Redis(unix_socket_path=socket) as client:
        for part in ("tat", "leases", "cooldown", "state"):
            client.unlink(keys.polite(bucket, part))
        client.zrem(keys.POLITE_INDEX, bucket)


if __name__ == "__main__":
    sys.exit(main())
