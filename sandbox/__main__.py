"""``python -m sandbox [--port P] [--seed S] [--users N] [--articles N] [--reposts N]``.

Serves the demo site on 127.0.0.1 until SIGTERM; prints its base URL on stdout once
listening, and writes it to ``--url-file`` when given.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from sandbox.server import SandboxServer, Site
from sandbox.world import Shape, World


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m sandbox", description=__doc__)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--users", type=int, default=Shape.users)
    p.add_argument("--articles", type=int, default=Shape.articles)
    p.add_argument("--reposts", type=int, default=Shape.reposts)
    p.add_argument("--url-file", type=Path)
    return p.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    world = World(args.seed, Shape(users=args.users, articles=args.articles, reposts=args.reposts))
    server = SandboxServer(Site(world), args.host, args.port)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    if args.url_file:
        args.url_file.write_text(server.base_url + "\n")
    print(server.base_url, flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
