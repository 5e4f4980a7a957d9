"""properties.web.index: GET /index_NNNNN.html (HTML) -> 30 detail links and the next page.

Used by ``chains.properties``: every link fans out to ``properties.web.detail``
(chain ``properties``); the ``next`` link continues the same step (both chains), up
to ``stop`` when the unit is one shard of a sharded crawl.
Index pages yield no items, as in the Scrapy peer: they are only a frontier.
"""

from __future__ import annotations

import re

import lxml.html
from lxml.etree import XPath
from pydantic import BaseModel, Field

from base_task import CrawlTask, Parsed
from chains.engine import Envelope, Unit
from exceptions import ParseError
from external_interface.fetch import Request, Response
from sites.properties import base_url
from worker import app

DETAIL_LINKS = XPath('//*[@itemprop="url"]/@href')
NEXT_LINK = XPath('//*[contains(@class, "next")]//a/@href')
DETAIL_HREF = re.compile(r"property_(\d+)\.html$")
INDEX_HREF = re.compile(r"index_(\d+)\.html$")


class IndexInput(BaseModel):
    page: int = Field(0, ge=0, description="0-based index page: index_NNNNN.html.")
    stop: int | None = Field(None, ge=1, description="A shard's end: follow ``next`` only to "
                             "pages below this one. None follows it to the last page.")


def build_request(params: IndexInput) -> Request:
    return Request(f"{base_url()}/index_{params.page:05d}.html")


def parse(params: IndexInput, response: Response) -> Parsed:
    """Detail links as ``details`` records ``{"property_id"}``; ``next`` as the next page."""
    tree = lxml.html.fromstring(response.body)
    ids = [int(m.group(1)) for href in DETAIL_LINKS(tree) if (m := DETAIL_HREF.search(href))]
    nexts = [int(m.group(1)) for href in NEXT_LINK(tree) if (m := INDEX_HREF.search(href))]
    if not ids and not nexts:
        raise ParseError("index page without detail links or a next link", url=response.url)
    follow = nexts and (params.stop is None or nexts[0] < params.stop)
    return Parsed(follow={"details": [{"property_id": i} for i in ids]},
                  next_page=IndexInput(page=nexts[0], stop=params.stop) if follow else None)


@app.task(base=CrawlTask, bind=True, name="properties.web.index", Input=IndexInput)
def index(self: CrawlTask, envelope: Envelope, units: list[Unit]) -> dict[str, int]:
    """A batch of index pages."""
    return self.crawl(envelope, units, build_request, parse)
