"""Typed settings read from the environment, one model per concern.

With nothing set, every URL points at the embedded default: a Redis server on a
unix socket under ``run/`` (a redis-server >= 7 that ``control.sh`` starts; see
``ops.embedded_redis``) and items in SQLite under ``data/``. Celery's own environment names are
used where Celery reads them (``CELERY_BROKER_URL``).

Nothing here opens a connection or creates a directory: settings are values.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict, SettingsError

from utils import envfile
from utils.urls import redact_text

HOME = Path(__file__).resolve().parents[1]
LEASE_MARGIN_S = 10.0  # a lease outlives its fetch's deadline by this (connect, release)


def _home() -> Path:
    """The project's runtime root; ``CRAWLCHAIN_HOME`` moves ``run/`` and ``data/``."""
    import os

    return Path(os.environ.get("CRAWLCHAIN_HOME", HOME))


def cluster_env_file() -> Path | None:
    """The hosts' shared environment file (``CRAWLCHAIN_ENV_FILE``, default
    ``crawlchain.env`` in the checkout), mode-checked before any value is read."""
    path = envfile.locate()
    if path is not None:
        envfile.check_mode(path)
    return path


def embedded_socket() -> Path:
    """The unix socket of the embedded Redis that ``control.sh`` starts."""
    return _home() / "run" / "redis.sock"


class Politeness(BaseModel):
    """How hard one bucket may be hit, cluster-wide. ``None`` means no limit of that kind.

    A cooldown set by ``penalize`` applies whatever the policy, even to a bucket
    with neither limit. Every caller of a bucket should pass the same policy (a
    site's knobs do); the one used last is what ``state`` and ``penalize`` see.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    rate_per_s: float | None = Field(
        default=None, gt=0, description="Requests per second, sustained, across the cluster."
    )
    burst: int = Field(
        default=1, ge=1, description="Requests admitted at once after an idle spell."
    )
    max_concurrency: int | None = Field(
        default=None, ge=1, description="Requests in flight at once, across the cluster."
    )
    stale_after_s: float | None = Field(
        default=None, gt=0, description="A request in flight longer than this stops counting "
        "toward max_concurrency (one URL that hangs must not hold the host's window); None: "
        "it counts until it ends. The adaptive throttle sets it, never a declared policy.")

    @property
    def interval_s(self) -> float:
        """Seconds between two requests at the sustained rate; 0 without a rate."""
        return 1.0 / self.rate_per_s if self.rate_per_s else 0.0


class BrokerSettings(BaseSettings):
    """Where Celery messages go; Celery's own variable names."""

    model_config = SettingsConfigDict(env_prefix="CELERY_", extra="ignore")

    broker_url: str = Field(
        default_factory=lambda: f"redis+socket://{embedded_socket()}",
        description="Broker URL: redis://, redis+socket:// or amqp://. Default: embedded Redis.",
    )
    visibility_timeout: int = Field(
        900,
        description="Seconds before an unacked Redis message is redelivered. Must exceed the "
        "hard time limit and the longest countdown, or running units are delivered twice.",
    )
    publish_max_retries: int = Field(
        10, description="Attempts to publish a message while the broker is briefly away."
    )
    queue_type: Literal["quorum", "classic"] = Field(
        "quorum", description="RabbitMQ only. quorum: replicated, a delivery limit and "
        "dead-lettering, but no message priorities (before RabbitMQ 4.0). classic: "
        "x-max-priority 9, so deeper units go first as on Redis; no delivery limit.")
    broker_socket_timeout: float = Field(
        30.0, gt=0, description="Redis only: seconds a broker command (a publish, an ack) may "
        "wait for its reply before the connection is dropped and made again; without it a "
        "half-open connection (a broker host gone without a FIN) blocks a worker for good.")
    broker_health_check_interval: int = Field(
        25, ge=0, description="Redis only: seconds between kombu's checks of its long-lived "
        "connections; a consumer whose BRPOP reply is overdue by this much reconnects (a "
        "half-open connection is noticed within about twice this). 0: no checks.")
    broker_heartbeat: int = Field(
        30, ge=0, description="RabbitMQ only: AMQP heartbeat seconds; a host cut off from "
        "the broker loses its connection, and its unacked units go back to the queue, "
        "after about two of these.")


