"""The hostile index page and its traps, and a private address that must never be reached.

    server, site = hostile_server()
    with server:
        ... generic crawl of server.url + "/" with the SSRF guard allowing only
            site.allow_entry (127.0.0.1:PORT) ...
        server.tally.connections[site.private_address] == 0    # nothing reached it
        server.tally.paths["/trap/hang"] == 1                   # each trap tried (not retried)

Two listeners on one loop: the site on 127.0.0.1 and a stand-in for a private
service on 127.0.0.2 (``private_address``), which answers "secret" and whose
accepted connections the tally counts. The traps that redirect to it spell it
four ways (dotted, decimal, hex, IPv4-mapped IPv6); a guard configured to allow
only the site's ``ip:port`` refuses them all before connecting. Redirects to
``10.0.0.1`` and ``169.254.169.254`` are there only with ``unroutable=True``:
the guard refuses them before connecting too, but if it ever failed the crawler
would send packets off this machine, which tests here must never do.

``TRAPS`` says, per trap, whether a careful crawler ends it failed or fetched,
and the class of reason; ``GOOD`` lists the good pages, which it must store.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from html import escape

from sandbox.hostile import endpoints as e
from sandbox.loop_server import Incoming, LoopServer, Reply, Script, bind, url_of

PRIVATE_HOST = "127.0.0.2"
FORGED = b"<html><head><title>INJECTED</title></head><body>a forged answer</body></html>"
INJECTED = e.head(Content_Type="text/html", Content_Length=str(len(FORGED))) + FORGED


@dataclass(frozen=True)
class Trap:
    """One link of the hostile page and what a careful crawler makes of it."""

    path: str
    what: str
    outcome: str  # "failed" or "fetched"
    reason: str  # the class of failure: timeout, too large, redirect loop, too many
    #              redirects, private address, incomplete body, connection reset; "" if fetched


TRAPS = (
    Trap("/trap/hang", "accepts, reads the request, never answers", "failed", "timeout"),
    Trap("/trap/drip-body", "headers, then one body byte a second", "failed", "timeout"),
    Trap("/trap/drip-head", "the status line, then one header byte a second", "failed",
         "timeout"),
    Trap("/trap/bomb-gzip", "gzip of 64 MB of zeros", "failed", "too large"),
    Trap("/trap/bomb-deflate", "deflate of 64 MB of zeros", "failed", "too large"),
    Trap("/trap/bomb-br", "brotli of 64 MB of zeros", "failed", "too large"),
    Trap("/trap/bomb-nested", "gzip inside gzip (Content-Encoding: gzip, gzip)", "failed",
         "too large"),
    Trap("/trap/endless-chunked", "a chunked body that never ends", "failed", "too large"),
    Trap("/trap/huge-length", "Content-Length: 10 GB, and the bytes to match", "failed",
         "too large"),
    Trap("/trap/loop-a", "302 to loop-b, which 302s back", "failed", "redirect loop"),
    Trap("/trap/loop-self", "302 to itself", "failed", "redirect loop"),
    Trap("/trap/redirects-20", "a chain of 20 redirects to a good page", "failed",
         "too many redirects"),
    Trap("/trap/to-private", "302 to the private address, dotted", "failed", "private address"),
    Trap("/trap/to-private-decimal", "302 to it as one decimal number", "failed",
         "private address"),
    Trap("/trap/to-private-hex", "302 to it in hex dotted form", "failed", "private address"),
    Trap("/trap/to-private-mapped", "302 to it as an IPv4-mapped IPv6 address", "failed",
         "private address"),
    Trap("/trap/length-long", "claims 100,000 bytes, sends 10 and closes", "failed",
         "incomplete body"),
    Trap("/trap/length-long-hold", "claims 100,000 bytes, sends 10 and waits", "failed",
         "timeout"),
    Trap("/trap/reset", "half a body, then a TCP reset", "failed", "connection reset"),
    Trap("/trap/length-short", "Content-Length covers the page; a forged second response "
         "follows on the connection", "fetched", ""),
)
UNROUTABLE = (
    Trap("/trap/to-metadata", "302 to http://169.254.169.254/latest/meta-data/", "failed",
         "private address"),
    Trap("/trap/to-ten", "302 to http://10.0.0.1/", "failed", "private address"),
)
GOOD = ("/good/1.html", "/good/2.html", "/good/3.html")


def page(title: str, links: list[str]) -> bytes:
    items = "".join(f'<li><a href="{escape(h)}">{escape(h)}</a></li>' for h in links)
    return (f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f'<meta name="description" content="{escape(title)}"></head>'
            f"<body><h1>{escape(title)}</h1><ul>{items}</ul></body></html>").encode()


class HostileSite:
    """Routes of the hostile site (127.0.0.1) and of the private stand-in (127.0.0.2)."""

    def __init__(self, base: str, private_base: str, unroutable: bool = False,
                 hold_s: float = 30.0, bomb_mb: int = 64) -> None:
        self.base, self.private_base = base, private_base
        self.hold_s, self.bomb_mb = hold_s, bomb_mb
        self.traps = TRAPS + (UNROUTABLE if unroutable else ())
        self.routes = self._routes()

    @property
    def private_address(self) -> str:
        """``ip:port`` of the private stand-in, as ``Tally.connections`` keys it."""
        return self.private_base.removeprefix("http://")

    @property
    def allow_entry(self) -> str:
        """The SSRF guard's allow-list entry that lets the site, and only the site, through."""
        return self.base.removeprefix("http://")

    def private_spellings(self) -> dict[str, str]:
        """The private stand-in's base URL, spelled four ways."""
        port = self.private_address.split(":")[1]
        number = int(ipaddress.IPv4Address(PRIVATE_HOST))
        hexed = ".".join(f"0x{int(part):x}" for part in PRIVATE_HOST.split("."))
        return {"to-private": self.private_base, "to-private-decimal": f"http://{number}:{port}",
                "to-private-hex": f"http://{hexed}:{port}",
                "to-private-mapped": f"http://[::ffff:{PRIVATE_HOST}]:{port}"}

    def _routes(self) -> dict[str, Reply | Script]:
        hold, mb = self.hold_s, self.bomb_mb
        routes: dict[str, Reply | Script] = {
            "/": Reply(200, page("Hostile index", [t.path for t in self.traps] + list(GOOD))),
            "/trap/hang": e.hang(hold),
            "/trap/drip-body": e.drip(e.head(Content_Type="text/html", Content_Length="100000"),
                                      1.0, hold),
            "/trap/drip-head": e.drip(b"HTTP/1.1 200 OK\r\nX-Drip: ", 1.0, hold),
            "/trap/bomb-gzip": e.bomb("gzip", mb),
            "/trap/bomb-deflate": e.bomb("deflate", mb),
            "/trap/bomb-br": e.bomb("br", mb),
            "/trap/bomb-nested": e.bomb("gzip, gzip", mb),
            "/trap/endless-chunked": e.endless(e.head(Content_Type="text/html",
                                                      Transfer_Encoding="chunked"), True),
            "/trap/huge-length": e.endless(e.head(Content_Type="text/html",
                                                  Content_Length=str(10 * 1024**3)), False),
            "/trap/loop-a": e.redirect("/trap/loop-b"),
            "/trap/loop-b": e.redirect(self.base + "/trap/loop-a"),
            "/trap/loop-self": e.redirect("/trap/loop-self"),
            "/trap/length-long": e.long_then(b"<html>hi</", 100_000, 0),
            "/trap/length-long-hold": e.long_then(b"<html>hi</", 100_000, hold),
            "/trap/reset": e.reset_mid_body(),
            "/trap/length-short": e.short_then(page("Short page", ["/"]), INJECTED),
            "/trap/to-metadata": e.redirect("http://169.254.169.254/latest/meta-data/"),
            "/trap/to-ten": e.redirect("http://10.0.0.1/"),
        }
        for n in range(1, 21):
            routes[f"/trap/redirects-{n}"] = e.redirect(
                f"/trap/redirects-{n - 1}" if n > 1 else GOOD[0])
        for name, base in self.private_spellings().items():
            routes[f"/trap/{name}"] = e.redirect(f"{base}/secret")
        for n, path in enumerate(GOOD, 1):
            routes[path] = Reply(200, page(f"Good page {n}", ["/"]))
        return routes

    def __call__(self, incoming: Incoming) -> Reply | Script:
        return self.routes.get(incoming.path) or Reply(404, page("Not found", ["/"]))

    @staticmethod
    def private(incoming: Incoming) -> Reply:
        """The private stand-in: what a crawler must never get."""
        return Reply(200, b"secret", "text/plain")


def hostile_server(unroutable: bool = False, hold_s: float = 30.0,
                   bomb_mb: int = 64, host: str = "127.0.0.1",
                   port: int = 0) -> tuple[LoopServer, HostileSite]:
    """The hostile site and its private stand-in, bound, on one server (not started yet)."""
    sock, private = bind(host, port), bind(PRIVATE_HOST)
    site = HostileSite(url_of(sock), url_of(private), unroutable, hold_s, bomb_mb)
    return LoopServer([(site, sock), (site.private, private)]), site
