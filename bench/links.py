"""Link extraction per link: ``links.extract_page`` against Scrapy's ``LinkExtractor``.

    .venv/bin/python -m bench.links [--links 10000] [--rounds 5] [--json]
    run/bench/scrapy-venv/bin/python bench/links.py --scrapy     # the peer, in its venv

(The peer's venv is the one ``bench.crawl_scrapy.ensure_venv()`` creates from
``bench/scrapy_peer/requirements.txt``.)

A generated index page of ``--links`` anchors (relative and absolute paths,
same-site and external, fragments, duplicates, a few nofollow, as a
documentation index has them, about 70 bytes of markup each) is parsed and its
links resolved; the figure is the median over ``--rounds`` of the CPU time of
one whole call (decode, parse, walk, resolve, deduplicate) divided by the
anchors on the page. The page generator imports nothing of the project, so the
peer runs this same file in Scrapy's venv.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

BASE = "https://docs.example.org/guide/index.html"


def index_page(links: int) -> bytes:
    """An index page with ``links`` anchors, deterministic."""
    rows = []
    for i in range(links):
        kind = i % 20
        if kind < 10:
            href = f"/guide/section-{i % 97}/page-{i}.html"
        elif kind < 14:
            href = f"page-{i}.html#anchor-{i % 7}"
        elif kind < 16:
            href = f"https://docs.example.org/api/{i}?v=2"
        elif kind == 16:
            href = f"https://other-{i % 13}.example.com/ref/{i}"
        elif kind == 17:
            href = f"#heading-{i}"
        elif kind == 18:
            href = f"/guide/section-{i % 97}/page-{i - 18}.html"  # a duplicate
        else:
            href = f"../reference/item-{i}.html"
        rel = ' rel="nofollow"' if i % 101 == 0 else ""
        rows.append(f'<li class="toc"><a href="{href}"{rel}>Entry number {i}</a></li>')
    return ("<!doctype html><html><head><meta charset='utf-8'><title>Index</title>"
            "<meta name='description' content='Every page'></head><body><nav><ul>"
            + "\n".join(rows) + "</ul></nav></body></html>").encode()


def ours(body: bytes) -> int:
    from external_interface.http import Response
    from external_interface.links.extract import extract_page

    page = extract_page(Response(BASE, 200, {"Content-Type": "text/html; charset=utf-8"}, body))
    return len(page.links) + len(page.nofollow)


def scrapy_peer(body: bytes) -> int:
    from scrapy.http import HtmlResponse  # type: ignore[import-not-found]
    from scrapy.linkextractors import LinkExtractor  # type: ignore[import-not-found]

    response = HtmlResponse(BASE, body=body, encoding="utf-8")
    return len(LinkExtractor().extract_links(response))


def measure(extract: Callable[[bytes], int], body: bytes, rounds: int) -> tuple[float, int]:
    """Median CPU seconds of one call, and the links it found."""
    found = extract(body)  # warm: imports, caches
    times = []
    for _ in range(rounds):
        started = time.process_time()
        extract(body)
        times.append(time.process_time() - started)
    return statistics.median(times), found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--links", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--scrapy", action="store_true", help="measure the peer instead")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    links, rounds = min(args.links, 200_000), min(max(args.rounds, 1), 50)
    body = index_page(links)
    name, extract = ("scrapy_linkextractor", scrapy_peer) if args.scrapy else (
        "crawlchain_extract_page", ours)
    seconds, found = measure(extract, body, rounds)
    result = {"extractor": name, "anchors": links, "links_found": found,
              "page_bytes": len(body), "ms_per_page": round(seconds * 1e3, 2),
              "us_per_link": round(seconds / links * 1e6, 3)}
    print(json.dumps(result) if args.json else
          f"{name}: {result['us_per_link']} µs per link ({result['ms_per_page']} ms for "
          f"{links} anchors, {found} links found)")


if __name__ == "__main__":
    main()