class StateSettings(BaseSettings):
    """The state plane: job ledger, dedup, politeness, pools."""

    model_config = SettingsConfigDict(env_prefix="STATE_", extra="ignore")

    redis_url: str = Field(
        default_factory=lambda: f"unix://{embedded_socket()}",
        description="Redis URL of the state plane (redis:// or unix://). Default: embedded Redis.",
    )
    connect_wait_s: float = Field(
        120.0, description="How long a worker (or beat) starting waits for the state Redis "
        "to appear before giving up: workers may start before their broker host.")
    command_wait_s: float = Field(
        5.0, gt=0, description="How long a command (crawlchain launch, a Python shell's "
        "launch, the job API) waits for the state Redis and the broker before saying it "
        "cannot reach them.")


class LaunchSettings(BaseSettings):
    """What a launch checks of the cluster before it queues anything."""

    model_config = SettingsConfigDict(env_prefix="LAUNCH_", extra="ignore")

    frontier_batch_size: int = Field(
        64, ge=1, description="A launch with 1,000 or more root units of one step (a big "
        "list of start URLs) sends them in messages of at least this many units (the step's "
        "batch size if larger): each message's envelope costs the broker about 1.7 KB.")

    workers: Literal["require", "warn", "off"] = Field(
        "require", description="When no live worker consumes a queue the chain uses: refuse "
        "the launch (require), launch and warn (warn; crawlchain launch --detach does), or "
        "do not look (off: workers that scale from zero on queue length).")


class ReviveSettings(BaseSettings):
    """Units whose message the broker lost are sent again (``external_interface.reviver``)."""

    model_config = SettingsConfigDict(env_prefix="REVIVE_", extra="ignore")

    stall_s: float = Field(
        60.0, gt=0, description="A running job none of whose units began or finished for this "
        "long is checked for units that no queue holds; those are sent again.")
    interval_s: float = Field(
        10.0, gt=0, description="How often a worker looks for stalled jobs (one worker of the "
        "cluster at a time).")


class DedupSettings(BaseSettings):
    """The recrawl-aware dedup store: in the state Redis, or in a Redis of its own."""

    model_config = SettingsConfigDict(env_prefix="DEDUP_", extra="ignore")

    redis_url: str | None = Field(
        None, description="Redis URL of the dedup marks when they live apart from the state "
        "plane (a larger, evicting or cheaper instance); unset: the state Redis.")
    namespace: str = Field("cc", description="Key namespace; one layout per namespace.")
    expected_entries: int = Field(
        10_000_000, ge=1, description="Sizes the buckets on first use; fixed afterwards."
    )
    stamp_unit_s: int = Field(
        3600, ge=1, description="Resolution of last-seen times (16 bits of these units); "
        "fixed with the layout on first use. TTLs shorter than one unit never skip."
    )


class StorageSettings(BaseSettings):
    """Where items are stored."""

    model_config = SettingsConfigDict(env_prefix="STORAGE_", extra="ignore")

    url: str = Field(
        default_factory=lambda: f"sqlite:///{_home() / 'data' / 'items.db'}",
        description="Item store: sqlite:///path (default data/items.db), jsonl:///dir, "
        "http(s)://sink, mongodb://host/db.",
    )


class SiteHeaders(BaseModel):
    """A site's default request headers, one line in its settings:
    ``SiteHeaders(family="mobile", headers={"Accept-Language": "de-DE,de;q=0.9"})``.

    The family picks a current browser's User-Agent with its Accept, Accept-Language
    and the Accept-Encoding the fetch decodes (``user_agent.headers``); ``headers`` go
    over those. Resource providers (a pooled agent, cookies, a signature) still go over
    both, per unit.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    family: Literal["desktop", "mobile"] | None = Field(
        None, description="Browser family of the default headers; None: the cluster's "
        "default (HEADERS_FAMILY).")
    headers: dict[str, str] = Field(
        default_factory=dict, description="Headers every request of the site carries unless "
        "its step or a provider sets them.")


class HeaderSettings(BaseSettings):
    """Default request headers: never a library's agent, always a browser's."""

    model_config = SettingsConfigDict(env_prefix="HEADERS_", extra="ignore")

    family: Literal["desktop", "mobile"] = Field(
        "desktop", description="Browser family for sites that declare none.")
    sites: dict[str, SiteHeaders] = Field(
        default_factory=dict, description="Per-site overrides of the site's declared headers, "
        'as JSON: {"demo": {"family": "mobile", "headers": {"Accept-Language": "de"}}}.')

    def for_site(self, site: str, declared: SiteHeaders | None = None) -> SiteHeaders:
        """What a site's requests start from: the override, else its declaration, with
        the cluster's family where neither names one."""
        family, headers = self.resolved(site, declared)
        return SiteHeaders(family=family, headers=headers)

    def resolved(self, site: str, declared: SiteHeaders | None = None,
                 ) -> tuple[str, dict[str, str]]:
        """``for_site`` as its family and headers, without building a model (it runs
        for every request)."""
        chosen = self.sites.get(site) or declared
        if chosen is None:
            return self.family, {}
        return chosen.family or self.family, chosen.headers


