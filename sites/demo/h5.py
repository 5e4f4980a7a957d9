"""The demo's mobile web (h5): the feed, profiles, statuses (the login is in ``pools``).

    demo.h5.feed            GET /h5/feed?page=N (JSON) -> feed entries, the next page
    demo.h5.user_info       GET /h5/user/<uid> (HTML, logged in) -> one user
    demo.h5.user_statuses   GET /h5/user/<uid>/statuses?cursor=C (JSON) -> statuses
"""

from __future__ import annotations

from pydantic import Field

from chains.api import Input, Item, Parsed, ParseError, Response, step


class FeedPage(Input):
    page: int = Field(1, ge=1, description="1-based feed page.")


class FeedEntry(Item, collection="feed_entries", key="id"):
    id: str
    title: str
    author_id: str
    author_name: str


@step(url="{base_url}/h5/feed", query="page")
def feed(params: FeedPage, response: Response) -> Parsed[FeedEntry]:
    data = response.json()
    if "articles" not in data:
        raise ParseError("feed page without 'articles'", url=response.url)
    next_page = FeedPage(page=params.page + 1) if data.get("has_more") else None
    return Parsed([FeedEntry.model_validate(a) for a in data["articles"]], next_page=next_page)


class UserRef(Input):
    user_id: str = Field(pattern=r"^u\d+$", description="Sandbox user id, e.g. u0001.")


class User(Item, collection="users", key="id"):
    id: str
    name: str
    followers: int
    bio: str


@step(url="{base_url}/h5/user/{user_id}")
def user_info(params: UserRef, response: Response) -> Parsed[User]:
    profile = response.css("div.profile")
    if not profile:
        raise ParseError("no div.profile on the user page", url=response.url)
    return Parsed([User(id=profile.attrib["data-uid"], name=profile.css("h1.name::text").get(""),
                        followers=int(profile.css("span.followers::text").get("0")),
                        bio=profile.css("p.bio::text").get(""))])


class StatusPage(Input):
    user_id: str = Field(pattern=r"^u\d+$")
    cursor: str | None = Field(None, description="Opaque cursor from the previous page.")


class Status(Item, collection="statuses", key="id"):
    id: str
    user_id: str
    article_id: str
    kind: str


@step(url="{base_url}/h5/user/{user_id}/statuses", query="cursor")
def user_statuses(params: StatusPage, response: Response) -> Parsed[Status]:
    data = response.json()
    if "statuses" not in data:
        raise ParseError("status list without 'statuses'", url=response.url)
    cursor = data.get("next_cursor")
    return Parsed([Status(user_id=params.user_id, **s) for s in data["statuses"]],
                  next_page=StatusPage(user_id=params.user_id, cursor=cursor) if cursor else None)
