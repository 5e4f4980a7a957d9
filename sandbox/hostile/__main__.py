"""``python -m sandbox.hostile [--port P] [--hold-seconds S] [--max-seconds T] [--unroutable]``.

With ``--stall``, serves the stall index instead (``sandbox.hostile.stall``: 20 good
pages and 20 bad URLs on one host, no private stand-in).

Serves the hostile index page on 127.0.0.1 and its private stand-in on 127.0.0.2
until SIGTERM or ``--max-seconds`` (one hour by default); prints both base URLs on
stdout once listening (the site's first) and writes the site's to ``--url-file``.
``GET /_sandbox/stats`` on either answers the count of requests and of accepted
connections per address: the private stand-in's must stay 0.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from sandbox.hostile.site import hostile_server
from sandbox.hostile.stall import stall_server


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sandbox.hostile", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0: a free port")
    p.add_argument("--hold-seconds", type=float, default=30.0,
                   help="how long a hanging or dripping endpoint keeps a connection")
    p.add_argument("--bomb-mb", type=int, default=64, help="decoded size of each bomb")
    p.add_argument("--unroutable", action="store_true",
                   help="also link redirects to 10.0.0.1 and 169.254.169.254 (only with a "
                        "crawler whose SSRF guard is on)")
    p.add_argument("--stall", action="store_true",
                   help="serve the stall index (good pages and a few bad URLs) instead")
    p.add_argument("--max-seconds", type=float, default=3600.0, help="exit by itself after this")
    p.add_argument("--url-file", type=Path)
    args = p.parse_args(argv)
    if args.stall:
        server, _ = stall_server(args.hold_seconds, args.host, args.port)
    else:
        server, _ = hostile_server(args.unroutable, args.hold_seconds, args.bomb_mb, args.host,
                                   args.port)
    server.run(args.max_seconds, args.url_file)
    return 0


if __name__ == "__main__":
    sys.exit(main())