class RobotsSettings(BaseSettings):
    """robots.txt (``external_interface.robots``): obeyed by default, cached for the cluster."""

    model_config = SettingsConfigDict(env_prefix="ROBOTS_", extra="ignore")

    obey: bool = Field(True, description="Obey robots.txt; a site may opt out in its settings.")
    user_agent: str = Field(
        "crawlchain", description="The token robots.txt groups are matched against (the "
        "requests themselves carry a browser's User-Agent).")
    cache_ttl_s: float = Field(86_400.0, gt=0, description="How long a fetched robots.txt is "
                               "used before it is fetched again (Google: 24 h).")
    error_backoff_s: float = Field(
        60.0, gt=0, description="After a 5xx, 429 or no answer, everything is disallowed for "
        "this long, then robots.txt is fetched again.")
    allow_after_s: float = Field(
        60.0, ge=0, description="A robots.txt failing for this long allows everything (still "
        "fetched again every back-off): a site that does not answer at all fails its units "
        "within TASK_GIVE_UP_S instead of waiting on its robots.txt.")
    keep_stale_s: float = Field(
        86_400.0, ge=0, description="A robots.txt parsed before a failure is used instead of "
        "disallowing, while it is younger than this.")
    claim_wait_s: float = Field(
        10.0, gt=0, description="How long a process waits for another one's fetch of the same "
        "robots.txt before fetching it itself.")
    memory_origins: int = Field(
        10_000, ge=1, description="Origins whose parsed robots.txt each process keeps in memory.")


class SitemapSettings(BaseSettings):
    """Bounds on reading sitemaps (``external_interface.sitemap``), on top of the fetch's."""

    model_config = SettingsConfigDict(env_prefix="SITEMAP_", extra="ignore")

    max_entries_per_file: int = Field(
        50_000, ge=1, description="Entries read from one file (the protocol's limit).")
    max_entries_total: int = Field(
        1_000_000, ge=1, description="Entries read from one start sitemap and its children.")
    max_depth: int = Field(
        2, ge=0, description="Indexes followed below a start sitemap (an index of indexes "
        "is outside the protocol but exists).")
    max_files: int = Field(1_000, ge=1, description="Files read from one start sitemap.")
    max_decoded_bytes: int = Field(
        50 * 1024 * 1024, ge=1, description="Cap on a gzip sitemap once gunzipped (the "
        "protocol's 50 MiB); past it the file fails, so a gzip bomb stops there.")


class HttpCacheSettings(BaseSettings):
    """The development HTTP cache (``external_interface.http_cache``): off by default."""

    model_config = SettingsConfigDict(env_prefix="HTTP_CACHE_", extra="ignore")

    enabled: bool = Field(
        False, description="Replay stored responses instead of fetching (for reworking a "
        "parser against the same pages; never in production).")
    dir: str = Field(default_factory=lambda: str(_home() / "run" / "http-cache"),
                     description="Where entries are stored, one file each.")
    statuses: list[int] = Field(
        default_factory=list, description="Statuses stored, as JSON ([200, 404]); empty: "
        "every 2xx.")
    max_age_s: float = Field(0.0, ge=0, description="How long an entry is replayed; 0: for ever.")


