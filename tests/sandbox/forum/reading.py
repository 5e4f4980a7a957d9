"""The tests' own reader of the forum: a one-connection walk that follows the pages'
links and reads records as ``sandbox.forum.expected`` describes them. It is what a
user's eye makes of the pages, written for the tests; it is not a crawler of the
project (that lives in ``sites/forum/``).
"""

from __future__ import annotations

import http.client
import json
import re
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

from parsel import Selector

UNITS = {"minute": timedelta(minutes=1), "hour": timedelta(hours=1), "day": timedelta(days=1)}


def read_ago(text: str, now: datetime) -> datetime:
    """The moment a relative time names, against the server's clock ``now``."""
    if text == "just now":
        return now
    if m := re.fullmatch(r"(\d+) (minute|hour|day)s? ago", text):
        return now - int(m[1]) * UNITS[m[2]]
    if m := re.fullmatch(r"(today|yesterday) at (\d\d):(\d\d)", text):
        day = now.date() - timedelta(days=1 if m[1] == "yesterday" else 0)
        return datetime.combine(day, time(int(m[2]), int(m[3])), UTC)
    if m := re.fullmatch(r"on (\d{4}-\d\d-\d\d) at (\d\d):(\d\d)", text):
        return datetime.combine(date.fromisoformat(m[1]), time(int(m[2]), int(m[3])), UTC)
    raise ValueError(f"not a time this reader knows: {text!r}")


def read_score(text: str) -> int:
    """ "1.2k" -> 1200, "87" -> 87."""
    if text.endswith("k"):
        whole, _, tenth = text[:-1].partition(".")
        return int(whole) * 1000 + int(tenth or 0) * 100
    return int(text)


@dataclass
class Walk:
    """What one walk read: records by collection and key, failures, every URL asked."""

    records: dict[str, dict[Any, dict[str, Any]]] = field(
        default_factory=lambda: {c: {} for c in ("boards", "threads", "posts", "users",
                                                 "reactions")})
    failures: dict[str, int] = field(default_factory=dict)
    asked: list[str] = field(default_factory=list)
    times_written: set[str] = field(default_factory=set)  # every relative time seen


def walk(base_url: str) -> Walk:
    """Follow every link from ``/forum/`` once, breadth first, reading records."""
    parts = urlsplit(base_url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=10)
    out, queue, seen = Walk(), deque(["/forum/"]), {"/forum/"}
    try:
        while queue:
            url = queue.popleft()
            out.asked.append(url)
            conn.request("GET", url)
            response = conn.getresponse()
            body = response.read()
            if response.status != 200:
                out.failures[url] = response.status
                continue
            now = parsedate_to_datetime(response.getheader("Date") or "")
            for link in _read(url, body, now, out):
                if link not in seen:
                    seen.add(link)
                    queue.append(link)
    finally:
        conn.close()
    return out


def _read(url: str, body: bytes, now: datetime, out: Walk) -> list[str]:
    """Store the records of one page; the links to follow."""
    path = urlsplit(url).path
    if path.startswith("/forum/api/users/"):
        u = json.loads(body)
        out.records["users"][u["id"]] = {"user_id": u["id"], "name": u["name"],
                                         "joined": u["joined"], "reputation": u["reputation"]}
        return []
    if path.startswith("/forum/api/posts/"):
        page = json.loads(body)
        for r in page["reactions"]:
            out.records["reactions"][r["id"]] = {
                "reaction_id": r["id"], "post_id": page["post_id"], "user_id": r["user_id"],
                "kind": r["kind"], "created_at": r["created_at"]}
        return [f"{path}?cursor={page['next_cursor']}"] if page["next_cursor"] else []
    sel = Selector(text=body.decode())
    nexts = sel.css('a[rel="next"]::attr(href)').getall()
    if path == "/forum/":
        return _index(sel, out)
    if path.startswith("/forum/b/"):
        return sel.css("tr.thread .title a::attr(href)").getall() + nexts
    return _thread(sel, now, out, first="after=" not in url) + nexts


def _index(sel: Selector, out: Walk) -> list[str]:
    for li in sel.css("li.board"):
        bid = li.attrib["data-board-id"]
        out.records["boards"][bid] = {
            "board_id": bid, "name": li.css("a.board-link::text").get(),
            "description": li.css(".description::text").get(),
            "thread_count": int(li.css(".thread-count::text").get() or -1)}
    return sel.css("a.board-link::attr(href)").getall()


def _thread(sel: Selector, now: datetime, out: Walk, first: bool) -> list[str]:
    tid = int(sel.css("article.thread::attr(data-thread-id)").get() or -1)
    if first:
        out.records["threads"][tid] = {
            "thread_id": tid, "title": sel.css("h1.thread-title::text").get(),
            "author_id": int(sel.css(".thread-meta a.author::attr(data-user-id)").get() or -1),
            "boards": sorted(sel.css("nav a.board::attr(data-board-id)").getall()),
            "reply_count": int(sel.css(".reply-count::text").get() or -1)}
    links = []
    for post in sel.css("div.post"):
        written = post.css(".time::text").get() or ""
        out.times_written.add(written)
        pid = int(post.attrib["data-post-id"])
        out.records["posts"][pid] = {
            "post_id": pid, "thread_id": tid,
            "author_id": int(post.css("a.author::attr(data-user-id)").get() or -1),
            "body": post.css(".body p::text").get(),
            "created_at": f"{read_ago(written, now):%Y-%m-%dT%H:%M:%SZ}",
            "score": read_score(post.css(".score::text").get() or "")}
        links += post.css("a.author::attr(href), a.reactions::attr(href)").getall()
    return links
