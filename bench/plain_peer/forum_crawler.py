"""The plain peer of the deep-chain benchmark: the sandbox forum crawled by a threaded
crawler on the standard library alone, the practical limit for Python on one machine.

    python forum_crawler.py BASE_URL OUT.jsonl [--threads 16]

Sixteen threads share one queue of URLs; each keeps its own ``http.client`` keep-alive
connection. Pages are read with regular expressions, every URL is asked once (a set
under a lock), and records go to a JSONL file as ``{"type": collection, ...fields}``,
the fields of ``sandbox/forum/expected.py``. 404 and 410 are recorded as failures,
not retried; a connection error is retried twice on a fresh connection.

Standard library only, on purpose: it runs in an empty venv. Prints one line
``BENCH {json}`` at the end: pages, items, failures, crawl_s, CPU seconds at the start
and end of the crawl, peak RSS.
"""

from __future__ import annotations

import argparse
import http.client
import json
import queue
import re
import resource
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta
from datetime import time as clock
from email.utils import parsedate_to_datetime
from html import unescape
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

Record = dict[str, Any]

BOARD = re.compile(
    r'<li class="board" data-board-id="(?P<id>[^"]+)"><a class="board-link" href="(?P<href>'
    r'[^"]+)">(?P<name>.*?)</a> <p class="description">(?P<description>.*?)</p> '
    r'<span class="thread-count">(?P<count>\d+)</span>')
ROW = re.compile(r'<td class="title"><a href="([^"]+)">')
NEXT = re.compile(r'<a rel="next" href="([^"]+)">')
THREAD_ID = re.compile(r'<article class="thread" data-thread-id="(\d+)">')
TITLE = re.compile(r'<h1 class="thread-title">(.*?)</h1>')
OPENER = re.compile(r'<p class="thread-meta">Started by <a class="author" data-user-id="(\d+)"')
REPLIES = re.compile(r'<span class="reply-count">(\d+)</span>')
BOARDS = re.compile(r'<a class="board" data-board-id="([^"]+)"')
POST = re.compile(
    r'data-post-id="(?P<id>\d+)">\n<header><a class="author" data-user-id="(?P<author>\d+)" '
    r'href="(?P<profile>[^"]+)">.*?</a> <span class="time">(?P<time>[^<]+)</span> '
    r'<span class="score" title="score">(?P<score>[^<]+)</span></header>\n'
    r'<div class="body"><p>(?P<body>.*?)</p></div>\n'
    r'<footer><a class="reactions" href="(?P<reactions>[^"]+)">')
AGO = re.compile(r"(\d+) (minute|hour|day)s? ago")
AT = re.compile(r"(today|yesterday|on (\d{4}-\d\d-\d\d)) at (\d\d):(\d\d)")
UNIT = {"minute": 60, "hour": 3600, "day": 86400}


def posted_at(text: str, now: datetime) -> str:
    """A relative time ("3 days ago", "yesterday at 14:05") as UTC ISO-8601, against the
    server's ``Date``."""
    if text == "just now":
        moment = now
    elif m := AGO.fullmatch(text):
        moment = now - timedelta(seconds=int(m[1]) * UNIT[m[2]])
    elif m := AT.fullmatch(text):
        day = (date.fromisoformat(m[2]) if m[2] else
               now.date() - timedelta(days=1 if m[1] == "yesterday" else 0))
        moment = datetime.combine(day, clock(int(m[3]), int(m[4])), UTC)
    else:
        raise ValueError(f"unknown time {text!r}")
    return f"{moment:%Y-%m-%dT%H:%M:%SZ}"


def score(text: str) -> int:
    if text.endswith("k"):
        whole, _, tenth = text[:-1].partition(".")
        return int(whole) * 1000 + int(tenth or 0) * 100
    return int(text)


def parse_index(body: str, now: datetime) -> Iterator[Record | str]:
    for m in BOARD.finditer(body):
        yield {"type": "boards", "board_id": m["id"], "name": unescape(m["name"]),
               "description": unescape(m["description"]), "thread_count": int(m["count"])}
        yield m["href"]


def parse_board(body: str, now: datetime) -> Iterator[Record | str]:
    yield from ROW.findall(body)
    yield from NEXT.findall(body)


