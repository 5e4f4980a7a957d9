"""The polite site as a handler for the loop server: pre-rendered pages behind the defences.

    site = PoliteSite(Catalogue(seed), PoliteDefences())
    with LoopServer([(site, bind())]) as server:
        ... crawl server.url ...; server.tally.statuses("127.0.0.1")[429]

Every page is rendered at construction, so a request costs a dict lookup and one
write: the server answers thousands of requests a second on one core and the
crawler, not the site, sets the pace. The handler runs on the server's one loop
thread, so its state (buckets, URLs already failed) needs no lock.
"""

from __future__ import annotations

import json
from urllib.parse import urlencode

from sandbox.loop_server import Incoming, Reply
from sandbox.polite.catalogue import Catalogue
from sandbox.polite.defences import (
    PoliteDefences,
    TokenBuckets,
    agent_allowed,
    flaky_targets,
    retry_after,
)
from sandbox.polite.pages import render_all

JSON = "application/json"
FORBIDDEN = Reply(403, b'{"error": "automated clients are not allowed"}', JSON)
UNAVAILABLE = Reply(503, b'{"error": "temporarily unavailable, try again"}', JSON)
NOT_FOUND = Reply(404, b'{"error": "not found"}', JSON)


class PoliteSite:
    """Request in, reply out: rate, then user agent, then the page (503 on its first ask)."""

    def __init__(self, catalogue: Catalogue, defences: PoliteDefences | None = None) -> None:
        self.catalogue = catalogue
        self.defences = defences or PoliteDefences()
        self.pages = {target: Reply(200, body) for target, body in render_all(catalogue).items()}
        self.flaky = flaky_targets(catalogue.seed, self.pages, self.defences.flaky_share)
        self.failed: set[str] = set()
        d = self.defences
        self.buckets = TokenBuckets(d.rate, d.burst) if d.rate is not None else None

    def __call__(self, incoming: Incoming) -> Reply:
        if self.buckets is not None:
            wait = self.buckets.take(incoming.client)
            if wait:
                return Reply(429, json.dumps({"error": "too many requests"}).encode(), JSON,
                             (("Retry-After", retry_after(wait)),))
        if self.defences.check_agent and not agent_allowed(incoming.header("user-agent")):
            return FORBIDDEN
        target = self.target(incoming)
        page = self.pages.get(target)
        if page is None:
            return NOT_FOUND
        if target in self.flaky and target not in self.failed:
            self.failed.add(target)
            return UNAVAILABLE
        return page

    def target(self, incoming: Incoming) -> str:
        """The page key: path, and the query in a stable order (as the pages are keyed)."""
        if incoming.target in self.pages or "?" not in incoming.target:
            return incoming.target
        return incoming.path + "?" + urlencode(sorted(incoming.query.items()))
