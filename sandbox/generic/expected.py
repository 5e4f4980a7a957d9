"""What a crawl of the generic site from ``/`` must store, computed from the generator alone.

    site = build(Shape.small(), server.url)
    expected_records(site, depth=3)                      # every record, sorted by url
    expected_urls(site, depth=3, sitemap=False)          # what a links-only crawler fetches
    pages_by_depth(site, 3)                              # {0: ["/"], 1: [...], ...}

The rules are a polite generic crawler's: start at ``/`` (depth 0); follow ``<a href>``
links resolved against the page's final URL, fragment dropped, http(s) only, same
host and port only, never under robots.txt's ``Disallow``; stop at depth N (a
redirect keeps the depth of the link that led to it). With ``sitemap``, the URLs the
sitemaps list are fetched too (they lead nowhere new, see ``sandbox.generic.site``).

One record per URL fetched: ``url`` as linked, ``final_url`` after redirects,
``status`` of the final answer, ``title``, meta ``description``, ``canonical``, and
``links``: every http(s) link of the page resolved, fragment dropped, unique and
sorted, off-site ones included.
"""

from __future__ import annotations

from collections import deque
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urlsplit

from sandbox.generic.site import DISALLOWED, GenericSite


@dataclass(frozen=True)
class Record:
    url: str
    final_url: str
    status: int
    title: str | None
    description: str | None
    canonical: str | None
    links: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "links": list(self.links)}


def followed_paths(site: GenericSite, links: tuple[str, ...]) -> list[str]:
    """The paths of ``links`` a polite crawler of this site follows: same origin, allowed."""
    origin = urlsplit(site.base)
    found = []
    for link in links:
        parts = urlsplit(link)
        if (parts.scheme, parts.netloc) == (origin.scheme, origin.netloc) \
                and not parts.path.startswith(DISALLOWED):
            found.append(parts.path or "/")
    return found


def depths(site: GenericSite, max_depth: int) -> dict[str, int]:
    """Every path a breadth-first crawl from ``/`` fetches, with its depth."""
    if max_depth < 0:
        raise ValueError(f"max_depth must be 0 or more, not {max_depth}")
    found, queue = {"/": 0}, deque(["/"])
    while queue:
        path = queue.popleft()
        if found[path] == max_depth:
            continue
        final, _ = site.resolve(path)
        for target in followed_paths(site, site.links(final)):
            if target not in found:
                found[target] = found[path] + 1
                queue.append(target)
    return found


def sitemap_paths(site: GenericSite) -> list[str]:
    """The paths the sitemaps list: ``/`` and the orphans."""
    return ["/", *site.kinds("orphan")]


def pages_by_depth(site: GenericSite, max_depth: int) -> dict[int, list[str]]:
    """The paths of a crawl to ``max_depth``, by depth, each list sorted."""
    by_depth: dict[int, list[str]] = {}
    for path, depth in depths(site, max_depth).items():
        by_depth.setdefault(depth, []).append(path)
    return {d: sorted(paths) for d, paths in sorted(by_depth.items())}


def expected_urls(site: GenericSite, depth: int, sitemap: bool = True) -> list[str]:
    """The URLs a crawl to ``depth`` fetches (sitemap entries included with ``sitemap``)."""
    paths = set(depths(site, depth)) | (set(sitemap_paths(site)) if sitemap else set())
    return sorted(site.url(p) for p in paths)


def record(site: GenericSite, path: str) -> Record:
    final, page = site.resolve(path)
    return Record(site.url(path), site.url(final), page.status, page.title or None,
                  page.description, page.canonical, site.links(final))


def expected_records(site: GenericSite, depth: int, sitemap: bool = True) -> list[Record]:
    """The records a crawl to ``depth`` stores, sorted by url."""
    base = len(site.base)
    return [record(site, url[base:]) for url in expected_urls(site, depth, sitemap)]
