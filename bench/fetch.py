"""Client CPU per fetch: our ``http`` client against the HTTP clients it could have been.

    python -m bench.fetch [--pages 2000] [--rounds 5] [--site-pages 600] --json

Every client GETs the same detail pages (about 6.7 KB each) of the properties
site from nginx on 127.0.0.1, over one kept-alive connection, and is charged
the CPU time of this process (``time.process_time``: the client's work, never
nginx's) divided by the pages fetched. The peers run in the same process and
the same rounds, one after the other (each round led by another client), so a
busy machine weighs on all alike; each figure is the median of ``--rounds``
rounds, with the best round beside it.

    fetcher_fetch         HttpClient.fetch (bounds, guard off, status judged)
    requests_session_get  requests.Session.get(url).content
    urllib3_poolmanager   urllib3.PoolManager.request("GET", url).data
    http_client           http.client.HTTPConnection request/getresponse/read
"""

from __future__ import annotations

import argparse
import http.client
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

import requests
import urllib3

from bench import report
from bench.properties.gen_site import ensure_site
from bench.properties.pages import detail_name
from bench.properties.servers import nginx
from config import FetchSettings
from external_interface.clients.http import HttpClient
from external_interface.http import Request

MAX_PAGES = 100_000
WARM_UP = 20
Client = Callable[[str], bytes]


def main(argv: Sequence[str] | None = None) -> int:
    """Start nginx on the site, measure every client, print the figures."""
    args = parse_args(argv)
    site = ensure_site(args.site_pages)
    with nginx(site, workers="1") as server:
        urls = [f"{server.url}/{detail_name(i % args.site_pages)}" for i in range(args.pages)]
        result = run(urls, args.rounds)
    report(result, args.json)
    return 0


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.fetch", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=2000, help="fetches per client per round")
    parser.add_argument("--rounds", type=int, default=5, help="rounds; the median is reported")
    parser.add_argument("--site-pages", type=int, default=600, help="detail pages to cycle over")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if not 1 <= args.pages <= MAX_PAGES or not 1 <= args.rounds <= 50:
        parser.error(f"--pages must be 1..{MAX_PAGES} and --rounds 1..50")
    return args


def run(urls: list[str], rounds: int) -> dict[str, Any]:
    """Every client over ``urls`` in each round; ours at the top level, peers under ``peer``."""
    if urlsplit(urls[0]).hostname != "127.0.0.1":
        raise ValueError("the fetch benchmark runs against loopback only")
    clients = {"fetcher_fetch": fetcher_client(), "requests_session_get": requests_client(),
               "urllib3_poolmanager": urllib3_client(), "http_client": http_client(urls[0])}
    samples: dict[str, list[float]] = {name: [] for name in clients}
    names, size = list(clients), 0
    for turn in range(rounds):
        for name in names[turn % len(names):] + names[:turn % len(names)]:  # a new lead each round
            cpu_us, size = measure(clients[name], urls)
            samples[name].append(cpu_us)
    figures = {name: figure(values) for name, values in samples.items()}
    return {"pages": len(urls), "rounds": rounds, "page_bytes": size,
            "cpu_us_per_fetch": figures.pop("fetcher_fetch"), "peer": figures}


def measure(client: Client, urls: list[str]) -> tuple[float, int]:
    """CPU microseconds per fetch over ``urls`` after a warm-up, and the last page's size."""
    for url in urls[:WARM_UP]:
        client(url)
    body = b""
    started = time.process_time()
    for url in urls:
        body = client(url)
    return (time.process_time() - started) * 1e6 / len(urls), len(body)


def figure(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 1), "best": round(min(values), 1)}


def fetcher_client() -> Client:
    fetcher = HttpClient(FetchSettings())
    return lambda url: fetcher.fetch(Request(url)).body


def requests_client() -> Client:
    session = requests.Session()
    return lambda url: session.get(url, timeout=(5, 15)).content


def urllib3_client() -> Client:
    manager = urllib3.PoolManager(retries=False, timeout=urllib3.Timeout(connect=5, read=15))
    return lambda url: manager.request("GET", url).data


def http_client(first_url: str) -> Client:
    parts = urlsplit(first_url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=15)

    def get(url: str) -> bytes:
        conn.request("GET", urlsplit(url).path)
        return conn.getresponse().read()
    return get


if __name__ == "__main__":
    raise SystemExit(main())
