"""The generic site's pages and the links between them: a function of a ``Shape`` and a base URL.

The page set by depth from ``/``, for the default (benchmark) shape; ``Shape.small()``
has the same kinds, fewer of each (see its docstring):

    depth 0   /                                    1
    depth 1   /docs/<section>/                     12 sections
              /reference/genindex.html             index pages, ``index_links`` (20,000)
              /reference/modindex.html             links each, to every depth-2 page
              /about.html                          1
              /moved/<k>.html                      3, each 301 to /docs/renamed/<k>.html
              /docs/missing-<k>.html               2, each 404
    depth 2   /docs/<section>/<page>.html          12 x 22 = 264
              /reference/all/part-<k>.html         2 index pages, 20,000 links each, to every
                                                   depth-3 page
    depth 3   /docs/<section>/<page>/notes.html    one per depth-2 page: 264
    depth 4   /deep/<k>.html                       12, linked from the first depth-3 pages
    sitemap   /orphans/<k>.html                    10, listed only in the gzip sitemap
    never     /private/<k>.html                    3, under ``Disallow: /private/``

So a crawl to depth 3 stores 551 records (549 pages, 3 of them reached through a
redirect, and 2 not-found pages), 561 with the sitemap's orphans, from about 91,000
links. Every page has a title; most have a meta description and a canonical link
(a few doc pages name their section as canonical; orphans and the not-found page
have none, and every seventh doc page has no description).

The graph is layered so that the page set does not depend on crawl order (a
depth-first crawler that meets a page first on a longer path would otherwise
drop what lies behind it): a page at depth k >= 2 is linked only from pages at
depth k - 1; any page may link to depth 0 and 1 pages, which are all known once
``/`` is parsed; orphans and redirect targets link only to those. The sitemap
lists ``/`` and the orphans only, so whatever depth a crawler gives sitemap
entries, they lead nowhere new.

Links come in many forms, as on a real site: absolute, root-relative,
path-relative (``../docs/a/p01.html``), with a ``./`` segment, protocol-relative
(``//127.0.0.1:PORT/...``), with fragments, and duplicated many times over on the
index pages, where most carry an anchor of their own (``p01.html#entry-123``),
as a generated index's entries do: some 13,000 distinct strings on each index
page name fewer than 300 pages. Some point off-site (``*.other.example``: never fetched, they do not
resolve here), some at ``/private/``, and a few are ``mailto:``, ``javascript:``
and ``tel:``. No link has a query string, uppercase scheme or host, default port
or a dot segment outside a relative reference: those are the URL canon's business,
tested on their own, not a crawl's.
"""

from __future__ import annotations

import posixpath
import random
import re
from dataclasses import dataclass, field
from urllib.parse import urldefrag, urljoin, urlsplit

SECTION_NAMES = ("Install & Setup", "Tutorial", "How-to Guides", "Library", "Extending", "C API",
                 "Distributing", "FAQ", "Glossary", "What's New", "Using", "Deprecations",
                 "Internals", "Security", "Testing", "Packaging")
TOPICS = ("overview", "config", "logging", "errors", "models", "storage", "routing", "cache",
          "sessions", "signals", "forms", "queries", "admin", "auth", "files", "i18n", "mail",
          "tasks", "templates", "views", "urls", "widgets", "metrics", "tracing", "plugins")
WORDS = ("the", "crawler", "returns", "a", "value", "when", "each", "page", "is", "parsed",
         "configure", "option", "default", "setting", "request", "response", "cache", "link",
         "depth", "host", "rate", "retry", "error", "handler", "item", "field", "schema", "queue",
         "worker", "server", "client", "token", "header", "body", "status", "redirect", "index")
OFF_SITE = ("http://other.example", "https://other.example", "http://www.other.example",
            "https://cdn.other.example", "http://other.example:8080")
FORMS = ("absolute", "root", "relative", "dotted", "netpath", "fragment", "absolute-fragment")
SPECIAL = ("mailto:docs@other.example", "javascript:void(0)", "tel:+15550100")
DISALLOWED = "/private/"


