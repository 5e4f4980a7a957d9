"""An index of good pages and a few bad URLs on one host: what must not stall the host.

    server, site = stall_server(hold_s=120)
    with server:
        ... generic crawl of server.url + "/" to depth 1 ...
        every BAD path failed with its reason; every GOOD path stored

The index links ``GOOD`` (20 plain pages, each linking back to the index) and
``BAD`` (20 endpoints, four of each kind): ``hang`` (accepts, never answers),
``drip`` (headers, then a body byte a second, never complete), ``loop`` (redirects
to itself), ``error`` (500 every time) and ``limited`` (429 every time, no
Retry-After). Each bad URL fails alone: the host answers every other path at once.
A crawler that takes those failures for the host's distress slows the whole host
down; one that tells them apart stores the good pages at full speed and fails each
bad URL within its own retries. The links interleave good and bad, bad first, so
the first requests in flight are the bad ones. ``robots.txt`` is a 404, and no
sitemap exists.
"""

from __future__ import annotations

from dataclasses import dataclass

from sandbox.hostile import endpoints as e
from sandbox.hostile.site import page
from sandbox.loop_server import Incoming, LoopServer, Reply, Script, bind

PER_KIND = 4


@dataclass(frozen=True)
class Bad:
    """One bad URL and the class of reason it must fail with."""

    path: str
    kind: str  # hang, drip, loop, error, limited
    reason: str  # a regex the failure's recorded reason matches


KINDS = {
    "hang": r"deadline|timed out",
    "drip": r"deadline|timed out",
    "loop": r"more than \d+ redirects",
    "error": r"500",
    "limited": r"429",
}
BAD = tuple(Bad(f"/bad/{kind}-{n}", kind, reason)
            for n in range(1, PER_KIND + 1) for kind, reason in KINDS.items())
GOOD = tuple(f"/good/{n}.html" for n in range(1, len(BAD) + 1))


class StallSite:
    """The routes: the index, the good pages, the bad URLs; anything else a 404."""

    def __init__(self, hold_s: float = 120.0) -> None:
        self.hold_s = hold_s
        links = [path for pair in zip((b.path for b in BAD), GOOD, strict=True) for path in pair]
        self.routes: dict[str, Reply | Script] = {"/": Reply(200, page("Stall index", links))}
        for n, path in enumerate(GOOD, 1):
            self.routes[path] = Reply(200, page(f"Good page {n}", ["/"]))
        for bad in BAD:
            self.routes[bad.path] = self._bad(bad)

    def _bad(self, bad: Bad) -> Reply | Script:
        if bad.kind == "hang":
            return e.hang(self.hold_s)
        if bad.kind == "drip":
            return e.drip(e.head(Content_Type="text/html", Content_Length="100000"), 1.0,
                          self.hold_s)
        if bad.kind == "loop":
            return e.redirect(bad.path)
        if bad.kind == "error":
            return Reply(500, page("Server error", []))
        return Reply(429, page("Too many requests", []))

    def __call__(self, incoming: Incoming) -> Reply | Script:
        return self.routes.get(incoming.path) or Reply(404, page("Not found", ["/"]))


def stall_server(hold_s: float = 120.0, host: str = "127.0.0.1",
                 port: int = 0) -> tuple[LoopServer, StallSite]:
    """The stall index on one listener, bound (not started yet)."""
    site = StallSite(hold_s)
    return LoopServer([(site, bind(host, port))]), site
