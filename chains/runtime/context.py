"""What every unit of a process runs with: settings and clients, built from settings.

Nothing is built at import. A worker process builds one ``Runtime`` after the fork
(``session.current``); a test or a one-off tool builds its own with the dispatch it
wants (a ``Recorder`` to run phases without a broker).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from chains.runtime.dispatch import Dispatch
from chains.runtime.ledger import Ledger
from config import Settings, embedded_socket
from external_interface.dedup import DedupStore
from external_interface.dedup.factory import dedup_from_settings
from external_interface.fetch import Fetcher
from external_interface.http_cache import CachingFetcher, FetchesRaw
from external_interface.http_cache.factory import caching_fetcher
from external_interface.politeness import Limiter
from external_interface.politeness.factory import limiter_from_redis, throttle_from_settings
from external_interface.politeness.throttle import Throttle
from external_interface.providers.bundle import Providers
from external_interface.robots import fetch_with
from external_interface.robots.factory import robots_from_settings
from external_interface.robots.policy import RobotsPolicy
from external_interface.storage import ItemStore
from external_interface.storage.factory import store_from_url
from external_interface.url_guard import UrlGuard
from external_interface.user_agent.headers import default_headers
from utils.embedded_redis import stopped_copy
from utils.fair_slots import FairSlots
from utils.urls import redact_url


def state_redis(url: str) -> redis.Redis:
    """A state-plane client that rides out a short Redis blip instead of failing a unit."""
    return redis.Redis.from_url(
        url,
        retry=Retry(ExponentialBackoff(cap=2.0, base=0.05), retries=8),
        retry_on_error=[redis.ConnectionError, redis.TimeoutError],
        health_check_interval=30,
        socket_timeout=15,
        socket_connect_timeout=5,
    )


def dedup_redis(settings: Settings, state: redis.Redis) -> redis.Redis:
    """The dedup marks' Redis: ``DEDUP_REDIS_URL``'s, else the state plane's own client."""
    url = settings.dedup.redis_url
    return state_redis(url) if url else state


def throttle_of(settings: Settings, client: redis.Redis) -> Throttle | None:
    """The cluster's adaptive throttle, or None when ``THROTTLE_ENABLED`` is off. A
    Retry-After cools a whole site down for at most ``POLITE_MAX_PENALTY_S`` too: the
    one cap on a 429's cooldown, whichever part of politeness writes it."""
    conf = settings.throttle
    if not conf.enabled:
        return None
    cap = min(conf.max_retry_after_s, settings.politeness.max_penalty_s)
    return throttle_from_settings(conf.model_copy(update={"max_retry_after_s": cap}), client)


