"""A forum: boards -> threads (HTML, rel=next pages) -> authors, reactions (JSON API)."""

from datetime import datetime

from chains.api import Input, Item, Page, Parsed, Response, Site, relative_time, short_number, step

SITE = Site("forum", base_url="http://127.0.0.1:8765/forum")

class Board(Item, collection="boards", key="board_id"):
    board_id: str
    name: str
    description: str
    thread_count: int
class Thread(Item, collection="threads", key="thread_id"):
    thread_id: int
    title: str
    author_id: int
    boards: list[str]
    reply_count: int
class Post(Item, collection="posts", key="post_id"):
    post_id: int
    thread_id: int
    author_id: int
    body: str
    created_at: datetime
    score: int
class User(Item, collection="users", key="user_id"):
    user_id: int
    name: str
    joined: str
    reputation: int
class Reaction(Item, collection="reactions", key="reaction_id"):
    reaction_id: int
    post_id: int
    user_id: int
    kind: str
    created_at: str

@step(url="{base_url}/", follows="board_pages")
def boards(page: Page, response: Response) -> Parsed[Board]:
    rows = response.css("li.board")
    return Parsed([Board(board_id=row.attrib["data-board-id"], name=row.css("a::text").get(""),
                         description=row.css(".description::text").get(""),
                         thread_count=int(row.css(".thread-count::text").get(""))) for row in rows],
                  follow=response.follow_all(rows.css("a::attr(href)").getall()))

@step(url="{url}", follows="threads")
def board(page: Page, response: Response) -> Parsed[Item]:
    return Parsed(follow=[response.follow(row.css(".title a::attr(href)").get(),
                                          replies=row.css(".replies::text").get())
                          for row in response.css("tr.thread")], next_page=response.next_link())

@step(url="{url}")
def thread(page: Page, response: Response) -> Parsed[Thread | Post]:
    article = response.css("article.thread")
    thread_id = int(article.attrib["data-thread-id"])
    items: list[Thread | Post] = [Post(
        post_id=int(post.attrib["data-post-id"]), thread_id=thread_id,
        author_id=int(post.css("a.author::attr(data-user-id)").get("")),
        body=post.css("div.body p::text").get(""),
        score=short_number(post.css("span.score::text").get("")),
        created_at=relative_time(post.css("span.time::text").get(""), response.date))
        for post in article.css("div.post")]
    if meta := article.css(".thread-meta"):
        items.append(Thread(thread_id=thread_id, title=article.css("h1::text").get(""),
                            author_id=int(meta.css("a.author::attr(data-user-id)").get("")),
                            boards=sorted(response.css("a.board::attr(data-board-id)").getall()),
                            reply_count=int(meta.css("span.reply-count::text").get(""))))
    return Parsed(items, next_page=response.next_link())

class Author(Input):
    author_id: int
@step(platform="api", url="{base_url}/api/users/{author_id}")
def user(author: Author, response: Response) -> Parsed[User]:
    data = response.json()
    return Parsed([User(user_id=data.pop("id"), **data)])

class ReactionPage(Input):
    post_id: int
    cursor: str | None = None
@step(platform="api", url="{base_url}/api/posts/{post_id}/reactions", query="cursor")
def reactions(page: ReactionPage, response: Response) -> Parsed[Reaction]:
    data, post_id = response.json(), page.post_id
    more = data["next_cursor"] and ReactionPage(post_id=post_id, cursor=data["next_cursor"])
    return Parsed([Reaction(reaction_id=r.pop("id"), post_id=post_id, **r)
                   for r in data["reactions"]], next_page=more or None)