@dataclass(frozen=True)
class Shape:
    """How big the site is; the defaults are the benchmark's (551 records to depth 3)."""

    sections: int = 12
    pages_per_section: int = 22
    index_links: int = 20_000  # links on each of the four index pages
    deep: int = 12  # depth-4 pages, one linked from each of the first depth-3 pages
    orphans: int = 10  # pages only the sitemap lists
    moved: int = 3  # redirects from depth 1
    broken: int = 2  # links to pages that answer 404
    private: int = 3  # pages under robots.txt's Disallow
    crawl_delay: float | None = None  # robots.txt's Crawl-delay line, when set
    seed: int = 1  # the words of titles, descriptions and text

    def __post_init__(self) -> None:
        if self.sections < 1 or self.pages_per_section < 1 or self.index_links < 1:
            raise ValueError("sections, pages_per_section and index_links must be at least 1")
        if self.deep > self.sections * self.pages_per_section:
            raise ValueError(f"deep ({self.deep}) cannot exceed the depth-3 pages "
                             f"({self.sections * self.pages_per_section})")

    @classmethod
    def small(cls) -> Shape:
        """For tests: 3 sections of 4 pages, index pages of 1,200 links, Crawl-delay 0.05 s.

        Depth 0: 1; depth 1: 3 sections + 2 indexes + about + 2 moved + 1 broken = 9;
        depth 2: 12 pages + 2 indexes = 14; depth 3: 12; depth 4: 3; orphans 3, private 2.
        A crawl to depth 3 stores 36 records, 39 with the orphans.
        """
        return cls(sections=3, pages_per_section=4, index_links=1_200, deep=3, orphans=3,
                   moved=2, broken=1, private=2, crawl_delay=0.05)


@dataclass(frozen=True)
class Page:
    """One URL of the site: what it answers, and for HTML what a crawler extracts from it."""

    path: str
    kind: str
    title: str = ""
    description: str | None = None
    canonical: str | None = None  # absolute URL
    hrefs: tuple[str, ...] = ()  # as written in the page, in order
    nav: int = 0  # how many of ``hrefs`` are the navigation bar
    text: tuple[str, ...] = ()  # paragraphs
    status: int = 200
    location: str | None = None  # a redirect's target (absolute URL)


def resolve_links(page_url: str, hrefs: tuple[str, ...]) -> tuple[str, ...]:
    """A page's outgoing http(s) links: resolved, fragment dropped, unique, sorted."""
    found = {urldefrag(urljoin(page_url, href.strip())).url for href in set(hrefs)}
    return tuple(sorted(u for u in found if urlsplit(u).scheme in ("http", "https")))


@dataclass
class GenericSite:
    """Every page by path, for one base URL (``http://127.0.0.1:PORT``)."""

    shape: Shape
    base: str
    pages: dict[str, Page] = field(default_factory=dict)
    _links: dict[str, tuple[str, ...]] = field(default_factory=dict, repr=False)

    def links(self, path: str) -> tuple[str, ...]:
        """The outgoing links of the page at ``path`` (``resolve_links``), computed once."""
        if path not in self._links:
            self._links[path] = resolve_links(self.url(path), self.page(path).hrefs)
        return self._links[path]

    @property
    def not_found(self) -> Page:
        """What any path the site does not have answers."""
        return Page("", "not-found", "Page not found", hrefs=("/",), status=404,
                    text=("There is no page here.",))

    def url(self, path: str) -> str:
        return self.base + path

    def page(self, path: str) -> Page:
        return self.pages.get(path) or self.not_found

    def resolve(self, path: str) -> tuple[str, Page]:
        """The final path and page for ``path``, redirects followed (at most 5)."""
        page = self.page(path)
        for _ in range(5):
            if page.location is None:
                break
            path = urlsplit(page.location).path
            page = self.page(path)
        return path, page

    def kinds(self, kind: str) -> list[str]:
        return [p.path for p in self.pages.values() if p.kind == kind]