class PolitenessSettings(BaseSettings):
    """Cluster-wide politeness: how waits for a site's slot are handled."""

    model_config = SettingsConfigDict(env_prefix="POLITE_", extra="ignore")

    sites: dict[str, Politeness] = Field(
        default_factory=dict, description="Per-site overrides of the site's declared "
        'politeness, as JSON: {"demo": {"rate_per_s": 20, "max_concurrency": 8}}.')
    max_inline_wait_s: float = Field(
        1.0, description="Longest in-process sleep for a slot; longer waits re-schedule the unit.")
    max_wait_s: float = Field(
        300.0, description="Cap on a politeness countdown; below the visibility timeout.")
    lease_ttl_s: float | None = Field(
        None, gt=0, description="A concurrency slot of a killed worker frees itself after "
        "this; default: FETCH_DEADLINE_S plus 10 s, the longest a fetch can hold it.")
    max_penalty_s: float = Field(
        60.0, description="Cap on a 429 cooldown, whatever Retry-After says.")
    default_penalty_s: float = Field(5.0, description="Cooldown after a 429 without Retry-After.")


class ThrottleSettings(BaseSettings):
    """The adaptive throttle (``politeness.throttle``): one controller per site or host for
    the whole cluster, for sites that declare no rate. A declared rate is its ceiling."""

    model_config = SettingsConfigDict(env_prefix="THROTTLE_", extra="ignore")

    enabled: bool = Field(True, description="Adapt the rate of sites that declare none; off: "
                          "such sites are fetched as fast as the workers go.")
    start_rate_per_s: float = Field(
        8.0, gt=0, description="Rate of a new key before its first answers arrive.")
    start_concurrency: int = Field(
        4, ge=1, description="Requests in flight at a new key; grows by one per good "
        "answer (doubles every round trip) until the first sign of trouble.")
    min_rate_per_s: float = Field(0.5, gt=0, description="The rate never falls below this.")
    max_rate_per_s: float = Field(10_000.0, gt=0, description="The rate never rises above this.")
    max_concurrency: int = Field(64, ge=1, description="Most requests in flight at one key, "
                                 "across the cluster. A key whose slow start reaches it with "
                                 "no sign of trouble is open: no slot is taken per request "
                                 "(the fetch threads are the limit) until its first signal.")
    max_retry_after_s: float = Field(
        30.0, ge=0, description="Cap on a Retry-After honoured for the whole key (a unit "
        "waits for it through the limiter, so POLITE_MAX_WAIT_S caps its countdown).")
    hold_s: float = Field(
        1.0, gt=0, description="At most one decrease per this long (or two round trips, if "
        "shorter), so one overload is not punished many times.")
    plateau_s: float = Field(
        5.0, gt=0, description="How long the rate holds below a confirmed ceiling before "
        "probing above it; doubles with each confirmation, up to 60 s.")
    latency_factor: float = Field(
        3.0, gt=1, description="Latency above this many times its baseline (plus the slack) "
        "slows the key down.")
    latency_slack_s: float = Field(
        0.05, ge=0, description="Latency rises smaller than this never count.")
    forget_s: float = Field(
        120.0, gt=0, description="A key nobody fetched from or asked about for this long "
        "starts afresh (slow start, no learnt rate or ceiling): a past defence does not slow "
        "the next job. Raise it for sites that punish a new burst after a pause.")
    refresh_s: float = Field(
        0.25, ge=0, description="How long a process uses its copy of a key's policy before "
        "asking Redis again (each batch of observations refreshes it too); 0: every time.")


class TaskSettings(BaseSettings):
    """Retry and time policy shared by every crawl task."""

    model_config = SettingsConfigDict(env_prefix="TASK_", extra="ignore")

    max_retries: int = Field(5, description="Transient failures retried this often, then failed.")
    max_timeout_retries: int = Field(
        1, ge=0, description="A unit whose last try timed out (no answer within "
        "FETCH_READ_TIMEOUT_S or FETCH_DEADLINE_S) is retried at most this often, then failed: "
        "a URL that hung once mostly hangs again, and each try holds a fetch slot for the "
        "whole timeout (Scrapy retries any failure twice).")
    backoff_base_s: float = Field(1.0, description="First retry delay; doubles each retry.")
    backoff_max_s: float = Field(60.0, description="Cap on one retry delay, Retry-After included.")
    soft_time_limit_s: int = Field(
        120, description="A message's soft limit: unfinished units are retried past it."
    )
    time_limit_s: int = Field(
        150, description="Hard limit: the pool child is killed and its units retried."
    )
    unit_threads: int = Field(
        16, ge=1, description="Threads per worker process that fetch a batch's units at once."
    )
    max_fetches: int = Field(
        0, ge=0, description="Most fetches in flight per worker process; 0: no cap beyond the "
        "pool and unit threads. With more pool threads than this, parsing, saving and "
        "hand-off overlap other units' fetches, as Scrapy's CONCURRENT_REQUESTS caps "
        "requests, not callbacks.")
    give_up_s: float = Field(
        120.0, gt=0, description="A unit that meets only transient errors (no answer, "
        "resets, 5xx) fails for good this long after its first attempt, naming the host and "
        "the error, even with retries left; robots.txt that does not answer stops blocking "
        "within it too. Raise it for slow sites.")
    max_deliveries: int = Field(
        5,
        description="A unit started this often without finishing (its worker child died each "
        "time) fails for good as a poison unit instead of looping.",
    )


