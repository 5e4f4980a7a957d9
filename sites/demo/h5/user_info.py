"""demo.h5.user_info: GET /h5/user/<uid> (HTML) -> one user profile.

Used by ``chains.demo`` for every author met in the feed.
"""

from __future__ import annotations

from parsel import Selector
from pydantic import BaseModel, Field

from base_task import CrawlTask, Parsed
from chains.engine import Envelope, Unit
from exceptions import ParseError
from external_interface.fetch import Request, Response
from external_interface.storage import Item
from sites.demo import base_url
from worker import app


class UserInfoInput(BaseModel):
    user_id: str = Field(pattern=r"^u\d+$", description="Sandbox user id, e.g. u0001.")


class User(Item):
    collection = "users"
    key_fields = ("id",)

    id: str
    name: str
    followers: int
    bio: str


def build_request(params: UserInfoInput) -> Request:
    return Request(f"{base_url()}/h5/user/{params.user_id}")


def parse(params: UserInfoInput, response: Response) -> Parsed:
    profile = Selector(text=response.text).css("div.profile")
    if not profile:
        raise ParseError("no div.profile on the user page", url=response.url)
    user = User(
        id=profile.attrib["data-uid"],
        name=profile.css("h1.name::text").get(""),
        followers=int(profile.css("span.followers::text").get("0")),
        bio=profile.css("p.bio::text").get(""),
    )
    return Parsed(items=[user])


@app.task(base=CrawlTask, bind=True, name="demo.h5.user_info", Input=UserInfoInput)
def user_info(self: CrawlTask, envelope: Envelope, units: list[Unit]) -> dict[str, int]:
    """A batch of user profiles."""
    return self.crawl(envelope, units, build_request, parse)