class Writer:
    """Seeded words, and links from one page in the forms a real site mixes."""

    def __init__(self, site: GenericSite) -> None:
        self.site = site
        self.random = random.Random(site.shape.seed)
        self.netloc = urlsplit(site.base).netloc

    def words(self, low: int, high: int) -> str:
        r = self.random
        return " ".join(r.choice(WORDS) for _ in range(r.randint(low, high)))

    def sentence(self) -> str:
        return self.words(8, 16).capitalize() + "."

    def paragraphs(self, n: int) -> tuple[str, ...]:
        return tuple(" ".join(self.sentence() for _ in range(5)) for _ in range(n))

    def href(self, source: str, target: str, form: str, anchor: str = "top") -> str:
        """How page ``source`` writes a link to path ``target``."""
        if form == "absolute":
            return self.site.base + target
        if form == "root":
            return target
        if form == "netpath":
            return f"//{self.netloc}{target}"
        if form == "fragment":
            return f"{target}#{anchor}"
        if form == "absolute-fragment":
            return f"{self.site.base}{target}#{anchor}"
        rel = relative(source, target)
        if form == "dotted":
            head, _, tail = rel.rpartition("/")
            return f"{head}/./{tail}" if head else f"./{tail}"
        return rel


def relative(source: str, target: str) -> str:
    """A path-relative reference from page ``source`` to path ``target``."""
    rel = posixpath.relpath(target, posixpath.dirname(source))
    return rel.rstrip("/") + "/" if target.endswith("/") else rel


def section_slug(i: int) -> str:
    return re.sub(r"[^a-z0-9]+", "-", section_name(i).lower()).strip("-")


def section_name(i: int) -> str:
    return SECTION_NAMES[i] if i < len(SECTION_NAMES) else f"Section {i + 1}"


def doc_path(s: int, p: int) -> str:
    return f"/docs/{section_slug(s)}/{TOPICS[p % len(TOPICS)]}-{p + 1:02d}.html"


def notes_path(s: int, p: int) -> str:
    return doc_path(s, p).removesuffix(".html") + "/notes.html"


