"""``python -m sandbox [--port P] [--seed S] [--users N] [--articles N] [--reposts N]
[--exits N] [--burnt-exits N] [--exits-file PATH] [--no-defences]
[--forum-shape small|large] [--forum-seed S]``.

Serves the demo site, and the forum under ``/forum/``, on 127.0.0.1 until SIGTERM;
logs its base URL once listening (``LOG_LEVEL`` and ``LOG_FORMAT`` as everywhere; at
DEBUG, one line per request), and writes it to ``--url-file`` when given. Every defence
is on (``Defences.on()``) unless ``--no-defences`` (the forum has none); ``--exits``
forward proxies (``sandbox.exits``) listen next to it, their URLs written to
``--exits-file`` (what ``PROXY_FILE`` reads), and the last ``--burnt-exits`` of them
are banned from the start, as a bought proxy list always holds a few burnt addresses.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from pathlib import Path

from sandbox.defences import Defences
from sandbox.exits import Exits
from sandbox.forum.site import ForumSite
from sandbox.forum.world import SHAPES, ForumWorld
from sandbox.server import SandboxServer, Site
from sandbox.world import Shape, World
from utils.logs import configure

log = logging.getLogger("sandbox")


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m sandbox", description=__doc__)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--users", type=int, default=Shape.users)
    p.add_argument("--articles", type=int, default=Shape.articles)
    p.add_argument("--reposts", type=int, default=Shape.reposts)
    p.add_argument("--url-file", type=Path)
    p.add_argument("--exits", type=int, default=4, help="forward proxies to start")
    p.add_argument("--burnt-exits", type=int, default=1, help="exits banned from the start")
    p.add_argument("--exits-file", type=Path, help="write the proxies' URLs here")
    p.add_argument("--no-defences", action="store_true", help="serve without any defence")
    p.add_argument("--forum-shape", choices=sorted(SHAPES), default="small")
    p.add_argument("--forum-seed", type=int, default=7)
    return p.parse_args(argv)


def defences_for(args: argparse.Namespace, exits: Exits) -> Defences:
    if args.no_defences:
        return Defences()
    burnt = exits.addresses[len(exits.addresses) - args.burnt_exits:] if args.burnt_exits else []
    return Defences.on(banned_exits=frozenset(burnt))


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    configure()  # LOG_LEVEL, LOG_FORMAT; at DEBUG, one line per request
    world = World(args.seed, Shape(users=args.users, articles=args.articles, reposts=args.reposts))
    exits = Exits(args.exits).start()
    forum = ForumSite(ForumWorld.build(args.forum_seed, SHAPES[args.forum_shape]))
    server = SandboxServer(Site(world, defences=defences_for(args, exits), forum=forum),
                           args.host, args.port)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    if args.exits_file:
        exits.write(args.exits_file)
    if args.url_file:
        args.url_file.write_text(server.base_url + "\n")
    log.info("serving %s", server.base_url)
    try:
        server.serve_forever()
    finally:
        server.server_close()
        exits.stop()
        if args.exits_file:
            args.exits_file.unlink(missing_ok=True)  # a stale list would point at nothing
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
