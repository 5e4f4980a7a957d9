"""Rate-limit accuracy of a real crawl, measured at the server.

The properties chain crawls a small site (``--rate-n`` details) on two Celery worker
processes of a private cluster, the site limited to ``--rate`` requests/s through
``POLITE_SITES`` (the cluster-wide GCRA limiter in Redis, not Celery's per-worker
``rate_limit``). The site is served by a threaded server on 127.0.0.1 that stamps
every request's arrival; the figure is the arrival rate over the steady window
(``bench.rate_limit.figures``: from one second after the first request to the last).
At 20/s the server is nowhere near a bottleneck, so the crawl's pace is the limiter's.
"""

from __future__ import annotations

import json
import threading
import time
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

from bench import crawl_project
from bench.crawl_project import Cluster, Layout
from bench.properties.gen_site import ensure_site, index_pages
from bench.rate_limit import figures
from chains.properties import properties_chain

LAYOUT = Layout(workers=2, pool="prefork", worker_concurrency=1, unit_threads=4)
WARMUP_S = 1.0


class _StampingHandler(SimpleHTTPRequestHandler):
    """Serves the site's files and records when each request arrived."""

    protocol_version = "HTTP/1.1"  # keep-alive, as a crawler uses it
    arrivals: list[float]

    def do_GET(self) -> None:
        self.arrivals.append(time.monotonic())  # list.append is atomic under the GIL
        super().do_GET()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the arrivals are the record."""


class StampingSite:
    """The site's directory on a loopback port; ``arrivals`` are monotonic seconds."""

    def __init__(self, root: Path) -> None:
        self.arrivals: list[float] = []
        handler = type("Handler", (_StampingHandler,), {"arrivals": self.arrivals})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0),
                                          partial(handler, directory=str(root)))
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> StampingSite:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.server.shutdown()
        self.server.server_close()


def measure(workdir: Path, rate: float, n: int, timeout: float) -> dict[str, Any]:
    """Crawl the site of ``n`` details at ``rate``/s; the arrival figures and the crawl's."""
    site = ensure_site(n)
    polite = {"properties": {"rate_per_s": rate, "burst": 1}}
    with StampingSite(site) as server:
        cluster = Cluster(workdir, server.url, LAYOUT,
                          extra_env={"POLITE_SITES": json.dumps(polite)})
        try:
            cluster.start()
            result = crawl_project.crawl(cluster, properties_chain(detail_batch=10),
                                         [{"page": 0}], timeout)
        finally:
            cluster.stop()
        arrivals = sorted(server.arrivals)
    return {"target_per_s": rate, **figures(arrivals, rate, WARMUP_S),
            "worker_processes": LAYOUT.workers, "pages": result.pages,
            "complete": result.pages == n + index_pages(n)}
