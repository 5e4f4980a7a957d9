"""properties.web.detail: GET /property_NNNNNN.html (HTML) -> one Property.

Used by ``chains.properties``, fed by the index pages' links. The fields and
their XPaths are the Scrapy peer's (``bench/scrapy_peer/``), which are the book's
(*Learning Scrapy* ch. 11): schema.org microdata ``itemprop`` name, price,
description, image, and the ``Place`` address.
"""

from __future__ import annotations

import re
from urllib.parse import urljoin

import lxml.html
from lxml.etree import XPath
from pydantic import BaseModel, Field

from base_task import CrawlTask, Parsed
from chains.engine import Envelope, Unit
from exceptions import ParseError
from external_interface.fetch import Request, Response
from external_interface.storage import Item
from sites.properties import base_url
from worker import app

TITLE = XPath('//*[@itemprop="name"][1]/text()')
PRICE = XPath('//*[@itemprop="price"][1]/text()')
DESCRIPTION = XPath('//*[@itemprop="description"][1]/text()')
ADDRESS = XPath('//*[@itemtype="http://schema.org/Place"][1]/text()')
IMAGE = XPath('//*[@itemprop="image"][1]/@src')
NUMBER = re.compile(r"[,.0-9]+")


class DetailInput(BaseModel):
    property_id: int = Field(ge=0, description="Property number: property_NNNNNN.html.")


class Property(Item):
    collection = "properties"
    key_fields = ("id",)

    id: int
    url: str
    title: str
    price: float | None
    description: str
    address: str
    image: str


def build_request(params: DetailInput) -> Request:
    return Request(f"{base_url()}/property_{params.property_id:06d}.html")


def first(texts: list[str]) -> str:
    return texts[0] if texts else ""


def price_of(text: str) -> float | None:
    """``£1,234pw`` -> 1234.0; None when the page shows no number."""
    match = NUMBER.search(text)
    return float(match.group().replace(",", "")) if match else None


def parse(params: DetailInput, response: Response) -> Parsed:
    tree = lxml.html.fromstring(response.body)
    titles = TITLE(tree)
    if not titles:
        raise ParseError("no itemprop=name on the detail page", url=response.url)
    image = first(IMAGE(tree))
    prop = Property(
        id=params.property_id,
        url=response.url,
        title=titles[0].strip().title(),
        price=price_of(first(PRICE(tree))),
        description=" ".join(s.strip() for s in DESCRIPTION(tree)),
        address=first(ADDRESS(tree)).strip(),
        image=urljoin(response.url, image) if image else "",
    )
    return Parsed(items=[prop])


@app.task(base=CrawlTask, bind=True, name="properties.web.detail", Input=DetailInput)
def detail(self: CrawlTask, envelope: Envelope, units: list[Unit]) -> dict[str, int]:
    """A batch of property pages."""
    return self.crawl(envelope, units, build_request, parse)