def parse_thread(body: str, now: datetime) -> Iterator[Record | str]:
    tid = int(THREAD_ID.search(body)[1])  # type: ignore[index]
    opener = OPENER.search(body)
    if opener:  # the first page
        yield {"type": "threads", "thread_id": tid,
               "title": unescape(TITLE.search(body)[1]),  # type: ignore[index]
               "author_id": int(opener[1]), "boards": sorted(BOARDS.findall(body)),
               "reply_count": int(REPLIES.search(body)[1])}  # type: ignore[index]
    for m in POST.finditer(body):
        yield {"type": "posts", "post_id": int(m["id"]), "thread_id": tid,
               "author_id": int(m["author"]), "body": unescape(m["body"]),
               "created_at": posted_at(m["time"], now), "score": score(m["score"])}
        yield m["profile"]
        yield m["reactions"]
    yield from NEXT.findall(body)


def parse_user(body: str, now: datetime) -> Iterator[Record | str]:
    u = json.loads(body)
    yield {"type": "users", "user_id": u["id"], "name": u["name"], "joined": u["joined"],
           "reputation": u["reputation"]}


def parse_reactions(body: str, now: datetime) -> Iterator[Record | str]:
    page = json.loads(body)
    pid = page["post_id"]
    for r in page["reactions"]:
        yield {"type": "reactions", "reaction_id": r["id"], "post_id": pid,
               "user_id": r["user_id"], "kind": r["kind"], "created_at": r["created_at"]}
    if page["next_cursor"]:
        yield f"/forum/api/posts/{pid}/reactions?cursor={page['next_cursor']}"


Parser = Callable[[str, datetime], Iterator[Record | str]]


def parser_for(path: str) -> Parser:
    if path.startswith("/forum/api/users/"):
        return parse_user
    if path.startswith("/forum/api/posts/"):
        return parse_reactions
    if path.startswith("/forum/b/"):
        return parse_board
    if path.startswith("/forum/t/"):
        return parse_thread
    return parse_index


class Crawl:
    """The shared state: the queue, the URLs seen, the output file and the counts."""

    def __init__(self, base_url: str, out: TextIO) -> None:
        parts = urlsplit(base_url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.todo: queue.Queue[str | None] = queue.Queue()
        self.seen: set[str] = set()
        self.lock = threading.Lock()
        self.out = out
        self.pages = self.items = 0
        self.failures: dict[str, int] = {}
        self.errors: list[str] = []

    def add(self, url: str) -> None:
        with self.lock:
            if url in self.seen:
                return
            self.seen.add(url)
        self.todo.put(url)

    def worker(self) -> None:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        while (url := self.todo.get()) is not None:
            try:
                conn = self.visit(conn, url)
            except Exception as exc:  # a bug or a bad page: counted, never silent
                self.errors.append(f"{url}: {exc!r}")
            finally:
                self.todo.task_done()
        self.todo.task_done()
        conn.close()

    def visit(self, conn: http.client.HTTPConnection, url: str) -> http.client.HTTPConnection:
        for attempt in range(3):
            try:
                conn.request("GET", url)
                response = conn.getresponse()
                body = response.read()
                break
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
                if attempt == 2:
                    raise
        if response.status != 200:
            with self.lock:
                self.pages += 1
                self.failures[url] = response.status
            return conn
        now = parsedate_to_datetime(response.getheader("Date") or "")
        lines, links = [], []
        for found in parser_for(urlsplit(url).path)(body.decode(), now):
            if isinstance(found, str):
                links.append(found)
            else:
                lines.append(json.dumps(found) + "\n")
        with self.lock:
            self.pages += 1
            self.items += len(lines)
            self.out.writelines(lines)
        for link in links:
            self.add(link)
        return conn


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("base_url")
    p.add_argument("out", type=Path)
    p.add_argument("--threads", type=int, default=16)
    args = p.parse_args(argv)
    started, cpu_start = time.perf_counter(), cpu_s()
    with args.out.open("w", encoding="utf-8") as out:
        crawl = Crawl(args.base_url, out)
        crawl.add("/forum/")
        threads = [threading.Thread(target=crawl.worker, daemon=True)
                   for _ in range(args.threads)]
        for t in threads:
            t.start()
        crawl.todo.join()  # every URL visited, and no visit left to add more
        for _ in threads:
            crawl.todo.put(None)
        for t in threads:
            t.join()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print("BENCH " + json.dumps({
        "pages": crawl.pages, "items": crawl.items, "failures": len(crawl.failures),
        "errors": len(crawl.errors), "crawl_s": round(time.perf_counter() - started, 3),
        "cpu_start_s": round(cpu_start, 3), "cpu_end_s": round(cpu_s(), 3),
        "maxrss_mb": round(usage.ru_maxrss / 1024, 1)}), flush=True)
    for error in crawl.errors[:10]:
        print(f"error: {error}", file=sys.stderr)
    return 1 if crawl.errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