def wait_for(client: redis.Redis, seconds: float) -> None:
    """Block until the state Redis answers, at most ``seconds``: a launcher or a worker
    started before the broker host is up waits for it instead of failing at once."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            client.ping()
            return
        except (redis.ConnectionError, redis.TimeoutError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


class StateUnavailable(RuntimeError):
    """The state Redis does not answer, and there are no files of it to read instead."""


@contextmanager
def state_for_reading(url: str) -> Iterator[tuple[redis.Redis, str | None]]:
    """A client of the state Redis to read jobs from, and None; or, when it is the
    embedded Redis and it is stopped (``./control.sh demo`` stops it on exit), a client
    of a throwaway copy of its files and a line saying so. Anything else that does not
    answer raises ``StateUnavailable`` saying what to do."""
    client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=15)
    try:
        client.ping()
        reachable: Exception | None = None
    except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
        client.close()
        reachable = exc
    if reachable is None:
        with client:
            yield client, None
        return
    data = embedded_socket().parent / "redis"
    if url != f"unix://{embedded_socket()}" or not (data / "appendonlydir").is_dir():
        raise StateUnavailable(
            f"the state Redis at {redact_url(url)} does not answer ({reachable}): start it "
            "(./control.sh start redis) or point STATE_REDIS_URL at the cluster's")
    with stopped_copy(data) as socket, redis.Redis(unix_socket_path=socket) as copy:
        yield copy, (f"the embedded Redis is stopped: read from its files in {data} "
                     "(./control.sh start redis runs it again)")


@dataclass
class Runtime:
    """The per-process clients: state Redis, ledger, item store, fetcher, dedup,
    politeness, resource providers, and where messages go (``dispatch``).

    ``http_cache`` is the development cache in front of ``fetcher``, used by the jobs
    launched with ``--http-cache`` (or by every job with ``HTTP_CACHE_ENABLED``);
    ``robots`` and ``cached_robots`` read robots.txt through one or the other.
    ``throttle`` is the cluster-wide adaptive throttle (None: ``THROTTLE_ENABLED``
    off). ``interrupts`` are the exceptions a worker raises into a running unit to
    stop it (Celery's soft time limit): site code never swallows them as its own errors.
    """

    settings: Settings
    dispatch: Dispatch
    redis: redis.Redis
    ledger: Ledger
    store: ItemStore
    fetcher: Fetcher
    dedup: DedupStore
    limiter: Limiter
    providers: Providers
    http_cache: CachingFetcher
    robots: RobotsPolicy
    cached_robots: RobotsPolicy
    throttle: Throttle | None = None
    interrupts: tuple[type[BaseException], ...] = ()

    @classmethod
    def from_settings(cls, settings: Settings, dispatch: Dispatch,
                      interrupts: tuple[type[BaseException], ...] = ()) -> Runtime:
        client = state_redis(settings.state.redis_url)
        wait_for(client, settings.state.connect_wait_s)
        polite = settings.politeness
        fetcher = Fetcher(settings.fetch, guard=UrlGuard(settings.fetch.ssrf_allow)
                          if settings.fetch.ssrf_guard else None)
        cached = caching_fetcher(settings.http_cache, fetcher)
        agent = default_headers(settings.headers.family, "robots.txt")
        return cls(
            settings=settings,
            dispatch=dispatch,
            redis=client,
            ledger=Ledger(client),
            store=store_from_url(settings.storage.url),
            fetcher=fetcher,
            dedup=dedup_from_settings(dedup_redis(settings, client), settings.dedup.namespace,
                                      settings.dedup.expected_entries,
                                      settings.dedup.stamp_unit_s),
            limiter=limiter_from_redis(client, lease_ttl_s=settings.lease_ttl_s,
                                       max_penalty_s=polite.max_penalty_s,
                                       default_penalty_s=polite.default_penalty_s),
            providers=Providers.from_settings(settings, client),
            http_cache=cached,
            robots=robots_from_settings(settings.robots, client, fetch_with(fetcher, agent)),
            cached_robots=robots_from_settings(settings.robots, client,
                                               fetch_with(cached, agent)),
            throttle=throttle_of(settings, client),
            interrupts=interrupts,
        )

    def fetcher_for(self, cache: bool) -> FetchesRaw:
        """The fetcher a job's units use: the development cache when the job or the
        workers ask for it (``--http-cache``, ``HTTP_CACHE_ENABLED``)."""
        return self.http_cache if cache or self.settings.http_cache.enabled else self.fetcher

    def robots_for(self, cache: bool) -> RobotsPolicy:
        """robots.txt read through the same fetcher as the job's pages."""
        return self.cached_robots if cache or self.settings.http_cache.enabled else self.robots

    def close(self) -> None:
        self.store.close()
        self.redis.close()


_threads: tuple[int, ThreadPoolExecutor] | None = None
_fetches: tuple[int, AbstractContextManager[Any]] | None = None


def unit_threads(size: int) -> ThreadPoolExecutor:
    """This process's threads for the units of a batch (built after the fork)."""
    global _threads
    if _threads is None or _threads[0] != os.getpid():
        _threads = (os.getpid(), ThreadPoolExecutor(size, thread_name_prefix="unit"))
    return _threads[1]


def fetch_slots(cap: int) -> AbstractContextManager[Any]:
    """This process's cap on fetches in flight (``TASK_MAX_FETCHES``; 0: none), granted
    first come, first served (``utils.fair_slots``)."""
    global _fetches
    if _fetches is None or _fetches[0] != os.getpid():
        _fetches = (os.getpid(), FairSlots(cap) if cap else nullcontext())
    return _fetches[1]
