"""Each defence of the polite site, on its own: agents, buckets, reproducible 503s."""

from __future__ import annotations

import pytest

from sandbox.polite.catalogue import Catalogue
from sandbox.polite.defences import (
    PoliteDefences,
    TokenBuckets,
    agent_allowed,
    flaky_targets,
    retry_after,
)

CHROME = ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
          "Chrome/126.0.0.0 Safari/537.36")
FIREFOX = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
SAFARI = ("Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 "
          "(KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1")


@pytest.mark.parametrize("agent", [CHROME, FIREFOX, SAFARI])
def test_a_browser_agent_passes(agent: str) -> None:
    assert agent_allowed(agent)


@pytest.mark.parametrize("agent", [
    "", "python-urllib3/2.2.2", "python-requests/2.32.3", "Python-urllib/3.11",
    "Scrapy/2.13.0 (+https://scrapy.org)", "curl/8.5.0", "Wget/1.21", "Go-http-client/1.1",
    "aiohttp/3.9", "python-httpx/0.27", "Mozilla/5.0 (compatible; Googlebot/2.1)",
    "Mozilla/5.0 (X11; Linux x86_64) Chrome/126.0 Safari/537.36 python-requests/2.32",
    "Mozilla/5.0",
])
def test_a_library_bot_or_missing_agent_is_refused(agent: str) -> None:
    assert not agent_allowed(agent)


def test_about_a_tenth_of_the_urls_fail_once_and_always_the_same() -> None:
    targets = Catalogue(1).chain_paths()
    failing = flaky_targets(1, targets, 0.10)
    assert 0.07 * len(targets) < len(failing) < 0.13 * len(targets)
    assert failing == flaky_targets(1, reversed(targets), 0.10)  # order does not matter
    assert failing != flaky_targets(2, targets, 0.10)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_bucket_grants_its_burst_then_one_token_per_interval() -> None:
    clock = Clock()
    buckets = TokenBuckets(rate=50, burst=5, clock=clock)
    assert [buckets.take("a") for _ in range(5)] == [0.0] * 5
    assert buckets.take("a") == pytest.approx(0.02)  # one token every 1/50 s
    assert buckets.take("b") == 0.0  # another client address has its own bucket
    clock.now += 0.02
    assert buckets.take("a") == 0.0
    assert buckets.take("a") > 0


def test_a_refusal_takes_no_token() -> None:
    clock = Clock()
    buckets = TokenBuckets(rate=10, burst=1, clock=clock)
    buckets.take("a")
    for _ in range(100):
        buckets.take("a")  # refused, again and again
    clock.now += 0.1
    assert buckets.take("a") == 0.0


def test_retry_after_is_whole_seconds_and_at_least_one() -> None:
    assert [retry_after(w) for w in (0.001, 0.9, 1.0, 1.2)] == ["1", "1", "1", "2"]


def test_off_switches_every_defence_off() -> None:
    off = PoliteDefences.off()
    assert (off.rate, off.flaky_share, off.check_agent) == (None, 0.0, False)
    with pytest.raises(ValueError, match="flaky_share"):
        PoliteDefences(flaky_share=1.5)
