"""The generic site as bytes: HTML pages, robots.txt, the sitemap index and its children.

    /robots.txt               User-agent: *, Disallow: /private/, Crawl-delay (when the
                              shape sets one), Sitemap: <base>/sitemap.xml
    /sitemap.xml              a sitemap index of the two children below
    /sitemaps/main.xml        a urlset of ``/``
    /sitemaps/pages.xml.gz    a gzip urlset of the orphan pages, each with a lastmod

``replies()`` renders every URL once, as the loop server serves it.
"""

from __future__ import annotations

import gzip
from collections.abc import Sequence
from html import escape

from sandbox.generic.site import DISALLOWED, GenericSite, Page
from sandbox.loop_server import Reply

XML = "application/xml"
SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def html_page(page: Page) -> bytes:
    """The page's HTML: head (title, description, canonical), nav bar, text and links."""
    head = [f"<title>{escape(page.title)}</title>"]
    if page.description is not None:
        head.append(f'<meta name="description" content="{escape(page.description)}">')
    if page.canonical is not None:
        head.append(f'<link rel="canonical" href="{escape(page.canonical)}">')
    nav = "".join(f'<li><a href="{escape(h)}">{n}</a></li>'
                  for n, h in enumerate(page.hrefs[: page.nav]))
    body = "".join(f"<p>{escape(t)}</p>" for t in page.text)
    links = "".join(f'<li><a href="{escape(h)}">Entry {n}</a></li>'
                    for n, h in enumerate(page.hrefs[page.nav:]))
    return ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">' + "".join(head)
            + f'</head><body><nav><ul>{nav}</ul></nav><main id="top"><h1>{escape(page.title)}'
            + f'</h1>{body}<ul class="links">{links}</ul></main></body></html>').encode()


def robots_txt(site: GenericSite) -> bytes:
    lines = ["User-agent: *", f"Disallow: {DISALLOWED}"]
    if site.shape.crawl_delay is not None:
        lines.append(f"Crawl-delay: {site.shape.crawl_delay:g}")
    lines += ["", f"Sitemap: {site.url('/sitemap.xml')}", ""]
    return "\n".join(lines).encode()


def lastmod(n: int) -> str:
    return f"2024-{n % 12 + 1:02d}-{n % 28 + 1:02d}"


def urlset(entries: Sequence[tuple[str, str | None]]) -> bytes:
    urls = "".join(f"<url><loc>{escape(loc)}</loc>"
                   + (f"<lastmod>{mod}</lastmod>" if mod else "") + "</url>"
                   for loc, mod in entries)
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{SITEMAP_NS}">{urls}'
            "</urlset>\n").encode()


def sitemaps(site: GenericSite) -> dict[str, bytes]:
    """The sitemap index and its children by path (the ``.gz`` child gzipped, mtime 0)."""
    children = ["/sitemaps/main.xml", "/sitemaps/pages.xml.gz"]
    index = "".join(f"<sitemap><loc>{site.url(c)}</loc><lastmod>{lastmod(n)}</lastmod>"
                    "</sitemap>" for n, c in enumerate(children))
    orphans = [(site.url(p), lastmod(n)) for n, p in enumerate(site.kinds("orphan"))]
    return {
        "/sitemap.xml": (f'<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex '
                         f'xmlns="{SITEMAP_NS}">{index}</sitemapindex>\n').encode(),
        children[0]: urlset([(site.url("/"), None)]),
        children[1]: gzip.compress(urlset(orphans), mtime=0),
    }


def replies(site: GenericSite) -> dict[str, Reply]:
    """Every path the site answers, rendered once."""
    found = {"/robots.txt": Reply(200, robots_txt(site), "text/plain; charset=utf-8")}
    for path, body in sitemaps(site).items():
        found[path] = Reply(200, body, "application/gzip" if path.endswith(".gz") else XML)
    for page in site.pages.values():
        if page.location is not None:
            found[page.path] = Reply(page.status, b"", headers=(("Location", page.location),))
        else:
            found[page.path] = Reply(page.status, html_page(page))
    return found


def not_found(site: GenericSite) -> Reply:
    return Reply(404, html_page(site.not_found))
