"""What every task gets, built from settings once per process (after the fork).

Nothing is built at import: ``current()`` builds on first use and rebuilds in a
forked child, so a prefork pool never shares a socket with its parent.
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

import redis
from celery import Celery
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from config import Settings, get_settings
from external_interface.dedup import DedupStore, dedup_from_settings
from external_interface.fetch import Fetcher
from external_interface.ledger import Ledger
from external_interface.politeness import Limiter, limiter_from_redis
from external_interface.providers import Providers
from external_interface.storage import ItemStore, store_from_url
from external_interface.url_guard import UrlGuard


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


@dataclass
class Resources:
    """The per-process clients: Celery app, state Redis, ledger, store, fetcher, dedup,
    politeness, and the resource providers (pools, user agents, refills)."""

    settings: Settings
    app: Celery
    redis: redis.Redis
    ledger: Ledger
    store: ItemStore
    fetcher: Fetcher
    dedup: DedupStore
    limiter: Limiter
    providers: Providers

    @classmethod
    def from_settings(cls, settings: Settings, app: Celery) -> Resources:
        client = state_redis(settings.state.redis_url)
        wait_for(client, settings.state.connect_wait_s)
        return cls(
            settings=settings,
            app=app,
            redis=client,
            ledger=Ledger(client),
            store=store_from_url(settings.storage.url),
            fetcher=Fetcher(settings.fetch, guard=UrlGuard(settings.fetch.ssrf_allow)
                            if settings.fetch.ssrf_guard else None),
            dedup=dedup_from_settings(client, settings.dedup.namespace,
                                      settings.dedup.expected_entries,
                                      settings.dedup.stamp_unit_s),
            limiter=limiter_from_redis(client, lease_ttl_s=settings.politeness.lease_ttl_s,
                                       max_penalty_s=settings.politeness.max_penalty_s,
                                       default_penalty_s=settings.politeness.default_penalty_s),
            providers=Providers.from_settings(settings, client),
        )


_built: tuple[int, Resources] | None = None


def current() -> Resources:
    """This process's resources, built on first use from the environment."""
    global _built
    if _built is None or _built[0] != os.getpid():
        from worker import app

        _built = (os.getpid(), Resources.from_settings(get_settings(), app))
    return _built[1]


def reset() -> None:
    """Forget this process's resources (after a fork, or when settings changed)."""
    global _built
    _built = None


_threads: tuple[int, ThreadPoolExecutor] | None = None
_fetches: tuple[int, AbstractContextManager[Any]] | None = None


def unit_threads(size: int) -> ThreadPoolExecutor:
    """This process's threads for the units of a batch (built after the fork)."""
    global _threads
    if _threads is None or _threads[0] != os.getpid():
        _threads = (os.getpid(), ThreadPoolExecutor(size, thread_name_prefix="unit"))
    return _threads[1]


def fetch_slots(cap: int) -> AbstractContextManager[Any]:
    """This process's cap on fetches in flight (``TASK_MAX_FETCHES``; 0: none)."""
    global _fetches
    if _fetches is None or _fetches[0] != os.getpid():
        _fetches = (os.getpid(), threading.BoundedSemaphore(cap) if cap else nullcontext())
    return _fetches[1]
