"""CPU per href of the URL canon: a page's links made fetchable, and their dedup keys.

    python -m bench.url_canon [--hrefs 10000] [--rounds 5] --json

A generic crawl hands ``utils.urls.fetch_url`` every href of a page, 10,000 and
more on a big listing, then ``utils.fingerprint.canonical_url`` the ones it
keeps. The hrefs are a mix as listing pages write them: relative paths with and
without queries, ``../``, same-host and other-host absolute URLs, ``//host``,
fragments, ``javascript:`` and ``mailto:``, percent-escapes, and a few with
spaces, a newline and non-ASCII to percent-encode. Each figure is CPU
microseconds per href (``time.process_time``), median of ``--rounds`` rounds
with the best beside it, against Scrapy's path for the same work:

    fetch_url               utils.urls.fetch_url(href, page)
    fetch_and_key           fetch_url, then canonical_url on the result
    peer.urljoin            urllib.parse.urljoin alone (resolves, cleans nothing)
    peer.scrapy_follow      urljoin + w3lib safe_url_string (Response.follow)
    peer.scrapy_and_key     the same + w3lib canonicalize_url (the fingerprint)
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urljoin

from w3lib.url import canonicalize_url, safe_url_string

from bench import report
from utils.fingerprint import canonical_url
from utils.urls import fetch_url

PAGE = "https://www.shop-example.com/category/shoes/index.html?page=3"
MAX_HREFS = 200_000
Canon = Callable[[str], object]
_KINDS: list[tuple[int, Callable[[int], str]]] = [  # (weight, href of link i)
    (30, lambda i: f"/product/{i}-running-shoe?color=red&size={i % 12}"),
    (15, lambda i: f"item-{i}.html"),
    (8, lambda i: f"../boots/item-{i}.html"),
    (12, lambda i: f"https://www.shop-example.com/p/{i}"),
    (5, lambda i: f"https://cdn{i % 4}.other-example.net/img/{i}.jpg"),
    (5, lambda i: f"//www.shop-example.com/brand/{i}/"),
    (5, lambda i: f"?page={i}"),
    (5, lambda i: f"#review-{i}"),
    (5, lambda i: f"/search?q=red%20shoes&page={i}&sort=price"),
    (3, lambda i: "javascript:void(0)"),
    (2, lambda i: f"mailto:shop{i}@example.com"),
    (5, lambda i: f"  /Gr\u00f6\u00dfe/{i} schuhe.html\n"),
]


def hrefs(count: int, seed: int = 1) -> list[str]:
    """``count`` hrefs drawn from the mix, the same for every client."""
    draw = random.Random(seed)
    weights = [weight for weight, _ in _KINDS]
    return [draw.choices(_KINDS, weights)[0][1](i) for i in range(count)]


def clients() -> dict[str, Canon]:
    def ours_and_key(href: str) -> object:
        url = fetch_url(href, PAGE)
        return url and canonical_url(url)

    def scrapy_follow(href: str) -> object:
        return safe_url_string(urljoin(PAGE, href))

    def scrapy_and_key(href: str) -> object:
        return canonicalize_url(safe_url_string(urljoin(PAGE, href)))

    return {"fetch_url": lambda href: fetch_url(href, PAGE), "fetch_and_key": ours_and_key,
            "urljoin": lambda href: urljoin(PAGE, href), "scrapy_follow": scrapy_follow,
            "scrapy_and_key": scrapy_and_key}


def measure(canon: Canon, links: list[str]) -> float:
    """CPU microseconds per href over ``links``."""
    started = time.process_time()
    for href in links:
        canon(href)
    return (time.process_time() - started) * 1e6 / len(links)


def run(count: int, rounds: int) -> dict[str, Any]:
    links, named = hrefs(count), clients()
    samples: dict[str, list[float]] = {name: [] for name in named}
    for _ in range(rounds):
        for name, canon in named.items():
            samples[name].append(measure(canon, links))
    figures = {name: {"median": round(statistics.median(values), 2),
                      "best": round(min(values), 2)} for name, values in samples.items()}
    return {"hrefs": count, "rounds": rounds, "cpu_us_per_href": figures.pop("fetch_url"),
            "with_key": figures.pop("fetch_and_key"), "peer": figures}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.url_canon", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hrefs", type=int, default=10_000, help="hrefs per round")
    parser.add_argument("--rounds", type=int, default=5, help="rounds; the median is reported")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if not 1 <= args.hrefs <= MAX_HREFS or not 1 <= args.rounds <= 50:
        parser.error(f"--hrefs must be 1..{MAX_HREFS} and --rounds 1..50")
    report(run(args.hrefs, args.rounds), args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
