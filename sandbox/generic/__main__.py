"""``python -m sandbox.generic [--size small|bench] [--port P] [--max-seconds T]``.

Serves the generic-crawl site on 127.0.0.1 (``--host`` may name another 127.x
address) until SIGTERM or ``--max-seconds`` (one hour by default). Every page is
rendered once at start-up, for the port it listens on. Prints the base URL on
stdout once listening, and writes it to ``--url-file`` when given. The server's own
count of requests is at ``GET /_sandbox/stats``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from sandbox.generic.server import generic_server
from sandbox.generic.site import Shape


def shape_for(args: argparse.Namespace) -> Shape:
    shape = Shape.small() if args.size == "small" else Shape()
    if args.crawl_delay is not None:
        shape = replace(shape, crawl_delay=args.crawl_delay or None)
    return replace(shape, seed=args.seed)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sandbox.generic", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", choices=("small", "bench"), default="bench")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0: a free port")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--crawl-delay", type=float,
                   help="robots.txt's Crawl-delay in seconds (0: no such line); "
                        "default: the size's own (small 0.05, bench none)")
    p.add_argument("--max-seconds", type=float, default=3600.0, help="exit by itself after this")
    p.add_argument("--url-file", type=Path)
    args = p.parse_args(argv)
    server, _ = generic_server(shape_for(args), args.host, args.port)
    server.run(args.max_seconds, args.url_file)
    return 0


if __name__ == "__main__":
    sys.exit(main())
