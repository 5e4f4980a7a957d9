"""The peers of ``bench generic``: Scrapy's CrawlSpider and Crawlee's ParselCrawler.

    python -m bench.generic_peers check [--json]            # small site: page sets as expected?
    python -m bench.generic_peers measure [--size bench]    # wall and CPU of each, alone, once

Each peer runs in its own venv under ``$CRAWLCHAIN_HOME/run/bench/`` (``peer_venvs``:
made from its ``requirements.txt`` on first use; neither is a dependency of crawlchain):
``bench/scrapy_peer/generic_spider.py`` (the same venv as ``bench crawl``'s
Scrapy peer) and ``bench/crawlee_peer/generic_crawler.py``. Both start at ``/``,
read robots.txt's sitemaps, obey robots.txt, stay on the start URL's host and
stop at the depth, storing one record per page as JSONL.

``check`` serves the small site, runs each peer to depth 3 and compares its page
set (status-200 records, by URL without fragment) and fields (final url, title,
description, canonical) with ``sandbox.generic.expected``; it exits 1 on any
difference. ``measure`` does the same on the benchmark size, each peer alone,
and reports both the peer's own crawl window (first request to the end: what
compares with a crawl on running workers) and its whole process (start-up
included). The site's server runs as a separate process, so its CPU is in
neither figure.

For ``bench/generic.py``: ``serve_site(size)`` -> ``ServedSite`` (url, site, stop);
``run_peer(name, url, depth, workdir, timeout)`` -> ``PeerRun``; ``compare(records,
expected)`` -> ``Comparison``; ``figures(run)`` -> ``{"pages", "wall_s", "cpu_s"}``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag

from bench import report
from bench.peer_venvs import CRAWLEE, SCRAPY
from bench.proctree import machine_busy_s, wait_quiet
from bench.properties import bench_dir
from sandbox.generic.expected import Record, expected_records
from sandbox.generic.site import GenericSite, Shape, build

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SCRAPY_SPIDER = HERE / "scrapy_peer" / "generic_spider.py"
CRAWLEE_SCRIPT = HERE / "crawlee_peer" / "generic_crawler.py"
PEERS = ("scrapy", "crawlee")
CONCURRENCY = 16
FIELDS = ("final_url", "title", "description", "canonical")


# -- the peers ----------------------------------------------------------------------------
VENVS = {"scrapy": SCRAPY, "crawlee": CRAWLEE}


def peer_ready(name: str) -> bool:
    """Whether the peer's venv is made already (tests skip rather than install)."""
    return VENVS[name].ready() is not None


def peer_binary(name: str) -> Path:
    """What runs peer ``name``: Scrapy's ``scrapy``, Crawlee's venv python (venv made first)."""
    if name not in VENVS:
        raise ValueError(f"unknown peer {name!r}: expected one of {', '.join(PEERS)}")
    return VENVS[name].ensure()


def command(name: str, url: str, depth: int, out: Path, binary: Path,
            extra: Mapping[str, object] | None = None) -> list[str]:
    """The command that runs peer ``name`` from ``url`` to ``depth``, records to ``out``;
    ``extra``: more Scrapy settings (``DOWNLOAD_TIMEOUT``, say)."""
    if name == "scrapy":
        settings = {"DEPTH_LIMIT": depth, "ROBOTSTXT_OBEY": True,
                    "CONCURRENT_REQUESTS": CONCURRENCY,
                    "CONCURRENT_REQUESTS_PER_DOMAIN": CONCURRENCY, "AUTOTHROTTLE_ENABLED": False,
                    "TELNETCONSOLE_ENABLED": False, "LOG_LEVEL": "INFO", **(extra or {})}
        cmd = [str(binary), "runspider", str(SCRAPY_SPIDER),
               "-a", f"start={url}", "-O", f"{out}:jsonlines"]
        return cmd + [arg for k, v in settings.items() for arg in ("-s", f"{k}={v}")]
    if name == "crawlee":
        return [str(binary), str(CRAWLEE_SCRIPT), "--start", url,
                "--depth", str(depth), "--out", str(out), "--concurrency", str(CONCURRENCY)]
    raise ValueError(f"unknown peer {name!r}: expected one of {', '.join(PEERS)}")


