"""The polite site's defences, as an ordinary site has them; each has its own switch.

In the order a request meets them:

* rate: a token bucket per client address, ``rate`` tokens a second up to ``burst``;
  a request finding no token gets 429 with ``Retry-After`` (whole seconds until a
  token, at least 1). Refused requests take no token, so a crawler that waits as
  told is never refused twice in a row.
* user agent: a library's agent (``python-urllib3/2.2``, ``python-requests``,
  ``Scrapy``, ``curl``, ``Go-http-client``, ...), a bot's, or none gets 403; a
  browser's (``Mozilla/5.0 (...) ... Chrome|Firefox|Safari/N``) passes.
* flaky: the first request for ``flaky_share`` of the URLs answers 503, the next
  one succeeds. Which URLs is a hash of the seed and the URL, so every run of the
  same seed fails the same URLs, in any crawl order.

``PoliteDefences.off()`` switches all three off: the same site, undefended, for the
"throttle costs at most 10 %" comparison.
"""

from __future__ import annotations

import hashlib
import math
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

LIBRARY_AGENT = re.compile(
    r"python|urllib|requests|scrapy|curl|wget|httpx|aiohttp|go-http-client|java/|okhttp|"
    r"libwww|httpclient|node-fetch|axios|undici|crawlee|got \(|bot\b|spider|crawler",
    re.IGNORECASE)
BROWSER_AGENT = re.compile(r"^Mozilla/5\.0 \([^)]+\).*\b(Chrome|Firefox|Safari|Edg)/\d")


def agent_allowed(agent: str) -> bool:
    """True for a browser's User-Agent, False for a library's, a bot's or an empty one."""
    return bool(BROWSER_AGENT.match(agent)) and not LIBRARY_AGENT.search(agent)


def flaky(seed: int, target: str, share: float) -> bool:
    """Whether ``target``'s first request answers 503: a hash of seed and URL, under ``share``."""
    digest = hashlib.sha256(f"{seed}\x00{target}".encode()).digest()
    return int.from_bytes(digest[:8], "big") < share * 2**64


def flaky_targets(seed: int, targets: Iterable[str], share: float) -> set[str]:
    """The targets whose first request answers 503 (what a crawl meets as ``status_503``)."""
    return {t for t in targets if flaky(seed, t, share)}


@dataclass(frozen=True)
class PoliteDefences:
    """Which defences are on. The defaults are the benchmark's: 50/s, 10 % 503s, UA check."""

    rate: float | None = 50.0  # tokens per second per client address; None: no limit
    burst: float = 50.0  # the bucket's size: a client may spend this many at once
    flaky_share: float = 0.10
    check_agent: bool = True

    def __post_init__(self) -> None:
        if self.rate is not None and (self.rate <= 0 or self.burst < 1):
            raise ValueError(f"rate must be > 0 and burst >= 1 (got {self.rate}, {self.burst})")
        if not 0 <= self.flaky_share < 1:
            raise ValueError(f"flaky_share must be in [0, 1), not {self.flaky_share}")

    @classmethod
    def off(cls) -> PoliteDefences:
        """No bucket, no 503, no agent check."""
        return cls(rate=None, flaky_share=0.0, check_agent=False)


@dataclass
class TokenBuckets:
    """One token bucket per client address, refilled continuously."""

    rate: float
    burst: float
    clock: Callable[[], float] = time.monotonic
    buckets: dict[str, tuple[float, float]] = field(default_factory=dict)  # tokens, at

    def take(self, client: str) -> float:
        """Take a token for ``client``: 0.0 when granted, else seconds until one is there."""
        now = self.clock()
        tokens, at = self.buckets.get(client, (self.burst, now))
        tokens = min(self.burst, tokens + (now - at) * self.rate)
        if tokens >= 1.0 - 1e-9:  # a whole token, give or take float rounding
            self.buckets[client] = (max(0.0, tokens - 1.0), now)
            return 0.0
        self.buckets[client] = (tokens, now)
        return (1.0 - tokens) / self.rate


def retry_after(wait_s: float) -> str:
    """A Retry-After value in whole seconds (at least 1): what HTTP allows."""
    return str(max(1, math.ceil(wait_s)))