class FetchSettings(BaseSettings):
    """Bounds on every HTTP fetch."""

    model_config = SettingsConfigDict(env_prefix="FETCH_", extra="ignore")

    connect_timeout_s: float = Field(5.0, description="TCP connect (and TLS) timeout.")
    read_timeout_s: float = Field(15.0, description="Longest silence between two received bytes.")
    deadline_s: float = Field(
        30.0, description="Wall-clock bound on one fetch, redirects and slow drips included."
    )
    max_body_bytes: int = Field(
        10 * 1024 * 1024, description="Cap on decoded body bytes; larger responses fail."
    )
    max_redirects: int = Field(5, description="Redirect hops followed before giving up.")
    ssrf_guard: bool = Field(
        False, description="Refuse hosts resolving to loopback, private, link-local, multicast "
        "or metadata addresses, checked at connect time on every redirect hop.")
    ssrf_allow: list[str] = Field(
        default_factory=list, description='CIDRs or ip:port the guard lets through, as JSON: '
        '["127.0.0.1:8765"] for the sandbox.')
    ca_file: str = Field(
        "", description="A PEM file of the CAs HTTPS certificates are checked against, "
        "instead of certifi's bundle (a company's own CA); every fetch client uses it.")


class ResourceSettings(BaseSettings):
    """Resource providers: pools, rotation budget, waits for an empty pool, refills."""

    model_config = SettingsConfigDict(env_prefix="RESOURCES_", extra="ignore")

    backend: Literal["redis", "memory"] = Field(
        "redis", description="Where proxy, cookie and device pools live: redis (shared by the "
        "cluster) or memory (one process: scripts and single-process tools).")
    user_agents: Literal["bundled", "redis"] = Field(
        "bundled", description="User agents from the bundled list, or from Redis (one list per "
        "family for the cluster, seeded from the bundled one).")
    max_rotations: int = Field(
        8, ge=0, description="A unit met a ban or an expired session this often (each time on "
        "a fresh resource) fails for good (RotationsSpent).")
    max_waits: int = Field(
        60, ge=0, description="A unit deferred this often for an empty pool fails for good "
        "(NoResource).")
    wait_s: float = Field(
        1.0, gt=0, description="Countdown of a unit deferred for an empty pool, when the pool "
        "cannot say when a member is back.")
    refill_below: int = Field(
        1, ge=0, description="A lease that leaves this few members ready launches the site's "
        "refill chain (a login, a registration); an empty pool always does.")
    refill_lock_s: float = Field(
        30.0, gt=0, description="At most one refill per pool in flight; a refill that has not "
        "delivered after this long may be launched again.")
    disabled_sites: list[str] = Field(
        default_factory=list, description='Sites whose declared providers are ignored, as JSON '
        '(["demo"]): a site that stopped defending, or the undefended test sandbox.')


References = Annotated[list[str], NoDecode]  # JSON or comma-separated: see its validator


class ExtensionSettings(BaseSettings):
    """The cluster's own item pipelines, middlewares and observers: they apply to every
    site, before a site's own (``chains.runtime.extensions``). Each is a ``module:name``
    reference to a class (built with no arguments) or an instance, importable on every
    worker; a list is JSON or comma-separated."""

    model_config = SettingsConfigDict(extra="ignore")

    item_pipelines: References = Field(
        default_factory=list, description="Item pipelines, in order: each item of every "
        "site passes through them before the site's own and the store.")
    middlewares: References = Field(
        default_factory=list, description="Request and response middlewares, in order, "
        "before every site's own.")
    observers: References = Field(
        default_factory=list, description="Observers of every job, batch and unit, after "
        "the runtime's own (metrics, throttle feedback, pool refills).")

    @field_validator("item_pipelines", "middlewares", "observers", mode="before")
    @classmethod
    def _json_or_commas(cls, value: object) -> object:
        """``["a:B", "c:D"]`` or ``a:B,c:D``."""
        if not isinstance(value, str):
            return value
        text = value.strip()
        if text.startswith("["):
            return json.loads(text)
        return [part.strip() for part in text.split(",") if part.strip()]


