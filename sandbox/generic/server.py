"""The generic site as a loop-server handler: every answer rendered once, looked up by path.

    server, site = generic_server(Shape.small())
    with server:
        ... crawl server.url ...; server.tally.requests() == 0 on a cached second run

The query string is ignored (the site has none); any path it does not have gets
the not-found page with status 404.
"""

from __future__ import annotations

from sandbox.generic.render import not_found, replies
from sandbox.generic.site import GenericSite, Shape, build
from sandbox.loop_server import Incoming, LoopServer, Reply, bind, url_of


class GenericHandler:
    def __init__(self, site: GenericSite) -> None:
        self.site = site
        self.replies = replies(site)
        self.missing = not_found(site)

    def __call__(self, incoming: Incoming) -> Reply:
        return self.replies.get(incoming.path, self.missing)


def generic_server(shape: Shape | None = None, host: str = "127.0.0.1",
                   port: int = 0) -> tuple[LoopServer, GenericSite]:
    """The site built for the address it is bound to, and its server (not started yet)."""
    sock = bind(host, port)
    site = build(shape or Shape(), url_of(sock))
    return LoopServer([(GenericHandler(site), sock)]), site