# -- one run -------------------------------------------------------------------------------
@dataclass
class PeerRun:
    """One peer's run: its records and its figures."""

    name: str
    records: list[dict[str, Any]]
    crawl_s: float  # the peer's own window: first request to the end of the crawl
    crawl_cpu_s: float  # CPU of the peer's process in that window
    process_s: float  # the whole process, start-up and shutdown included
    process_cpu_s: float
    maxrss_mb: float
    requests: int  # as the peer counted them
    machine_busy_s: float  # every process on the machine during the run (others' load)
    log: Path = field(default_factory=Path)


def run_peer(name: str, url: str, depth: int, workdir: Path, timeout: float = 900.0,
             extra: Mapping[str, object] | None = None) -> PeerRun:
    """Run peer ``name`` to its end (killed after ``timeout``) and read its records."""
    workdir.mkdir(parents=True, exist_ok=True)
    out, log = workdir / f"{name}.jsonl", workdir / f"{name}.log"
    out.unlink(missing_ok=True)
    cmd = command(name, url.rstrip("/") + "/", depth, out, peer_binary(name), extra)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    busy, started = machine_busy_s(), time.monotonic()
    with log.open("wb") as sink:
        proc = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.STDOUT, cwd=workdir,
                                start_new_session=True)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise RuntimeError(f"{name} did not finish within {timeout:.0f}s; see {log}") from None
    wall, busy = time.monotonic() - started, machine_busy_s() - busy
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    line = bench_line(log)
    if proc.returncode != 0 or line is None or not out.exists():
        raise RuntimeError(f"{name} exited with {proc.returncode}; see {log}")
    records = [json.loads(row) for row in out.read_text().splitlines() if row.strip()]
    return PeerRun(name, records, float(line["crawl_s"]),
                   round(float(line["cpu_end_s"]) - float(line["cpu_start_s"]), 3),
                   round(wall, 3), round(after.ru_utime - before.ru_utime
                                         + after.ru_stime - before.ru_stime, 3),
                   float(line["maxrss_mb"]), int(line["requests"]), round(busy, 3), log)


def bench_line(log: Path) -> dict[str, Any] | None:
    """The peer's last ``BENCH {json}`` line."""
    lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.startswith("BENCH ")]
    return dict(json.loads(lines[-1][len("BENCH "):])) if lines else None


def figures(run: PeerRun) -> dict[str, Any]:
    """What ``bench generic``'s JSON holds per crawler: pages, wall and CPU seconds (the
    crawl window), plus the whole process for reference."""
    return {"pages": len(page_set(run.records)), "wall_s": run.crawl_s, "cpu_s": run.crawl_cpu_s,
            "process_wall_s": run.process_s, "process_cpu_s": run.process_cpu_s,
            "maxrss_mb": run.maxrss_mb, "requests": run.requests,
            "machine_busy_s": run.machine_busy_s}


# -- comparison ----------------------------------------------------------------------------
def page_set(records: Sequence[dict[str, Any]]) -> set[str]:
    """The URLs of the pages a crawler stored (status 200), fragments dropped."""
    return {urldefrag(r["url"]).url for r in records if r.get("status", 200) == 200}


@dataclass
class Comparison:
    expected: int
    got: int
    missing: list[str]
    extra: list[str]
    duplicates: int  # records for a URL already stored
    field_mismatches: list[str]  # "url field: got != expected", the first 20

    @property
    def same(self) -> bool:
        return not (self.missing or self.extra or self.duplicates or self.field_mismatches)


