"""``python -m sandbox.js [--port P] [--seed S] [--products N] [--hang N] [--hog N]
[--max-seconds T]``.

Serves the JavaScript shop (``sandbox.js.site``) on 127.0.0.1 until SIGTERM or
``--max-seconds`` (``--hang N``, ``--hog N``: that many product pages never finish
loading, or allocate memory without end, the first time they are asked for); prints
its base URL on stdout once listening, and writes it to
``--url-file`` when given. ``/__expected`` lists every product a crawl must find,
``/__blocked`` how many images, fonts and media were asked for.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from sandbox.js.catalogue import Catalogue
from sandbox.js.site import JsShop
from sandbox.loop_server import LoopServer, bind


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m sandbox.js", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0: a free port")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--products", type=int, default=90)
    p.add_argument("--hang", type=int, default=0,
                   help="products whose page never finishes loading the first time")
    p.add_argument("--hog", type=int, default=0,
                   help="products whose page allocates memory without end the first time")
    p.add_argument("--max-seconds", type=float, default=3600.0, help="exit by itself after this")
    p.add_argument("--url-file", type=Path)
    return p.parse_args(argv)


def serve(catalogue: Catalogue, host: str = "127.0.0.1", port: int = 0,
          hang: int = 0, hog: int = 0) -> LoopServer:
    """The shop's server, not yet started (``start_in_thread`` or ``run``); the last
    ``hang`` products hang the first time, the ``hog`` before them hog memory."""
    ids = [p.id for p in catalogue.products]
    troubles = {i: "hang" for i in ids[len(ids) - hang:]} if hang else {}
    troubles |= {i: "hog" for i in ids[len(ids) - hang - hog:len(ids) - hang]} if hog else {}
    shop = JsShop(catalogue, troubles)
    server = LoopServer([(shop, bind(host, port))])
    shop.tally = server.tally
    return server


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    serve(Catalogue(args.seed, args.products), args.host, args.port, args.hang, args.hog).run(
        args.max_seconds, args.url_file)
    return 0


if __name__ == "__main__":
    sys.exit(main())
