"""The JavaScript shop as a handler for the loop server (``sandbox.loop_server``).

    /                  a shell whose section links are inserted by script
    /app               rows fetched by script from /api/app
    /scroll            rows fetched by script from /api/scroll?offset=N as the page scrolls;
                       ``#end`` appears once the last row is in
    /reveal            rows fetched from /api/reveal once ``#show`` is clicked
    /product/ID        the product, complete in its HTML (with an image, a font, a video)
    /fault/hang        a page that never finishes loading (its script never arrives)
    /fault/hog         a page whose script allocates memory without end
                       (either is also a product's page the first time, for ``troubles``)
    /__expected        every product record (JSON)
    /__blocked         requests of images, fonts and media so far (JSON)

Images (``/img/``), fonts (``/font/``) and media (``/media/``) are tiny, and counted, so
a test can say a crawler that blocks them never asked for one. Pages are rendered once,
at construction; the handler runs on the server's one loop thread.
"""

from __future__ import annotations

import asyncio
import html
import json

from sandbox.js.catalogue import SCROLL_BATCH, SECTIONS, Catalogue, Product
from sandbox.loop_server import Conn, Incoming, Reply, Script, Tally

JSON = "application/json"
BLOCKED_PREFIXES = {"image": "/img/", "font": "/font/", "media": "/media/"}
NOT_FOUND = Reply(404, b"<h1>not found</h1>")
_ROW_JS = """
function row(p) {
  const li = document.createElement('li');
  li.className = 'row'; li.dataset.id = p.id; li.style.height = '90px';
  li.innerHTML = '<img src="/img/thumb-' + p.id + '.png"><a class="product" href="/product/'
    + p.id + '">' + p.name + '</a> <span class="price">' + p.price + '</span>';
  document.getElementById('rows').appendChild(li);
}
"""
_PAGES = {  # path: (HTML before the script, the script)
    "/": ("", f"for (const s of {json.dumps(SECTIONS)}) {{" + """
  const a = document.createElement('a'); a.className = 'section'; a.href = '/' + s;
  a.textContent = s; document.getElementById('nav').appendChild(a);
}"""),
    "/app": ("", _ROW_JS + """
fetch('/api/app').then(r => r.json()).then(d => d.rows.forEach(row));"""),
    "/scroll": ("", _ROW_JS + """
let offset = 0, busy = false, done = false;
async function more() {
  if (busy || done) return; busy = true;
  const d = await (await fetch('/api/scroll?offset=' + offset)).json();
  d.rows.forEach(row); offset += d.rows.length;
  if (!d.more) {
    done = true; document.body.insertAdjacentHTML('beforeend', '<div id="end"></div>');
  }
  busy = false;
}
window.addEventListener('scroll', () => {
  if (window.innerHeight + window.scrollY >= document.body.scrollHeight - 100) more();
});
more();"""),
    "/reveal": ('<button id="show">Show the list</button>', _ROW_JS + """
document.getElementById('show').addEventListener('click', () =>
  fetch('/api/reveal').then(r => r.json()).then(d => d.rows.forEach(row)));"""),
}
_HOG_JS = """<script>
const kept = []; setInterval(() => { for (let i = 0; i < 20; i++)
  kept.push(new Array(1 << 18).fill(kept.length)); }, 5);
</script>"""
_HANG_JS = '<script src="/fault/never.js"></script>'
_TROUBLE = {"hog": _HOG_JS, "hang": _HANG_JS}


def _shell(path: str, before: str, script: str) -> bytes:
    return (f"<!doctype html><html><head><title>shop {path}</title></head><body>"
            f"<nav id=\"nav\"></nav>{before}<ul id=\"rows\"></ul><script>{script}</script>"
            "</body></html>").encode()


