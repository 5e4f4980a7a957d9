"""The generic crawl on real workers against the generic sandbox site (small shape): every
page within depth stored as the site's own expectation says, the sitemap's orphans found,
robots.txt obeyed, other domains left alone, a cached second run that asks the server for
nothing, and a page cap that ends the job cleanly."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from chains.cluster import launch_crawl
from chains.runtime.model import Rule
from sandbox.cluster import Cluster, running_cluster
from sandbox.generic.expected import expected_records, sitemap_paths
from sandbox.generic.server import generic_server
from sandbox.generic.site import DISALLOWED, GenericSite, Shape
from sandbox.loop_server import LoopServer
from sandbox.world import World
from sites.docs import doc_page

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
DEPTH = 3


@pytest.fixture(scope="module")
def generic() -> Iterator[tuple[LoopServer, GenericSite]]:
    server, site = generic_server(Shape.small())
    with server:
        yield server, site


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("crawl"), World(seed=3)) as running:
        yield running


def records(cluster: Cluster, job_id: str) -> dict[str, dict[str, Any]]:
    """The job's page records by URL, without ``fetched_at`` (the time of the fetch)."""
    return {r["key"]: {k: v for k, v in r["data"].items() if k != "fetched_at"}
            for r in cluster.runtime.store.read("pages", job_id=job_id)}


def expected(site: GenericSite) -> dict[str, dict[str, Any]]:
    """The site's expectation; a page's links to itself (its ``#anchors``) are not outgoing."""
    out = {}
    for record in expected_records(site, DEPTH):
        data = record.as_dict()
        data["links"] = [u for u in data["links"] if u != data["final_url"]]
        out[record.url] = data
    return out


def test_the_crawl_stores_every_page_within_depth_finds_the_sitemaps_orphans_and_stays_home(
        cluster: Cluster, generic: tuple[LoopServer, GenericSite]) -> None:
    server, site = generic
    before = dict(server.tally.paths)
    job = launch_crawl([site.base + "/"], max_depth=DEPTH, runtime=cluster.runtime)
    status = job.wait(timeout=180)
    assert status["state"] == "finished" and status["failures"] == [], status["failures"]
    got = records(cluster, job.job_id)
    for data in got.values():
        data["links"] = [u for u in data["links"] if u != data["final_url"]]
    assert got == expected(site)
    orphans = [site.url(p) for p in sitemap_paths(site) if p != "/"]
    assert orphans and set(orphans) <= set(got)  # linked from nowhere: the sitemap's
    asked = {path: n - before.get(path, 0) for path, n in server.tally.paths.items()}
    assert not any(path.startswith(DISALLOWED) and n for path, n in asked.items())
    assert max(asked.values()) == 1, {p: n for p, n in asked.items() if n > 1}  # each URL once
    assert {urlsplit(url).netloc for url in got} == {urlsplit(site.base).netloc}
    assert status["steps"]["page"]["skipped"] == site.shape.private  # robots: the private pages


def crawl_cli(cluster: Cluster, *args: str) -> dict[str, Any]:
    """``python -m cli launch crawl ... --json`` in the cluster's environment."""
    done = subprocess.run([sys.executable, "-m", "cli", "launch", "crawl", *args, "--json"],
                          cwd=ROOT, env=cluster.env, capture_output=True, text=True,
                          timeout=240, check=False)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_a_second_run_with_the_http_cache_asks_the_server_nothing_and_stores_the_same(
        cluster: Cluster, generic: tuple[LoopServer, GenericSite]) -> None:
    server, site = generic
    runs, totals = [], []
    for _ in range(2):
        before = server.tally.requests()
        status = crawl_cli(cluster, "--start", site.base + "/", "--max-depth", str(DEPTH),
                           "--http-cache")
        assert status["state"] == "finished" and status["failures"] == []
        runs.append((server.tally.requests() - before, records(cluster, status["job_id"])))
        totals.append(status["totals"])
    (first_requests, first), (second_requests, second) = runs
    assert first_requests > 0 and second_requests == 0  # the server's own count
    assert second == first and len(second) == len(expected(site))
    # the summary says the same: the second run's fetches were the cache's replays
    assert totals[0]["requests"] > 0 and totals[0]["cache_hits"] == 0
    assert totals[1]["requests"] == 0 and totals[1]["cache_hits"] == totals[0]["requests"]


def test_max_pages_stops_the_crawl_at_exactly_that_many_pages_and_the_job_finishes(
        cluster: Cluster, generic: tuple[LoopServer, GenericSite]) -> None:
    _, site = generic
    job = launch_crawl([site.base + "/"], max_depth=DEPTH, max_pages=7, runtime=cluster.runtime)
    status = job.wait(timeout=120)
    assert status["state"] == "finished" and status["failures"] == []
    page = status["steps"]["page"]
    assert page["done"] == 7 and len(records(cluster, job.job_id)) == 7
    assert page["skipped"] > 0 and page["spawned"] == page["done"] + page["skipped"]


def test_a_rule_stores_typed_items_from_matching_pages_beside_the_page_records(
        cluster: Cluster, generic: tuple[LoopServer, GenericSite]) -> None:
    _, site = generic
    rule = Rule(r"/docs/[^/]+/[^/]+\.html$", doc_page)
    job = launch_crawl([site.base + "/"], max_depth=2, rules=[rule], runtime=cluster.runtime)
    status = job.wait(timeout=180)
    assert status["state"] == "finished", status["failures"]
    pages = records(cluster, job.job_id)
    docs = {r["key"]: r["data"] for r in cluster.runtime.store.read("doc_pages",
                                                                     job_id=job.job_id)}
    matching = {data["final_url"] for data in pages.values()
                if re.search(rule.pattern, data["final_url"])}
    assert matching and set(docs) == matching
    for url, doc in docs.items():
        page = next(p for p in pages.values() if p["final_url"] == url)
        assert doc["title"] == page["title"] and doc["section"] in url and doc["paragraphs"] > 0