class ProxySettings(BaseSettings):
    """Where the cluster's proxies come from and how long a burnt one rests."""

    model_config = SettingsConfigDict(env_prefix="PROXY_", extra="ignore")

    urls: list[str] = Field(
        default_factory=list, description='A static list of proxy URLs, as JSON '
        '(["http://user:pw@10.0.0.7:3128"]).')
    file: str | None = Field(None, description="A file of proxy URLs, one a line, read again "
                             "on every refresh.")
    endpoint: str | None = Field(
        None, description="An HTTP endpoint answering a JSON list, {\"proxies\": [...]} or "
        "text one a line (a vendor's API).")
    refresh_s: float = Field(300.0, gt=0, description="How often the sources are read again.")
    ban_cooldown_s: float = Field(
        120.0, ge=0, description="How long a proxy rests after a ban (three bans retire it).")
    fail_cooldown_s: float = Field(
        10.0, ge=0, description="How long a proxy rests after a network error through it, or a "
        "429 without Retry-After.")


class TLSSettings(BaseSettings):
    """The files of one kind of TLS link; the server's certificate is always verified."""

    ca_file: str | None = Field(
        None, description="PEM file of the CA that signed the servers' certificates; unset: "
        "the system's trusted CAs.")
    cert_file: str | None = Field(
        None, description="PEM certificate this host shows to the server, when the server "
        "asks for one; unset: none.")
    key_file: str | None = Field(None, description="The private key of the certificate.")
    check_hostname: bool = Field(
        True, description="Check that the server's certificate names the host of the URL.")

    def files(self, names: tuple[str, str, str]) -> dict[str, str]:
        """The CA, certificate and key files that are set, under the client's ``names``."""
        given = (self.ca_file, self.cert_file, self.key_file)
        return {name: path for name, path in zip(names, given, strict=True) if path}


class RedisTLSSettings(TLSSettings):
    """TLS of every ``rediss://`` link (the broker, the state plane, the dedup marks): the
    server's certificate is always verified, and this host shows its own when one is
    named (a server with ``tls-auth-clients yes`` asks). The state and dedup URLs get the
    files as the ``ssl_*`` parameters redis-py reads, so every client built from them uses
    them (a parameter the URL names itself wins); the broker gets them as Celery's
    ``broker_use_ssl``. A ``redis://`` or ``unix://`` URL is left as it is."""

    model_config = SettingsConfigDict(env_prefix="REDIS_TLS_", extra="ignore")
    NAMES: ClassVar[tuple[str, str, str]] = ("ssl_ca_certs", "ssl_certfile", "ssl_keyfile")

    def url(self, url: str) -> str:
        """``url`` with the TLS parameters of these settings, when it is ``rediss://``."""
        parts = urlsplit(url)
        if parts.scheme != "rediss":
            return url
        given = dict(parse_qsl(parts.query))
        wanted = {**self.files(self.NAMES), "ssl_cert_reqs": "required",
                  "ssl_check_hostname": str(self.check_hostname).lower()}
        return urlunsplit(parts._replace(query=urlencode({**wanted, **given})))

    def options(self) -> dict[str, Any]:
        """The same as redis-py's keyword arguments: Celery's ``broker_use_ssl`` for a
        ``rediss://`` broker (Celery reads ``CELERY_BROKER_URL`` itself, as it was given)."""
        import ssl

        return {**self.files(self.NAMES), "ssl_cert_reqs": ssl.CERT_REQUIRED,
                "ssl_check_hostname": self.check_hostname}


class AmqpTLSSettings(TLSSettings):
    """TLS of an ``amqps://`` broker link (RabbitMQ): the server's certificate is always
    verified, against this CA or the system's; a client certificate when one is named
    (a server with ``ssl_options.fail_if_no_peer_cert = true`` asks)."""

    model_config = SettingsConfigDict(env_prefix="AMQP_TLS_", extra="ignore")
    NAMES: ClassVar[tuple[str, str, str]] = ("ca_certs", "certfile", "keyfile")  # py-amqp

    def options(self) -> dict[str, Any]:
        """py-amqp's ``ssl`` options (Celery's ``broker_use_ssl``) for these files."""
        import ssl

        return {**self.files(self.NAMES), "cert_reqs": ssl.CERT_REQUIRED,
                # None: kombu puts the URL's host here, which turns the name check on
                **({"server_hostname": None} if self.check_hostname else {})}


