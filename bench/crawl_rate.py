"""Rate-limit accuracy of a real crawl, measured at the server.

The properties chain crawls a small site (``--rate-n`` details) on two Celery worker
processes of a private cluster, the site limited to ``--rate`` requests/s through
``POLITE_SITES`` (the cluster-wide GCRA limiter in Redis, not Celery's per-worker
``rate_limit``). The site is served by a threaded server on 127.0.0.1 that stamps
every request's arrival; the figure is the arrival rate over the steady window
(``bench.rate_limit``'s server and figures: from one second after the first request
to the last). At 20/s the server is nowhere near a bottleneck, so the crawl's pace is the limiter's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench import crawl_project
from bench.crawl_project import Cluster, Layout
from bench.properties.gen_site import ensure_site, index_pages
from bench.rate_limit import Arrivals, figures
from chains.properties import properties_chain

LAYOUT = Layout(workers=2, pool="prefork", worker_concurrency=1, unit_threads=4)
WARMUP_S = 1.0


def measure(workdir: Path, rate: float, n: int, timeout: float) -> dict[str, Any]:
    """Crawl the site of ``n`` details at ``rate``/s; the arrival figures and the crawl's."""
    site = ensure_site(n)
    polite = {"properties": {"rate_per_s": rate, "burst": 1}}
    with Arrivals(site) as server:
        cluster = Cluster(workdir, server.url, LAYOUT,
                          extra_env={"POLITE_SITES": json.dumps(polite)})
        try:
            cluster.start()
            result = crawl_project.crawl(cluster, properties_chain(detail_batch=10),
                                         [{"page": 0}], timeout)
        finally:
            cluster.stop()
        arrivals = sorted(server.times)
    return {"target_per_s": rate, **figures(arrivals, rate, WARMUP_S),
            "worker_processes": LAYOUT.workers, "pages": result.pages,
            "complete": result.pages == n + index_pages(n)}
