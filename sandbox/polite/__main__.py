"""``python -m sandbox.polite [--port P] [--seed S] [--no-defences] [--max-seconds T]``.

Serves the polite site on 127.0.0.1 (``--host`` may name another 127.x address)
until SIGTERM or ``--max-seconds`` (one hour by default); prints its base URL on
stdout once listening, and writes it to ``--url-file`` when given. The server's
own count of requests per client and status is at ``GET /_sandbox/stats``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from sandbox.loop_server import LoopServer, bind
from sandbox.polite.catalogue import Catalogue, Shape
from sandbox.polite.defences import PoliteDefences
from sandbox.polite.site import PoliteSite


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m sandbox.polite", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0: a free port")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--categories", type=int, default=Shape.categories)
    p.add_argument("--items", type=int, default=Shape.items_per_category,
                   help="items per category")
    p.add_argument("--rate", type=float, default=50.0, help="requests/s per client address")
    p.add_argument("--burst", type=float, default=50.0, help="token bucket size")
    p.add_argument("--flaky", type=float, default=0.10, help="share of URLs whose first ask 503s")
    p.add_argument("--no-defences", action="store_true",
                   help="no rate limit, no 503s, no User-Agent check")
    p.add_argument("--max-seconds", type=float, default=3600.0, help="exit by itself after this")
    p.add_argument("--url-file", type=Path)
    return p.parse_args(argv)


def defences_for(args: argparse.Namespace) -> PoliteDefences:
    if args.no_defences:
        return PoliteDefences.off()
    return PoliteDefences(rate=args.rate, burst=args.burst, flaky_share=args.flaky)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    catalogue = Catalogue(args.seed, Shape(categories=args.categories,
                                           items_per_category=args.items))
    site = PoliteSite(catalogue, defences_for(args))
    LoopServer([(site, bind(args.host, args.port))]).run(args.max_seconds, args.url_file)
    return 0


if __name__ == "__main__":
    sys.exit(main())