class ApiSettings(BaseSettings):
    """The job API and its console (``python -m api``, ``./control.sh start api``)."""

    model_config = SettingsConfigDict(env_prefix="API_", extra="ignore")

    token: str = Field(
        "", description="The bearer token every request needs; ./control.sh start api "
        "writes a new one into the cluster's env file (mode 600) when there is none.")
    host: str = Field("127.0.0.1", description="Address the server binds; 0.0.0.0 only "
                      "behind a firewall or a TLS proxy.")
    port: int = Field(8780, ge=0, le=65535, description="Port the server binds; 0: any free "
                      "one (the log says which).")
    allowed_origins: list[str] = Field(
        default_factory=list, description='Origins besides the server\'s own that may send '
        'state-changing requests, as JSON (["https://crawl.example.org"]): the address a '
        "reverse proxy serves the console on.")
    inspect_timeout_s: float = Field(
        1.0, gt=0, description="How long the workers view waits for workers to answer.")


class BrowserSettings(BaseSettings):
    """The system Chromium (Debian's ``chromium``, which ``./control.sh setup`` installs as
    root) for whatever drives a real browser: the console's test, a browser client."""

    model_config = SettingsConfigDict(env_prefix="BROWSER_", extra="ignore")

    executable: str | None = Field(
        None, description="Path of the Chromium to run; unset: chromium, chromium-browser or "
        "google-chrome, the first on PATH.")
    pages: int = Field(
        8, ge=1, description="Pages a worker process renders at once (its one browser's).")
    renderers: int = Field(
        0, ge=0, description="Renderer processes a browser runs its pages in (Chromium's "
        "--renderer-process-limit); 0: one per CPU core, past which more only cost memory.")
    site_pages: int = Field(
        16, ge=1, description="Browser pages in flight per site across the cluster: browsers "
        "are the expensive resource (a slot like a site's max_concurrency).")
    recycle_pages: int = Field(
        500, ge=1, description="A browser is replaced after rendering this many pages.")
    recycle_mb: int = Field(
        1024, ge=64, description="A browser whose processes hold more than this (MB, their "
        "PSS: shared pages counted once) is replaced (checked every few pages).")
    launch_timeout_s: float = Field(
        30.0, gt=0, description="Longest wait for Chromium to start.")

    def chromium(self) -> str | None:
        """The executable to run, or None when there is none here."""
        import shutil

        if self.executable:
            return self.executable if Path(self.executable).is_file() else None
        found = (shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome"))
        return next((path for path in found if path), None)


SettingsModel = TypeVar("SettingsModel", bound=BaseSettings)


def read(model: type[SettingsModel], env_file: Path | None = None) -> SettingsModel:
    """``model`` read from the environment (and ``env_file``); a bad value is a
    ``ValueError`` naming the variable, with URL passwords masked: pydantic quotes the
    value it refused, and ``PROXY_URLS`` or a Redis URL carry passwords."""
    try:
        return model(_env_file=env_file)
    except ValidationError as exc:
        raise SettingError(_one_line(model, exc)) from None
    except SettingsError as exc:
        prefix = str(model.model_config.get("env_prefix", ""))
        raise SettingError(f"{prefix}*: {exc}".replace("\n", " ")) from None


class SettingError(ValueError):
    """A setting's value is refused: one line naming the variable, what it should be and
    where it was read from (URL passwords masked)."""

    def __init__(self, message: str) -> None:
        super().__init__(redact_text(message))


def _one_line(model: type[BaseSettings], exc: ValidationError) -> str:
    """``TASK_MAX_RETRIES='abc': Input should be a valid integer: fix it in the
    environment or ...``: the first refused variable, by its environment name."""
    prefix = str(model.model_config.get("env_prefix", ""))
    first = exc.errors()[0]
    name = (prefix + str(first["loc"][0])).upper() if first["loc"] else f"{prefix}*"
    more = len(exc.errors()) - 1
    return (f"{name}={first.get('input')!r}: {first['msg']}"
            + (f" (and {more} more)" if more > 0 else "")
            + ": fix it in the environment or the cluster's env file (CRAWLCHAIN_ENV_FILE)")


class Settings:
    """All concerns together; each is read from the environment when built."""

    def __init__(self) -> None:
        env = cluster_env_file()  # the environment wins over the file, as in control.sh
        self.env_file = env  # sites' settings are read from it too, at each launch
        self.redis_tls = read(RedisTLSSettings, env)
        self.amqp_tls = read(AmqpTLSSettings, env)
        self.broker = read(BrokerSettings, env)  # its TLS: broker_options' broker_use_ssl
        self.state = self._with_tls(read(StateSettings, env), "redis_url")
        self.launch = read(LaunchSettings, env)
        self.revive = read(ReviveSettings, env)
        self.storage = read(StorageSettings, env)
        self.dedup = self._with_tls(read(DedupSettings, env), "redis_url")
        self.politeness = read(PolitenessSettings, env)
        self.task = read(TaskSettings, env)
        self.fetch = read(FetchSettings, env)
        self.resources = read(ResourceSettings, env)
        self.proxy = read(ProxySettings, env)
        self.headers = read(HeaderSettings, env)
        self.throttle = read(ThrottleSettings, env)
        self.robots = read(RobotsSettings, env)
        self.sitemap = read(SitemapSettings, env)
        self.http_cache = read(HttpCacheSettings, env)
        self.extensions = read(ExtensionSettings, env)
        self.browser = read(BrowserSettings, env)
        self.check()

    def _with_tls(self, model: SettingsModel, field: str) -> SettingsModel:
        """``model`` with its Redis URL carrying the ``REDIS_TLS_*`` files (``rediss://``)."""
        url = getattr(model, field)
        if url is None:
            return model
        return model.model_copy(update={field: self.redis_tls.url(url)})

    @property
    def lease_ttl_s(self) -> float:
        """How long a concurrency slot stays taken by a holder that never gave it back
        (a worker killed mid-fetch, a release lost with its Redis): only as long as a
        fetch may last, or a site throttled to a few requests in flight waits on a dead
        worker's slots for minutes."""
        explicit = self.politeness.lease_ttl_s
        return explicit if explicit is not None else self.fetch.deadline_s + LEASE_MARGIN_S

    def check(self) -> None:
        """Refuse settings under which Redis would deliver a unit twice: every wait a unit
        can be given (time limit, retry, politeness countdown, 429 cooldown) must end
        before an unacked message is handed to another worker; a lease shorter than a
        fetch, which would let a site's concurrency cap be exceeded; and a TLS file that
        is not there (named now, not at the first connection of a worker)."""
        for tls in (self.redis_tls, self.amqp_tls):
            prefix = str(tls.model_config.get("env_prefix", ""))
            for name in ("ca_file", "cert_file", "key_file"):
                path = getattr(tls, name)
                if path and not Path(path).is_file():
                    raise SettingError(f"{prefix}{name.upper()}={path}: no such file")
            if bool(tls.cert_file) != bool(tls.key_file):
                raise SettingError(f"{prefix}CERT_FILE and {prefix}KEY_FILE go together: a "
                                   "client certificate needs its key")
        if self.lease_ttl_s <= self.fetch.deadline_s:
            raise SettingError(
                f"POLITE_LEASE_TTL_S={self.lease_ttl_s} must exceed FETCH_DEADLINE_S="
                f"{self.fetch.deadline_s}: a slow fetch would outlive its concurrency slot")
        waits = {
            "TASK_TIME_LIMIT_S": self.task.time_limit_s,
            "TASK_BACKOFF_MAX_S": self.task.backoff_max_s,
            "POLITE_MAX_WAIT_S": self.politeness.max_wait_s,
            "POLITE_MAX_PENALTY_S": self.politeness.max_penalty_s,
            "RESOURCES_WAIT_S": self.resources.wait_s,
        }
        too_long = {name: s for name, s in waits.items()
                    if s >= self.broker.visibility_timeout}
        if too_long:
            raise SettingError(
                f"CELERY_VISIBILITY_TIMEOUT={self.broker.visibility_timeout} must exceed "
                + ", ".join(f"{name}={s}" for name, s in too_long.items())
                + ": a unit waiting that long would be delivered twice")


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """Settings of this process, read once on first use (never at import)."""
    return Settings()
