"""Open a Python shell with a page fetched as ``response``, to work out selectors.

    crawlchain shell http://127.0.0.1:8765/forum/

Like ``scrapy shell``: ``response.css(...)``, ``response.xpath(...)``, ``response.json()``;
``fetch(url)`` fetches another page into ``response``. The fetch is the crawler's own,
with its bounds; nothing is stored.
"""

from __future__ import annotations

import argparse
import code
from typing import Any


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("url", help="the page to fetch first")
    parser.add_argument("-c", "--command", help="run this Python and exit (for scripts)")


def run(args: argparse.Namespace) -> int:
    from config import get_settings
    from external_interface.fetch import Fetcher
    from external_interface.http import Request, Response

    fetcher = Fetcher(get_settings().fetch)
    names: dict[str, Any] = {"Request": Request}

    def fetch(url: str) -> Response:
        """Fetch ``url`` into ``response`` (and return it)."""
        names["response"] = fetcher.fetch_raw(Request(url))
        return names["response"]  # type: ignore[no-any-return]

    names["fetch"] = fetch
    first = fetch(args.url)
    banner = (f"{first.status} {first.url} ({len(first.body)} bytes, {first.content_type})\n"
              "names: response, fetch(url), Request")
    if args.command:
        exec(args.command, names)
        return 0
    code.interact(banner=banner, local=names)
    return 0
