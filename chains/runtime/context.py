"""What every unit of a process runs with: settings and clients, built from settings.

Nothing is built at import. A worker process builds one ``Runtime`` after the fork
(``chains.broker.session.current``); a test or a one-off tool builds its own with the
dispatch it wants (a ``Recorder`` to run phases without a broker).
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from chains.runtime.dispatch import Dispatch
from chains.runtime.extensions import ItemPipeline, Middleware, Observer, load
from chains.runtime.ledger import Ledger
from chains.runtime.metrics import Metrics
from chains.runtime.observers import builtin_observers
from config import Settings
from exceptions import ClusterUnreachable
from external_interface.clients import DEFAULT_CLIENT, OWN_IDENTITY, FetchClient
from external_interface.clients.factory import Clients
from external_interface.dedup import DedupStore
from external_interface.dedup.factory import dedup_from_settings
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
from external_interface.user_agent.headers import default_headers
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


def wait_for(url: str, seconds: float) -> None:
    """Block until the state Redis at ``url`` answers, at most ``seconds``; then raise
    ``ClusterUnreachable`` naming it and the fix. A worker started before its broker host
    waits ``STATE_CONNECT_WAIT_S`` (2 minutes); a command ``STATE_COMMAND_WAIT_S`` (5 s).
    Each probe is a plain client with its own short timeouts: the state client's retries
    would stretch one ping past the bound."""
    deadline = time.monotonic() + seconds
    probe_s = max(0.2, min(1.0, seconds / 2))
    while True:
        probe = redis.Redis.from_url(url, socket_connect_timeout=probe_s,
                                     socket_timeout=probe_s)
        try:
            probe.ping()
            return
        except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
            if time.monotonic() + 0.5 > deadline:
                raise ClusterUnreachable(
                    f"the state Redis at {redact_url(url)} does not answer after "
                    f"{seconds:g} s ({exc}): start the cluster (./control.sh start) or set "
                    "STATE_REDIS_URL to the cluster's", "STATE_REDIS_URL") from None
            time.sleep(0.5)
        finally:
            probe.close()


@dataclass
class Runtime:
    """The per-process clients: state Redis, ledger, item store, fetch clients, dedup,
    politeness, resource providers, and where messages go (``dispatch``).

    ``fetcher`` is the ``http`` fetch client, ``clients`` every client by name (another
    built on a site's first fetch with it). ``http_cache`` is the development cache in
    front of ``fetcher``, used by the jobs launched with ``--http-cache`` (or by every
    job with ``HTTP_CACHE_ENABLED``), with one of its own per other client (a page
    cached through ``http`` is not replayed to ``impersonate``); ``robots`` and
    ``cached_robots`` read robots.txt through one or the other.
    ``throttle`` is the cluster-wide adaptive throttle (None: ``THROTTLE_ENABLED``
    off). ``interrupts`` are the exceptions a worker raises into a running unit to
    stop it (Celery's soft time limit): site code never swallows them as its own errors.
    ``pipelines``, ``middlewares`` and ``observers`` are the cluster's (``ITEM_PIPELINES``,
    ``MIDDLEWARES``, ``OBSERVERS``), the runtime's own observers first (metrics, throttle
    feedback, pool refills: ``chains.runtime.observers``).
    """

    settings: Settings
    dispatch: Dispatch
    redis: redis.Redis
    ledger: Ledger
    store: ItemStore
    fetcher: FetchClient
    dedup: DedupStore
    limiter: Limiter
    providers: Providers
    http_cache: CachingFetcher
    robots: RobotsPolicy
    cached_robots: RobotsPolicy
    throttle: Throttle | None = None
    interrupts: tuple[type[BaseException], ...] = ()
    pipelines: tuple[ItemPipeline, ...] = ()
    middlewares: tuple[Middleware, ...] = ()
    observers: tuple[Observer, ...] = ()
    clients: Clients | None = None
    _others: dict[tuple[str, bool], tuple[FetchesRaw, RobotsPolicy]] = field(
        default_factory=dict)

    @classmethod
    def from_settings(cls, settings: Settings, dispatch: Dispatch,
                      interrupts: tuple[type[BaseException], ...] = (),
                      wait_s: float | None = None) -> Runtime:
        """The clients ``settings`` name; the state Redis waited for ``wait_s`` (default
        ``STATE_CONNECT_WAIT_S``, a worker's), the item store opened (a bad
        ``STORAGE_URL`` is a ``UserError`` here, before anything runs)."""
        wait_for(settings.state.redis_url,
                 settings.state.connect_wait_s if wait_s is None else wait_s)
        client = state_redis(settings.state.redis_url)
        polite = settings.politeness
        clients = Clients.from_settings(settings.fetch, settings.browser)
        fetcher = clients.get(DEFAULT_CLIENT)
        cached = caching_fetcher(settings.http_cache, fetcher)
        agent = default_headers(settings.headers.family, "robots.txt")
        built = cls(
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
            clients=clients,
        )
        declared = settings.extensions
        built.pipelines = tuple(load(r, ItemPipeline, "ITEM_PIPELINES")
                                for r in declared.item_pipelines)
        built.middlewares = tuple(load(r, Middleware, "MIDDLEWARES")
                                  for r in declared.middlewares)
        built.observers = (*builtin_observers(built, built.providers, built.throttle,
                                              Metrics(client)),
                           *(load(r, Observer, "OBSERVERS") for r in declared.observers))
        return built

    def fetcher_for(self, cache: bool, client: str = DEFAULT_CLIENT) -> FetchesRaw:
        """The fetcher a job's units use: their ``client``, through the development cache
        when the job or the workers ask for it (``--http-cache``, ``HTTP_CACHE_ENABLED``)."""
        cached = cache or self.settings.http_cache.enabled
        if client == DEFAULT_CLIENT:
            return self.http_cache if cached else self.fetcher
        return self._other(client, cached)[0]

    def robots_for(self, cache: bool, client: str = DEFAULT_CLIENT) -> RobotsPolicy:
        """robots.txt read through the same fetcher as the job's pages."""
        cached = cache or self.settings.http_cache.enabled
        if client == DEFAULT_CLIENT:
            return self.cached_robots if cached else self.robots
        return self._other(client, cached)[1]

    def _other(self, client: str, cached: bool) -> tuple[FetchesRaw, RobotsPolicy]:
        """Another client's fetcher and robots.txt reader, built on first use (two
        threads may both build one: either serves)."""
        found = self._others.get((client, cached))
        if found is None:
            assert self.clients is not None  # built by from_settings
            fetcher: FetchesRaw = self.clients.get(client)
            if cached:
                fetcher = caching_fetcher(self.settings.http_cache, fetcher, client)
            headers = self.settings.headers
            agent = default_headers(headers.family, "robots.txt") \
                if client not in OWN_IDENTITY else {}
            robots = robots_from_settings(self.settings.robots, self.redis,
                                          fetch_with(fetcher, agent))
            found = self._others[(client, cached)] = (fetcher, robots)
        return found

    def close(self) -> None:
        if self.clients is not None:
            self.clients.close()
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