def build(shape: Shape, base: str) -> GenericSite:
    """Every page of the site served at ``base`` (scheme, host and port, no trailing slash)."""
    site = GenericSite(shape, base.rstrip("/"))
    w = Writer(site)
    nav_targets = ["/", *(f"/docs/{section_slug(s)}/" for s in range(shape.sections)),
                   "/reference/genindex.html", "/reference/modindex.html", "/about.html"]

    def nav(source: str) -> list[str]:
        forms = ("root", "absolute", "relative", "root")
        return [w.href(source, t, forms[i % len(forms)]) for i, t in enumerate(nav_targets)]

    def add(page: Page) -> None:
        site.pages[page.path] = page

    def html(path: str, kind: str, title: str, links: list[str], text: tuple[str, ...],
             description: str | None = "", canonical: str | None = "") -> None:
        bar = nav(path)
        add(Page(path, kind, title,
                 w.sentence() if description == "" else description,
                 site.url(path) if canonical == "" else canonical,
                 tuple(bar + links), len(bar), text))

    docs = [(s, p) for s in range(shape.sections) for p in range(shape.pages_per_section)]
    moved = [f"/moved/{k + 1}.html" for k in range(shape.moved)]
    broken = [f"/docs/missing-{k + 1}.html" for k in range(shape.broken)]
    private = [f"{DISALLOWED}{k + 1}.html" for k in range(shape.private)]
    parts = ["/reference/all/part-1.html", "/reference/all/part-2.html"]

    html("/", "home", "Sandbox Docs", [
        *(w.href("/", m, "root") for m in moved), *(w.href("/", b, "relative") for b in broken),
        *(w.href("/", p, "absolute") for p in private), *SPECIAL,
        *(f"{host}/" for host in OFF_SITE)], w.paragraphs(1))
    for s in range(shape.sections):
        path = f"/docs/{section_slug(s)}/"
        pages = [w.href(path, doc_path(s, p), "relative")
                 for p in range(shape.pages_per_section)]
        html(path, "section", f"{section_name(s)} - Sandbox Docs",
             [*pages, "#contents", f"{OFF_SITE[s % len(OFF_SITE)]}/docs/{section_slug(s)}/"],
             w.paragraphs(1))
    html("/about.html", "about", "About these docs",
         ["https://other.example/about", "mailto:docs@other.example"], w.paragraphs(2))
    for k, path in enumerate(moved):
        target = f"/docs/renamed/{k + 1}.html"
        add(Page(path, "moved", status=301, location=site.url(target)))
        html(target, "renamed", f"Renamed page {k + 1}", [], w.paragraphs(1))
    for name in ("genindex", "modindex"):
        path = f"/reference/{name}.html"
        html(path, "index", f"{'General' if name == 'genindex' else 'Module'} Index",
             index_links(w, path, [doc_path(s, p) for s, p in docs] + parts, nav_targets,
                         private, shape.index_links), ())
    for k, path in enumerate(parts):
        html(path, "index", f"All notes, part {k + 1}",
             index_links(w, path, [notes_path(s, p) for s, p in docs], nav_targets, private,
                         shape.index_links), ())
    for n, (s, p) in enumerate(docs):
        path = doc_path(s, p)
        siblings = [notes_path(s, (p + d) % shape.pages_per_section) for d in range(3)]
        section = f"/docs/{section_slug(s)}/"
        html(path, "doc", f"{TOPICS[p % len(TOPICS)].title()} ({section_name(s)})",
             ["./", *(w.href(path, t, "relative") for t in dict.fromkeys(siblings)), "#usage",
              f"https://other.example{path}"], w.paragraphs(8),
             description=None if n % 7 == 6 else "",
             canonical=site.url(section) if p % 5 == 4 else "")
    for n, (s, p) in enumerate(docs):
        path = notes_path(s, p)
        deeper = [w.href(path, f"/deep/{n + 1}.html", "root")] if n < shape.deep else []
        html(path, "notes", f"Notes on {TOPICS[p % len(TOPICS)]} ({section_name(s)})",
             [*deeper, f"http://www.other.example/notes/{n + 1}"], w.paragraphs(4))
    for n in range(shape.deep):
        html(f"/deep/{n + 1}.html", "deep", f"Deep page {n + 1}", [], w.paragraphs(1))
    for n in range(shape.orphans):
        path = f"/orphans/{n + 1}.html"
        add(Page(path, "orphan", f"Orphan page {n + 1}", w.sentence(), None,
                 ("/", f"https://other.example/orphans/{n + 1}"), 0, w.paragraphs(1)))
    for path in private:
        html(path, "private", "Private", [], w.paragraphs(1))
    return site


def index_links(w: Writer, source: str, targets: list[str], nav_targets: list[str],
                private: list[str], count: int) -> list[str]:
    """``count`` links: every target many times in every form, most with an anchor of their
    own (as a generated index links ``page.html#term``), with off-site, nav and private
    links mixed in, and a self-link."""
    links = ["#top", *SPECIAL]
    for i in range(count - len(links)):
        if i % 40 == 39:
            links.append(f"{OFF_SITE[i % len(OFF_SITE)]}/entry/{i}")
        elif i % 101 == 100:
            links.append(w.href(source, nav_targets[i % len(nav_targets)], "root"))
        elif private and i % 499 == 498:
            links.append(w.href(source, private[i % len(private)], "root"))
        else:
            target = targets[i % len(targets)]
            form = FORMS[(i // len(targets) + i) % len(FORMS)]
            href = w.href(source, target, form, anchor=f"entry-{i}")
            links.append(href if "#" in href or i % 2 == 0 else f"{href}#entry-{i}")
    return links
