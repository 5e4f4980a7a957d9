"""Issue 32: whatever a server sends, a fetch ends in a response or a ``CrawlError`` of
some class, never another exception, for every client.

Seeded hostile responses (``hostile_bytes``): a quick run in the default suite, ten
thousand cases per client in the slow one. A seed that escapes is printed and replays
exactly (``Case(seed, port)``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

import pytest

from config import FetchSettings
from exceptions import CrawlError
from external_interface.http import HTML_TYPES, Request
from tests.external_interface.clients.hostile_bytes import CaseServer
from tests.external_interface.clients.raw_server import client
from utils.domains import AllowedDomains

QUICK = 150
SLOW = 10_000
LOOPBACK = AllowedDomains(["127.0.0.1"])  # a redirect elsewhere is offsite: never resolved


def outcomes(name: str, seeds: Iterable[int], threads: int = 1) -> Counter[str]:
    """What each case ended in: ``ok``, a ``CrawlError`` class's name, or ``ESCAPED``
    with the seed and the exception."""
    fetcher = client(name, FetchSettings(deadline_s=0.3, connect_timeout_s=0.3,
                                         read_timeout_s=0.2, max_body_bytes=64 * 1024,
                                         max_redirects=3))
    with CaseServer() as server:
        def one(seed: int) -> str:
            accept = HTML_TYPES if seed % 3 == 0 else ()
            try:
                fetcher.fetch(Request(server.url(seed), accept_types=accept), LOOPBACK)
            except CrawlError as exc:
                return type(exc).__name__
            except Exception as exc:  # what must never happen
                return f"ESCAPED seed {seed}: {type(exc).__name__}: {exc}"
            return "ok"

        with ThreadPoolExecutor(threads) as pool:
            return Counter(pool.map(one, seeds))


def escaped(found: Counter[str]) -> list[str]:
    return [outcome for outcome in found if outcome.startswith("ESCAPED")]


def test_hostile_responses_end_in_a_response_or_a_crawl_error(client_name: str) -> None:
    found = outcomes(client_name, range(QUICK))
    assert escaped(found) == []
    assert found["ok"] and found["NetworkError"] and found["ResponseRejected"], found


@pytest.mark.slow
def test_ten_thousand_hostile_responses_end_in_a_response_or_a_crawl_error(
        client_name: str) -> None:
    found = outcomes(client_name, range(QUICK, QUICK + SLOW), threads=4)
    assert escaped(found) == [] and sum(found.values()) == SLOW
