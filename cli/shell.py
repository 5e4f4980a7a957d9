"""Open a Python shell with a page fetched as ``response``, to work out selectors.

    crawlchain shell http://127.0.0.1:8765/forum/

Like ``scrapy shell``: ``response.css(...)``, ``response.xpath(...)``, ``response.json()``;
``fetch(url)`` fetches another page into ``response``. The fetch is the crawler's own,
with its bounds and a browser's default headers; nothing is stored. A URL that is not
http(s) is refused (exit 2); a page that cannot be fetched (the site is down; a bad
status is fine: it is shown) is one line and exit 1.
"""

from __future__ import annotations

import argparse
import code
import sys
from typing import Any


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("url", help="the page to fetch first")
    parser.add_argument("-c", "--command", help="run this Python and exit (for scripts)")


def run(args: argparse.Namespace) -> int:
    from config import get_settings
    from exceptions import CrawlError
    from external_interface.clients.factory import build_client
    from external_interface.http import Request, Response
    from external_interface.user_agent.headers import default_headers
    from utils.urls import UnsupportedURL, normalize_url

    try:
        url = normalize_url(args.url)
    except UnsupportedURL as exc:
        raise SystemExit(f"{args.url!r} is not a URL to fetch ({exc}): give an absolute "
                         f"http(s) URL, e.g. http://{args.url.lstrip('/')}") from None
    settings = get_settings()
    fetcher = build_client("http", settings.fetch)
    headers = default_headers(settings.headers.family, url)  # a browser's, as a worker's
    names: dict[str, Any] = {"Request": Request}

    def fetch(url: str) -> Response:
        """Fetch ``url`` into ``response`` (and return it)."""
        names["response"] = fetcher.fetch_raw(Request(url, headers=dict(headers)))
        return names["response"]  # type: ignore[no-any-return]

    names["fetch"] = fetch
    try:
        first = fetch(url)
    except CrawlError as exc:
        print(f"crawlchain shell: {url} could not be fetched: {exc.reason}", file=sys.stderr)
        return 1
    banner = (f"{first.status} {first.url} ({len(first.body)} bytes, {first.content_type})\n"
              "names: response, fetch(url), Request")
    if args.command:
        exec(args.command, names)
        return 0
    code.interact(banner=banner, local=names)
    return 0
