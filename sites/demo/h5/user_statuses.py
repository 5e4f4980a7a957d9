"""demo.h5.user_statuses: GET /h5/user/<uid>/statuses?cursor=C (JSON) -> statuses.

Cursor-paged; used by ``chains.demo``: every status fans out to its article's detail.
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


class UserStatusesInput(BaseModel):
    user_id: str = Field(pattern=r"^u\d+$")
    cursor: str | None = Field(None, description="Opaque cursor from the previous page.")


class Status(Item):
    collection = "statuses"
    key_fields = ("id",)

    id: str
    user_id: str
    article_id: str
    kind: str


def build_request(params: UserStatusesInput) -> Request:
    query = {"cursor": params.cursor} if params.cursor else {}
    return Request(f"{base_url()}/h5/user/{params.user_id}/statuses", params=query)


def parse(params: UserStatusesInput, response: Response) -> Parsed:
    data = response.json()
    if "statuses" not in data:
        raise ParseError("status list without 'statuses'", url=response.url)
    statuses = [Status(user_id=params.user_id, **s) for s in data["statuses"]]
    cursor = data.get("next_cursor")
    next_page = UserStatusesInput(user_id=params.user_id, cursor=cursor) if cursor else None
    return Parsed(items=list(statuses), next_page=next_page)


@app.task(base=CrawlTask, bind=True, name="demo.h5.user_statuses", Input=UserStatusesInput)
def user_statuses(self: CrawlTask, envelope: Envelope, units: list[Unit]) -> dict[str, int]:
    """A batch of status pages."""
    return self.crawl(envelope, units, build_request, parse)