def _product_page(p: Product, trouble: str = "") -> bytes:
    """The product's page; with a ``trouble``'s script at its end."""
    name = html.escape(p.name)
    return (f"<!doctype html><html><head><title>{name}</title><style>@font-face "
            "{font-family: shop; src: url(/font/shop.woff2);} body {font-family: shop;}"
            f"</style></head><body><article class=\"product\" data-id=\"{p.id}\">"
            f"<h1 class=\"name\">{name}</h1><span class=\"price\">{p.price}</span>"
            f"<span class=\"section\">{p.section}</span>"
            f"<img src=\"/img/{p.id}.png\" alt=\"\"><video src=\"/media/{p.id}.mp4\" "
            f"autoplay muted></video></article>{_TROUBLE.get(trouble, '')}</body></html>"
            ).encode()


def _rows(products: list[Product], more: bool | None = None) -> Reply:
    answer: dict[str, object] = {"rows": [{"id": p.id, "name": p.name, "price": p.price}
                                          for p in products]}
    if more is not None:
        answer["more"] = more
    return Reply(200, json.dumps(answer).encode(), JSON)


class JsShop:
    """Request in, reply out; ``tally`` is the server's (set once it is built).

    ``troubles``: products whose page, the first time it is asked for, carries a script
    that never arrives, so the page never finishes loading (``hang``), or one that
    allocates memory without end (``hog``); asked again, the page is plain: a crawler
    that ends the page and retries it, or reads it before its tab dies, loses nothing."""

    def __init__(self, catalogue: Catalogue, troubles: dict[int, str] | None = None) -> None:
        self.catalogue = catalogue
        self.tally: Tally | None = None
        self.troubles = dict(troubles or {})
        pages = {path: Reply(200, _shell(path, before, script))
                 for path, (before, script) in _PAGES.items()}
        pages.update({f"/product/{p.id}": Reply(200, _product_page(p))
                      for p in catalogue.products})
        pages["/api/app"] = _rows(catalogue.section("app"))
        pages["/api/reveal"] = _rows(catalogue.section("reveal"))
        scroll = catalogue.section("scroll")
        for offset in range(0, max(len(scroll), 1), SCROLL_BATCH):
            pages[f"/api/scroll?offset={offset}"] = _rows(
                scroll[offset:offset + SCROLL_BATCH], offset + SCROLL_BATCH < len(scroll))
        pages["/__expected"] = Reply(200, json.dumps(catalogue.expected()).encode(), JSON)
        pages["/fault/hog"] = Reply(200, f"<html><body><p>hog</p>{_HOG_JS}</body></html>"
                                    .encode())
        pages["/fault/hang"] = Reply(200, f"<html><body><p>hang</p>{_HANG_JS}</body></html>"
                                     .encode())
        self.pages = pages

    def __call__(self, incoming: Incoming) -> Reply | Script:
        if self.troubles and incoming.path.startswith("/product/"):
            product = self.catalogue.by_id.get(_id(incoming.path))
            trouble = self.troubles.pop(product.id, None) if product else None
            if product is not None and trouble is not None:
                return Reply(200, _product_page(product, trouble))
        page = self.pages.get(incoming.target)
        if page is not None:
            return page
        path = incoming.path
        if path == "/fault/never.js":
            return _never
        if path == "/__blocked":
            return Reply(200, json.dumps(self.blocked()).encode(), JSON)
        for kind, prefix in BLOCKED_PREFIXES.items():
            if path.startswith(prefix):
                return Reply(200, b"\0", {"image": "image/png", "font": "font/woff2",
                                          "media": "video/mp4"}[kind])
        return NOT_FOUND

    def blocked(self) -> dict[str, int]:
        """Requests of each blocked resource type so far (the server's own count)."""
        if self.tally is None:
            return {kind: 0 for kind in BLOCKED_PREFIXES}
        return {kind: self.tally.requests(prefix) for kind, prefix in BLOCKED_PREFIXES.items()}


def _id(path: str) -> int:
    tail = path.rsplit("/", 1)[1]
    return int(tail) if tail.isdigit() else -1


async def _never(conn: Conn) -> None:
    """A resource that never arrives: the page never finishes loading."""
    while await conn.wait(3600):
        await asyncio.sleep(0)
