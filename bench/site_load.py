"""How fast a sandbox site answers: proof that the server is not what a benchmark measures.

    python -m bench.site_load --site polite [--requests 20000] [--connections 8] [--json]
    python -m bench.site_load --site generic [--size bench]

Starts the site's ``python -m`` server as a child (bounded lifetime), then sends
``--requests`` GETs over ``--connections`` keep-alive connections from one asyncio
client, round-robin over the site's own URLs, with a browser's User-Agent. The
polite site runs with its agent check and 503s on and its bucket opened wide
(``--rate 1e9``): the defences' code runs on every request, none is refused for
pace. Reports requests per second of wall time and per CPU second of the server
process (its one core's capacity). Bounded by ``--max-seconds``.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

import psutil

from bench import report
from sandbox.generic.site import Shape as GenericShape
from sandbox.generic.site import build
from sandbox.polite.catalogue import Catalogue

AGENT = ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
         "Chrome/126.0.0.0 Safari/537.36")


def site_command(site: str, size: str, max_seconds: float) -> list[str]:
    base = [sys.executable, "-m", f"sandbox.{site}", "--max-seconds", str(max_seconds)]
    return base + (["--rate", "1e9"] if site == "polite" else ["--size", size])


def site_paths(site: str, size: str) -> list[str]:
    if site == "polite":
        return Catalogue(1).chain_paths()
    shape = GenericShape.small() if size == "small" else GenericShape()
    return sorted(build(shape, "http://127.0.0.1:1").pages)


async def fetch_loop(host: str, port: int, targets: list[str], start: int, step: int,
                     count: int, deadline: float, statuses: dict[int, int]) -> int:
    """GET ``targets[start::step]`` (cycling) on one keep-alive connection; returns done."""
    reader, writer = await asyncio.open_connection(host, port)
    done = 0
    try:
        while done < count and time.monotonic() < deadline:
            target = targets[(start + done * step) % len(targets)]
            writer.write(f"GET {target} HTTP/1.1\r\nHost: {host}:{port}\r\n"
                         f"User-Agent: {AGENT}\r\n\r\n".encode())
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1])
            length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length:"))
            await reader.readexactly(length)
            statuses[status] = statuses.get(status, 0) + 1
            done += 1
    finally:
        writer.close()
    return done


async def load(url: str, targets: list[str], requests: int, connections: int,
               max_seconds: float) -> tuple[int, dict[int, int]]:
    host, port = url.removeprefix("http://").split(":")
    deadline, statuses = time.monotonic() + max_seconds, dict[int, int]()
    per_conn = -(-requests // connections)
    done = await asyncio.gather(*(fetch_loop(host, int(port), targets, i, connections, per_conn,
                                             deadline, statuses) for i in range(connections)))
    return sum(done), statuses


def measure(site: str, size: str, requests: int, connections: int,
            max_seconds: float) -> dict[str, Any]:
    proc = subprocess.Popen(site_command(site, size, max_seconds + 60), stdout=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split()[0]
        server = psutil.Process(proc.pid)
        targets = site_paths(site, size)
        cpu0, started = sum(server.cpu_times()[:2]), time.monotonic()
        done, statuses = asyncio.run(load(url, targets, requests, connections, max_seconds))
        wall, cpu = time.monotonic() - started, sum(server.cpu_times()[:2]) - cpu0
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    return {"site": site, "size": size, "requests": done, "connections": connections,
            "statuses": {str(k): v for k, v in sorted(statuses.items())},
            "wall_s": round(wall, 3), "server_cpu_s": round(cpu, 3),
            "requests_per_s": round(done / wall, 1),
            "requests_per_server_cpu_s": round(done / cpu, 1) if cpu else None}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.site_load", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--site", choices=("polite", "generic"), default="polite")
    p.add_argument("--size", choices=("small", "bench"), default="bench", help="generic only")
    p.add_argument("--requests", type=int, default=20_000)
    p.add_argument("--connections", type=int, default=8)
    p.add_argument("--max-seconds", type=float, default=60.0)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    report(measure(args.site, args.size, args.requests, args.connections, args.max_seconds),
           args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
