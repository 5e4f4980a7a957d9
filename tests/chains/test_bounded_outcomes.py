"""Outcomes that tell the truth in bounded time, on real workers with default settings: a
site where nothing answers ends ``finished_with_failures`` within 150 s, each failure
naming the host and the error; a documentation site whose pages link files no step
parses (a ``.py``, a PDF) ends ``finished``, those links recorded as skipped by type."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from chains.cluster import launch_crawl
from chains.runtime.ledger import OUTCOMES
from sandbox.cluster import FAST_FAILURE_ENV, Cluster
from sandbox.world import World

pytestmark = pytest.mark.slow

UNREACHABLE_BOUND_S = 150  # the bound: about 2 minutes (TASK_GIVE_UP_S) and a margin


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    """One worker, every setting at its default (no fast-failure overrides), launches
    refused until the worker consumes."""
    running = Cluster(tmp_path, World(seed=3))
    for name in FAST_FAILURE_ENV:
        running.env.pop(name, None)
    running.env["LAUNCH_WORKERS"] = "require"
    try:
        running.start(workers=1)
        running.wait_for_workers()
        yield running
    finally:
        running.stop()


def closed_port() -> int:
    """A loopback port where nothing listens (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def adds_up(status: dict[str, Any]) -> None:
    for step, counts in status["steps"].items():
        assert sum(counts[o] for o in OUTCOMES) == counts["spawned"], (step, counts)


def test_a_crawl_of_a_site_that_never_answers_ends_in_bounded_time_naming_host_and_error(
        cluster: Cluster) -> None:
    host = f"127.0.0.1:{closed_port()}"
    job = launch_crawl([f"http://{host}/"], runtime=cluster.runtime)
    status = job.wait(timeout=UNREACHABLE_BOUND_S)  # JobTimeout past the bound
    assert status["state"] == "finished_with_failures"
    assert status["failures"] and all(
        host in f["reason"] and "Connection refused" in f["reason"] for f in status["failures"])
    adds_up(status)


PAGES = {
    "/": ('<a href="/guide.html">guide</a> <a href="/examples/hello.py">example</a> '
          '<a href="/manual.pdf">manual</a> <img src="/logo.png"> <a href="/logo.png">logo</a>'),
    "/guide.html": '<a href="/">home</a> <a href="/examples/hello.py">the example again</a>',
}
FILES = {"/examples/hello.py": ("text/x-python", b"print('hello')\n"),
         "/manual.pdf": ("application/pdf", b"%PDF-1.4\n%%EOF\n"),
         "/logo.png": ("image/png", b"\x89PNG\r\n\x1a\n")}


class DocsSite(BaseHTTPRequestHandler):
    """Two HTML pages linking a Python file, a PDF and an image; no robots.txt."""

    def do_GET(self) -> None:
        if self.path in PAGES:
            kind, body = "text/html; charset=utf-8", (
                f"<html><head><title>{self.path}</title></head><body>"
                f"{PAGES[self.path]}</body></html>").encode()
        elif self.path in FILES:
            kind, body = FILES[self.path]
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def docs_site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), DocsSite)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_docs_site_linking_files_no_step_parses_ends_finished_with_them_skipped(
        cluster: Cluster, docs_site: str) -> None:
    status = launch_crawl([f"{docs_site}/"], runtime=cluster.runtime).wait(timeout=120)
    assert status["state"] == "finished", status["failures"]
    assert status["totals"]["failed"] == 0 and status["totals"]["done"] == 2
    # PDFs and images are not followed at all (the page step's link filter); the .py
    # link is fetched, its type refused unread: skipped, not failed
    assert status["skip_reasons"] == {"type text/x-python": 1}
    assert status["totals"]["skipped"] == 1
    adds_up(status)
