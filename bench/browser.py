"""``./control.sh bench browser [--products N] [--concurrency C] [--json]``: pages built by
JavaScript, crawled by crawlchain's browser client, Crawlee for Python's
PlaywrightCrawler and scrapy-playwright, in one run, on the same Chromium.

The JavaScript shop (``sandbox.js``: a home page whose links a script inserts, a list
from a JSON API, an infinite-scroll list, a list revealed by a click, and ``--products``
product pages complete in their HTML) is served by its own process. Each crawler renders
every page, ``--concurrency`` pages at once, images, fonts and media blocked:

    project   ``chains/jsshop`` launched with ``client="browser"`` on a fresh cluster
              (embedded redis-server, one worker process running 4 messages at once on
              Celery's threads pool, so one browser serves them all; ``--concurrency``
              fetches and browser pages in flight), the system Chromium, default settings
    crawlee   ``bench/crawlee_peer/js_crawler.py`` (PlaywrightCrawler)
    scrapy    ``bench/scrapy_peer/js_spider.py`` (scrapy-playwright)
    auto      ``chains/jsshop`` again with its own ``render="auto"``: pages over http
              first, the browser only where the plain page gives nothing

For each: ``pages`` (the crawler's own count), ``pages_per_s`` (pages over the crawl's
wall-clock time: the job's for the project, from its creation to its finish; the
process's for a peer, start-up included), ``peak_rss_mb`` (the highest sum of the RSS of
every process of the crawler, browsers included, sampled every 0.2 s; the project's
redis-server counts; shared pages count once per process, alike for all; and
``peak_pss_mb``, the same with shared pages divided among their processes, sampled
every fifth time), ``exact``
(every product of ``/__expected`` and nothing else, and no image, font or media asked
of the server). The peers' venvs are made on first use from their pinned requirements
(``bench/*_peer/requirements-browser.txt``). The last line is JSON.

``--memory [--pages 10000]``: instead, the memory of one browser client (this process,
Playwright's driver, Chromium) over that many rendered pages, ``--concurrency`` at once,
marked every 500 pages; ``drift_rss`` and ``drift_pss`` are the last mark over the
first (goal: within ±15 %).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from bench import proctree, report
from bench.crawl_project import Cluster, Layout
from bench.peer_venvs import HERE, PeerVenv
from bench.proctree import tree, wait_quiet
from bench.properties import bench_dir
from chains.jsshop import jsshop
from chains.runtime.launch import launch
from config import BrowserSettings

ROOT = Path(__file__).resolve().parent.parent
MB = 1024 * 1024
CRAWLEE = PeerVenv("crawlee-browser-venv", HERE / "crawlee_peer" / "requirements-browser.txt",
                   "python")
SCRAPY = PeerVenv("scrapy-browser-venv", HERE / "scrapy_peer" / "requirements-browser.txt",
                  "python")
PEERS = {"crawlee": (CRAWLEE, HERE / "crawlee_peer" / "js_crawler.py"),
         "scrapy": (SCRAPY, HERE / "scrapy_peer" / "js_spider.py")}


class PeakRss:
    """The highest total RSS (and PSS) of some process trees, sampled from a thread."""

    def __init__(self, pids: Sequence[int], interval: float = 0.2) -> None:
        self.pids = list(pids)
        self.interval = interval
        self.peak = 0
        self.peak_pss = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._samples = 0

    def sample(self) -> None:
        """Every few samples PSS too (reading smaps costs more than RSS)."""
        size = pss = 0
        with_pss = self._samples % 5 == 0
        self._samples += 1
        for pid in self.pids:
            for process in tree(pid):
                try:
                    if with_pss:
                        full = process.memory_full_info()
                        size, pss = size + full.rss, pss + full.pss
                    else:
                        size += process.memory_info().rss
                except psutil.Error:
                    continue
        self.peak = max(self.peak, size)
        self.peak_pss = max(self.peak_pss, pss)

    def reset(self) -> None:
        """Forget the peaks and sample now, PSS included: a mark at one moment."""
        self.peak = self.peak_pss = self._samples = 0
        self.sample()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def __enter__(self) -> PeakRss:
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    @property
    def peak_mb(self) -> float:
        return round(self.peak / MB, 1)

    @property
    def peak_pss_mb(self) -> float:
        return round(self.peak_pss / MB, 1)


@dataclass
class Shop:
    """``python -m sandbox.js`` as a child process."""

    url: str
    proc: subprocess.Popen[str]

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(self.url + path, timeout=10) as answer:
            return json.loads(answer.read())

    def stop(self) -> None:
        proctree.stop(self.proc)


def serve(products: int) -> Shop:
    proc = subprocess.Popen([sys.executable, "-m", "sandbox.js", "--products", str(products),
                             "--max-seconds", "3600"], cwd=ROOT, stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline().split()
    if not line:
        raise RuntimeError("the JavaScript shop exited before listening")
    return Shop(line[0], proc)


def _exact(shop: Shop, found: list[dict[str, Any]], blocked_before: int) -> bool:
    expected = shop.get("/__expected")["products"]
    blocked = sum(shop.get("/__blocked").values())
    return bool(sorted(found, key=lambda r: int(r["id"])) == expected
                and blocked == blocked_before)


def run_project(shop: Shop, workdir: Path, concurrency: int, client: str | None,
                timeout: float) -> dict[str, Any]:
    """One job of ``chains/jsshop`` on a fresh cluster (``client``: the job's, or the
    steps' own ``render="auto"``)."""
    layout = Layout(workers=1, pool="threads", worker_concurrency=4,
                    unit_threads=concurrency, max_fetches=concurrency)
    cluster = Cluster(workdir, shop.url, layout, queues="jsshop",
                      extra_env={"BROWSER_PAGES": str(concurrency)})
    blocked = sum(shop.get("/__blocked").values())
    try:
        cluster.start()
        pids = [p.pid for p in cluster.procs.values()]
        rt = cluster.runtime
        settings = {"base_url": shop.url, **({"client": client} if client else {})}
        with PeakRss(pids) as rss:
            job = launch(jsshop, {}, runtime=rt, settings={"jsshop": settings})
            status = job.wait(timeout=timeout)
        meta = rt.ledger.meta(job.job_id)
        elapsed = float(meta["finished_at"]) - float(meta["created_at"])
        found = [r["data"] for r in rt.store.read("products")]
        totals = status["totals"]
        pages = int(totals["requests"])
        return {"pages": pages, "pages_per_s": round(pages / elapsed, 2),
                "elapsed_s": round(elapsed, 2), "peak_rss_mb": rss.peak_mb,
                "peak_pss_mb": rss.peak_pss_mb,
                "browser_pages": int(totals["rendered"]),
                "http_pages": pages - int(totals["rendered"]),
                "exact": status["state"] == "finished" and _exact(shop, found, blocked)}
    finally:
        cluster.stop()


def run_peer(name: str, shop: Shop, workdir: Path, concurrency: int,
             timeout: float) -> dict[str, Any]:
    venv, script = PEERS[name]
    python = venv.ensure()
    chromium = BrowserSettings().chromium()
    out = workdir / f"{name}.json"
    workdir.mkdir(parents=True, exist_ok=True)
    blocked = sum(shop.get("/__blocked").values())
    started = time.monotonic()
    with (workdir / f"{name}.log").open("w") as log:
        proc = subprocess.Popen([str(python), str(script), shop.url, str(out), str(chromium),
                                 str(concurrency)], stdout=subprocess.PIPE, stderr=log,
                                text=True, cwd=workdir)
        with PeakRss([proc.pid]) as rss:
            stdout, _ = proc.communicate(timeout=timeout)
    elapsed = time.monotonic() - started
    lines = stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{name} failed ({proc.returncode}); see {workdir}/{name}.log")
    pages = int(json.loads(lines[-1])["pages"])
    found = json.loads(out.read_text())
    return {"pages": pages, "pages_per_s": round(pages / elapsed, 2),
            "elapsed_s": round(elapsed, 2), "peak_rss_mb": rss.peak_mb,
                "peak_pss_mb": rss.peak_pss_mb,
            "exact": _exact(shop, found, blocked)}


def memory(pages: int, concurrency: int) -> dict[str, Any]:
    """``--memory``: ``pages`` product pages rendered by one browser client, ``concurrency``
    at once, in this process (what one worker process holds: the client, Playwright's
    driver, Chromium); the RSS and PSS of this process and all its children at page
    500 (a quarter of a shorter run) and every 500 pages after; ``drift_*`` is the last
    mark over the first (goal: within 0.85..1.15)."""
    from concurrent.futures import ThreadPoolExecutor

    from config import FetchSettings
    from external_interface.clients.browser import BrowserClient
    from external_interface.http import Request
    from sandbox.js.__main__ import serve as serve_in_thread
    from sandbox.js.catalogue import Catalogue

    at = min(500, max(1, pages // 4))  # a short run marks each quarter
    catalogue = Catalogue(1, 500)
    server = serve_in_thread(catalogue).start_in_thread(max_seconds=24 * 3600)
    client = BrowserClient(FetchSettings(), BrowserSettings(pages=concurrency))
    marks: list[dict[str, float]] = []
    me = PeakRss([os.getpid()])
    done = 0
    lock = threading.Lock()
    started = time.monotonic()

    def one(n: int) -> None:
        nonlocal done
        client.fetch_raw(Request(f"{server.url}/product/{1000 + n % 500}"))
        with lock:
            done += 1
            if done % at == 0:
                me.reset()
                marks.append({"page": done, "rss_mb": me.peak_mb, "pss_mb": me.peak_pss_mb,
                              "browsers": client.pool.launched})
    try:
        with ThreadPoolExecutor(concurrency) as pool:
            list(pool.map(one, range(pages)))
    finally:
        client.close()
        server.close()
    first, last = marks[0], marks[-1]
    return {"pages": pages, "concurrency": concurrency,
            "pages_per_s": round(pages / (time.monotonic() - started), 2),
            "marks": marks, "drift_rss": round(last["rss_mb"] / first["rss_mb"], 3),
            "drift_pss": round(last["pss_mb"] / first["pss_mb"], 3)}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.browser", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--products", type=int, default=300)
    p.add_argument("--concurrency", type=int, default=8, help="pages in flight, each crawler")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per crawl")
    p.add_argument("--quiet-wait", type=float, default=30.0,
                   help="wait up to this long for a quiet machine first")
    p.add_argument("--memory", action="store_true",
                   help="instead: memory over --pages rendered pages (see memory())")
    p.add_argument("--pages", type=int, default=10_000)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    if BrowserSettings().chromium() is None:
        print("bench browser: no Chromium here: apt-get install chromium, or set "
              "BROWSER_EXECUTABLE", file=sys.stderr)
        return 2
    if args.memory:
        report(memory(args.pages, args.concurrency), args.json)
        return 0
    workdir = bench_dir() / "browser" / time.strftime("%Y%m%d-%H%M%S")
    waited = wait_quiet(max_wait_s=args.quiet_wait) if args.quiet_wait else 0.0
    shop = serve(args.products)
    try:
        result: dict[str, Any] = {
            "project": run_project(shop, workdir / "project", args.concurrency, "browser",
                                   args.timeout)}
        for name in PEERS:
            result[name] = run_peer(name, shop, workdir / name, args.concurrency,
                                    args.timeout)
        result["auto"] = run_project(shop, workdir / "auto", args.concurrency, None,
                                     args.timeout)
    finally:
        shop.stop()
    best = max(PEERS, key=lambda n: float(result[n]["pages_per_s"]))
    result["ratios"] = {
        "best_peer": best,
        "pages_per_s_vs_best_peer": round(result["project"]["pages_per_s"]
                                          / result[best]["pages_per_s"], 3),
        "rss_vs_best_peer": round(result["project"]["peak_rss_mb"]
                                  / result[best]["peak_rss_mb"], 3)}
    result["products"], result["concurrency"] = args.products, args.concurrency
    result["quiet_wait_s"] = waited
    report(result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