def compare(records: Sequence[dict[str, Any]], expected: Sequence[Record]) -> Comparison:
    """A peer's records against the expected ones, on status-200 pages."""
    wanted = {r.url: r for r in expected if r.status == 200}
    got = [r for r in records if r.get("status", 200) == 200]
    urls = [urldefrag(r["url"]).url for r in got]
    mismatches = [f"{url} {name}: {record.get(name)!r} != {getattr(wanted[url], name)!r}"
                  for url, record in zip(urls, got, strict=True) if url in wanted
                  for name in FIELDS if record.get(name) != getattr(wanted[url], name)]
    return Comparison(len(wanted), len(set(urls)), sorted(set(wanted) - set(urls)),
                      sorted(set(urls) - set(wanted)), len(urls) - len(set(urls)),
                      mismatches[:20])


# -- the site, served apart ------------------------------------------------------------------
@dataclass
class ServedSite:
    """The generic site in its own process, and the same site built here for the expectation."""

    url: str
    site: GenericSite
    proc: subprocess.Popen[str]

    def requests(self) -> int:
        """The server's own count of requests so far."""
        with urllib.request.urlopen(self.url + "/_sandbox/stats", timeout=5) as answer:
            return int(json.loads(answer.read())["requests"])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def shape_of(size: str) -> Shape:
    return {"small": Shape.small(), "bench": Shape()}[size]


def serve_site(size: str, max_seconds: float = 3600.0) -> ServedSite:
    """``python -m sandbox.generic --size SIZE`` as a child (bounded life), once listening."""
    proc = subprocess.Popen([sys.executable, "-m", "sandbox.generic", "--size", size,
                             "--max-seconds", str(max_seconds)], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stdout is not None
    line = proc.stdout.readline().split()
    if not line:
        proc.wait(timeout=10)
        raise RuntimeError(f"the generic site exited with {proc.returncode} before listening")
    return ServedSite(line[0], build(shape_of(size), line[0]), proc)


def run_all(size: str, depth: int, peers: Sequence[str], timeout: float,
            quiet_wait_s: float = 0.0) -> dict[str, Any]:
    """Each peer alone against a fresh server of the site: comparison and figures.

    With ``quiet_wait_s``, first wait (that long at most) for the machine to be quiet:
    other tenants' load is recorded as ``machine_busy_s`` either way."""
    result: dict[str, Any] = {"size": size, "depth": depth}
    for name in peers:
        if quiet_wait_s:
            wait_quiet(max_wait_s=quiet_wait_s)
        served = serve_site(size)
        try:
            expected = expected_records(served.site, depth)
            run = run_peer(name, served.url, depth, bench_dir() / "generic-peers" / size,
                           timeout)
            result.setdefault("expected_pages", sum(r.status == 200 for r in expected))
            result[name] = {**figures(run), "server_requests": served.requests(),
                            "comparison": asdict(compare(run.records, expected))}
        finally:
            served.stop()
    return result


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.generic_peers", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=("check", "measure"))
    p.add_argument("--size", choices=("small", "bench"),
                   help="default: small for check, bench for measure")
    p.add_argument("--depth", type=int, default=3)
    p.add_argument("--peers", default=",".join(PEERS), help="comma-separated: scrapy,crawlee")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per peer run")
    p.add_argument("--quiet-wait", type=float, default=0.0,
                   help="wait up to this many seconds for a quiet machine before each peer")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    size = args.size or ("small" if args.what == "check" else "bench")
    peers = [name.strip() for name in args.peers.split(",") if name.strip()]
    unknown = set(peers) - set(PEERS)
    if unknown:
        p.error(f"unknown peer(s) {sorted(unknown)}: expected some of {', '.join(PEERS)}")
    result = run_all(size, args.depth, peers, args.timeout, args.quiet_wait)
    same = all(result[name]["comparison"]["missing"] == []
               and result[name]["comparison"]["extra"] == []
               and result[name]["comparison"]["duplicates"] == 0
               and result[name]["comparison"]["field_mismatches"] == [] for name in peers)
    result["same_page_sets"] = same
    report(result, args.json)
    return 0 if same or args.what == "measure" else 1


if __name__ == "__main__":
    sys.exit(main())
