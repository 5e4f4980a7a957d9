"""The properties site's pages: index pages (a frontier, no items) and property details."""

from __future__ import annotations

import re

import lxml.html
from lxml.etree import XPath
from pydantic import Field

from chains.api import Input, Item, Parsed, ParseError, Response, Site, SiteSettings, step


class PropertiesSettings(SiteSettings):
    base_url: str = Field("http://127.0.0.1:28080", description="Base URL (a path is allowed).")


SITE = Site("properties", settings=PropertiesSettings)

DETAIL_LINKS = XPath('//*[@itemprop="url"]/@href')
NEXT_LINK = XPath('//*[contains(@class, "next")]//a/@href')
DETAIL_HREF = re.compile(r"property_(\d+)\.html$")
INDEX_HREF = re.compile(r"index_(\d+)\.html$")
TITLE = XPath('//*[@itemprop="name"][1]/text()')
PRICE = XPath('//*[@itemprop="price"][1]/text()')
DESCRIPTION = XPath('//*[@itemprop="description"][1]/text()')
ADDRESS = XPath('//*[@itemtype="http://schema.org/Place"][1]/text()')
IMAGE = XPath('//*[@itemprop="image"][1]/@src')
NUMBER = re.compile(r"[,.0-9]+")


class IndexPage(Input):
    page: int = Field(0, ge=0, description="0-based index page: index_NNNNN.html.")
    stop: int | None = Field(None, ge=1, description="A shard's end: follow ``next`` only to "
                             "pages below this one. None follows it to the last page.")


@step(url="{base_url}/index_{page:05d}.html", follows="details")
def index(params: IndexPage, response: Response) -> Parsed[Item]:
    """Detail links as ``details`` records ``{"property_id"}``; ``next`` as the next page."""
    tree = lxml.html.fromstring(response.body)
    ids = [int(m.group(1)) for href in DETAIL_LINKS(tree) if (m := DETAIL_HREF.search(href))]
    nexts = [int(m.group(1)) for href in NEXT_LINK(tree) if (m := INDEX_HREF.search(href))]
    if not ids and not nexts:
        raise ParseError("index page without detail links or a next link", url=response.url)
    follow = nexts and (params.stop is None or nexts[0] < params.stop)
    return Parsed(follow=[{"property_id": i} for i in ids],
                  next_page=IndexPage(page=nexts[0], stop=params.stop) if follow else None)


class PropertyRef(Input):
    property_id: int = Field(ge=0, description="Property number: property_NNNNNN.html.")


class Property(Item, collection="properties", key="id"):
    id: int
    url: str
    title: str
    price: float | None
    description: str
    address: str
    image: str


def price_of(text: str) -> float | None:
    """``£1,234pw`` -> 1234.0; None when the page shows no number."""
    match = NUMBER.search(text)
    return float(match.group().replace(",", "")) if match else None


@step(url="{base_url}/property_{property_id:06d}.html")
def detail(params: PropertyRef, response: Response) -> Parsed[Property]:
    tree = lxml.html.fromstring(response.body)
    titles = TITLE(tree)
    if not titles:
        raise ParseError("no itemprop=name on the detail page", url=response.url)
    image = next(iter(IMAGE(tree)), "")
    return Parsed([Property(
        id=params.property_id, url=response.url, title=titles[0].strip().title(),
        price=price_of(next(iter(PRICE(tree)), "")),
        description=" ".join(s.strip() for s in DESCRIPTION(tree)),
        address=next(iter(ADDRESS(tree)), "").strip(),
        image=response.urljoin(image) or "" if image else "")])
