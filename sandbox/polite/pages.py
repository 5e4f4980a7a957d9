"""The polite site's HTML, rendered once per page: what a chain's parse steps read.

Selectors a site's steps use:

    index     a.category[href]                          one per category
    listing   a.item[href]; a.next[href] (absent on the last page);
              .listing[data-pages] (the category's page count, on every page)
    detail    h1.title, .price (e.g. "12.34"), .sku, .category, article[data-id]
"""

from __future__ import annotations

from html import escape

from sandbox.polite.catalogue import Catalogue, Category, Item


def document(title: str, body: str) -> bytes:
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f'<title>{escape(title)}</title></head><body>{body}</body></html>').encode()


def index_page(catalogue: Catalogue) -> bytes:
    links = "".join(f'<li><a class="category" href="{c.page_path(1)}">{escape(c.name)}</a>'
                    f' <span class="count">{len(c.items)}</span></li>'
                    for c in catalogue.categories)
    return document("Polite shop", f'<h1>Polite shop</h1><ul class="categories">{links}</ul>')


def listing_page(category: Category, n: int) -> bytes:
    items = "".join(f'<li><a class="item" href="{item.path}">{escape(item.title)}</a></li>'
                    for item in category.page(n))
    more = (f'<a class="next" rel="next" href="{category.page_path(n + 1)}">Next</a>'
            if n < category.pages else "")
    return document(f"{category.name}, page {n}",
                    f'<h1>{escape(category.name)}</h1><div class="listing" data-page="{n}" '
                    f'data-pages="{category.pages}"><ul>{items}</ul>{more}</div>')


def detail_page(item: Item) -> bytes:
    return document(item.title, (
        f'<article data-id="{item.id}"><h1 class="title">{escape(item.title)}</h1>'
        f'<span class="price">{item.price_cents // 100}.{item.price_cents % 100:02d}</span>'
        f'<span class="sku">{item.sku}</span>'
        f'<a class="category" href="/category/{item.category}?page=1">'
        f'{escape(item.category)}</a></article>'))


def render_all(catalogue: Catalogue) -> dict[str, bytes]:
    """Every page of the chain by its URL (path and query), rendered now."""
    pages = {"/": index_page(catalogue)}
    for category in catalogue.categories:
        for n in range(1, category.pages + 1):
            pages[category.page_path(n)] = listing_page(category, n)
    for item in catalogue.items.values():
        pages[item.path] = detail_page(item)
    return pages
