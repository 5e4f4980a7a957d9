"""The JavaScript shop crawled on a real cluster (embedded redis-server, a Celery worker,
the system Chromium): exactly, in the browser or rendering only where needed, and no
browser process outlives its worker however the worker ends."""

from __future__ import annotations

import json
import signal
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil
import pytest

from bench.crawl_project import Cluster, Layout
from chains.jsshop import jsshop
from chains.runtime.launch import launch
from external_interface.clients.browser_pool import MARKER
from sandbox.js.__main__ import serve
from sandbox.js.catalogue import Catalogue
from sandbox.loop_server import LoopServer
from tests.external_interface.clients.browser_support import need_chromium

pytestmark = [pytest.mark.slow, pytest.mark.integration]
LAYOUT = Layout(workers=1, pool="prefork", worker_concurrency=1, unit_threads=4)


@contextmanager
def shop_and_cluster(tmp_path: Path, products: int = 24, hang: int = 0,
                     env: dict[str, str] | None = None) -> Iterator[tuple[LoopServer, Cluster]]:
    need_chromium()
    server = serve(Catalogue(2, products), hang=hang).start_in_thread()
    cluster = Cluster(tmp_path, server.url, LAYOUT, queues="jsshop",
                      extra_env={"BROWSER_PAGES": "4", **(env or {})})
    try:
        cluster.start()
        yield server, cluster
    finally:
        cluster.stop()
        server.close()


def _crawl(server: LoopServer, cluster: Cluster, client: str | None) -> dict[str, Any]:
    settings = {"base_url": server.url, **({"client": client} if client else {})}
    job = launch(jsshop, {}, runtime=cluster.runtime, settings={"jsshop": settings})
    return dict(job.wait(timeout=180))


def _exact(server: LoopServer, cluster: Cluster) -> bool:
    with urllib.request.urlopen(server.url + "/__expected", timeout=5) as answer:
        expected = json.loads(answer.read())["products"]
    stored = sorted((r["data"] for r in cluster.runtime.store.read("products")),
                    key=lambda r: int(r["id"]))
    return bool(stored == expected)


def _browsers(workdir: Path) -> list[psutil.Process]:
    """Chromium processes started for this run (the run directory is in their environment)."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        if not any(str(a).startswith(MARKER) for a in process.info["cmdline"] or ()):
            continue
        try:
            if any(str(workdir) in v for v in process.environ().values()):
                found.append(process)
        except psutil.Error:
            continue
    return found


def _gone_within(workdir: Path, seconds: float) -> list[psutil.Process]:
    deadline = time.monotonic() + seconds
    while (left := _browsers(workdir)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return [p for p in left if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


def test_every_product_is_crawled_in_the_browser_and_no_blocked_resource_is_asked(
        tmp_path: Path) -> None:
    with shop_and_cluster(tmp_path) as (server, cluster):
        status = _crawl(server, cluster, "browser")
        assert status["state"] == "finished" and not status["failures"]
        assert _exact(server, cluster)
        totals = status["totals"]
        assert totals["rendered"] == totals["requests"] == 1 + 3 + 24
        assert server.tally.requests("/img/") + server.tally.requests("/font/") + \
            server.tally.requests("/media/") == 0


def test_auto_renders_the_script_built_pages_only(tmp_path: Path) -> None:
    with shop_and_cluster(tmp_path) as (server, cluster):
        status = _crawl(server, cluster, None)
        assert status["state"] == "finished" and _exact(server, cluster)
        steps = status["steps"]
        assert steps["product"]["rendered"] == 0 and steps["product"]["requests"] == 24
        for name in ("home", "app_list", "scroll_list", "reveal_list"):
            assert steps[name]["rendered"] == 1


@pytest.mark.parametrize("end", ["sigterm", "sigkill"])
def test_no_browser_outlives_its_worker(tmp_path: Path, end: str) -> None:
    with shop_and_cluster(tmp_path, products=6) as (server, cluster):
        assert _crawl(server, cluster, "browser")["state"] == "finished"
        assert _browsers(tmp_path), "the worker's browser is alive between jobs"
        worker = cluster.procs["worker0"]
        if end == "sigterm":
            worker.send_signal(signal.SIGTERM)  # the wrapper passes it on: a warm stop
        else:
            for process in psutil.Process(worker.pid).children(recursive=True):
                if "celery" in " ".join(process.cmdline()):
                    process.kill()  # the worker and its pool child, never given a say
        assert _gone_within(tmp_path, 20) == []


def test_a_soft_time_limit_ends_the_page_and_the_unit_is_retried(tmp_path: Path) -> None:
    """A product page that never loads, under a deadline longer than the message's soft
    limit: the limit interrupts the page (its tab closed), the unit is retried and
    stored; the browser stays for the next pages, and goes with the worker."""
    env = {"FETCH_DEADLINE_S": "40", "POLITE_LEASE_TTL_S": "60", "TASK_SOFT_TIME_LIMIT_S": "8",
           "TASK_TIME_LIMIT_S": "30"}
    with shop_and_cluster(tmp_path, products=6, hang=1, env=env) as (server, cluster):
        status = _crawl(server, cluster, "browser")
        assert status["state"] == "finished" and _exact(server, cluster)
        assert status["totals"]["retried"] >= 1
        cluster.procs["worker0"].send_signal(signal.SIGTERM)
        assert _gone_within(tmp_path, 20) == []
