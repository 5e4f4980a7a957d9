"""demo.h5.feed: GET /h5/feed?page=N (JSON) -> feed entries, and the next page.

Used by ``chains.demo``: every entry fans out to the author's info and statuses.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from base_task import CrawlTask, Parsed
from chains.engine import Envelope, Unit
from exceptions import ParseError
from external_interface.fetch import Request, Response
from external_interface.storage import Item
from sites.demo import base_url
from worker import app


class FeedInput(BaseModel):
    page: int = Field(1, ge=1, description="1-based feed page.")


class FeedEntry(Item):
    collection = "feed_entries"
    key_fields = ("id",)

    id: str
    title: str
    author_id: str
    author_name: str


def build_request(params: FeedInput) -> Request:
    return Request(f"{base_url()}/h5/feed", params={"page": str(params.page)})


def parse(params: FeedInput, response: Response) -> Parsed:
    data = response.json()
    if "articles" not in data:
        raise ParseError("feed page without 'articles'", url=response.url)
    entries = [FeedEntry.model_validate(a) for a in data["articles"]]
    next_page = FeedInput(page=params.page + 1) if data.get("has_more") else None
    return Parsed(items=list(entries), next_page=next_page)


@app.task(base=CrawlTask, bind=True, name="demo.h5.feed", Input=FeedInput)
def feed(self: CrawlTask, envelope: Envelope, units: list[Unit]) -> dict[str, int]:
    """A batch of feed pages."""
    return self.crawl(envelope, units, build_request, parse)
