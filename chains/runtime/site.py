"""What a site declares once, beside its steps: settings, politeness, headers, robots, providers,
hooks.

    class Settings(SiteSettings):
        base_url: str = "http://127.0.0.1:8765/forum"

    SITE = Site("forum", settings=Settings, politeness=Politeness(rate_per_s=5))

or, for a site whose only knob is where it lives, ``Site("forum", base_url="http://...")``.

The open web's defaults need no declaration: every request carries a current
browser's User-Agent with its Accept headers (``headers=SiteHeaders(family="mobile",
headers={...})`` changes them in one line; resource providers still override them per
unit), robots.txt is obeyed (``robots=False`` opts out) and its ``Crawl-delay`` caps
the site's rate, and a site that declares no ``politeness`` gets the adaptive
throttle, shared by the cluster (a declared one is its hard ceiling).

``SITE`` may sit in any module of the site's package (the registry finds it); a site
that declares none gets ``Site(name)``: no politeness of its own, no providers, no
hooks. Settings are the site's knobs, like Scrapy's ``custom_settings``, but per
launch, not per process: ``chain.launch(base_url=...)`` (or the environment,
``FORUM_BASE_URL``, read by the launcher) fixes them for the job, and every unit of
the job sees the same values on every worker. Secrets (passwords, keys) do not belong
here: they would travel with the job; a site reads those from its workers'
environment.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from config import HeaderSettings, Politeness, SiteHeaders, cluster_env_file

if TYPE_CHECKING:
    from external_interface.http import Request, Response
    from external_interface.providers.declare import SiteProviders
    from external_interface.storage import Item


class SiteSettings(BaseSettings):
    """A site's knobs; subclass it with fields and defaults. ``base_url`` is where the
    site lives: URL templates read it as ``{base_url}``."""

    model_config = SettingsConfigDict(extra="ignore")

    base_url: str = ""
    http_cache: bool = False  # the job's fetches go through the development cache

    @field_validator("base_url")
    @classmethod
    def _no_trailing_slash(cls, value: str) -> str:
        """``{base_url}/path`` reads right whether the URL was given with a slash or not."""
        return value.rstrip("/")


class Signal(Enum):
    """What a hook tells the pipeline to do with the unit next."""

    CONTINUE = "continue"
    SKIP = "skip"  # end the unit as skipped, with the hook's name as the reason
    RETRY = "retry"  # a transient failure: retried with backoff
    ABORT = "abort"  # fail the unit for good


@dataclass(frozen=True)
class UnitContext:
    """What a hook sees of the unit at hand."""

    job_id: str
    step: str  # the chain's name for the step
    task: str  # the step's full name, ``site.platform.step``
    unit_id: str
    params: BaseModel
    depth: int
    settings: SiteSettings


class Hooks:
    """A site's lifecycle hooks, every one a no-op that says ``CONTINUE``.

    Subclass and override what you need; declare an instance on the ``Site``. Hooks
    run in the worker, ``before_request`` in the threads that fetch; they must be
    thread-safe and quick.

        class ForumHooks(Hooks):
            def before_request(self, unit, request):
                return Signal.SKIP if "/archive/" in request.url else Signal.CONTINUE
    """

    def before_request(self, unit: UnitContext, request: Request) -> Signal:
        """Before the fetch, after the providers dressed the request. SKIP ends the unit
        unfetched; RETRY retries it with backoff; ABORT fails it."""
        return Signal.CONTINUE

    def after_request(self, unit: UnitContext, response: Response) -> Signal:
        """After a response the status check accepted, before parsing. A page that
        looks like a soft block can be RETRY'd here."""
        return Signal.CONTINUE

    def before_save(self, unit: UnitContext, items: list[Item]) -> Signal:
        """After parsing, before the items are stored. SKIP stores nothing and spawns
        nothing; the unit ends skipped."""
        return Signal.CONTINUE

    def after_save(self, unit: UnitContext, items: list[Item]) -> Signal:
        """After the items are durable. SKIP is moot here (nothing is undone); RETRY
        and ABORT still act (the items stay stored: upserts make that harmless)."""
        return Signal.CONTINUE


@dataclass(frozen=True)
class Site:
    """A site's declaration. ``name`` is the first part of its steps' names and its
    folder under ``sites/``; its queue unless a step says otherwise.

    ``headers``: the browser family and fixed headers of its requests (default: a
    desktop browser's, ``HEADERS_FAMILY``; ``HEADERS_SITES`` overrides per site).
    ``robots``: obey robots.txt (``ROBOTS_OBEY=false`` turns it off everywhere).
    ``politeness_per``: one politeness bucket and throttle for the whole site, or one
    per host its requests go to (a generic crawl spanning many hosts).
    """

    name: str
    settings: type[SiteSettings] = SiteSettings
    base_url: str = ""  # the default of ``settings.base_url`` when it declares none
    politeness: Politeness | None = None
    providers: SiteProviders | None = None
    hooks: Hooks = field(default_factory=Hooks)
    headers: SiteHeaders | None = None
    robots: bool = True
    politeness_per: Literal["site", "host"] = "site"

    def read_settings(self, env_file: Path | None = None, **overrides: Any) -> SiteSettings:
        """The settings a launch fixes: ``overrides``, then ``<NAME>_<FIELD>`` from the
        environment, then the cluster's env file (``env_file``; by default the one
        ``CRAWLCHAIN_ENV_FILE`` names), then the defaults."""
        unknown = sorted(set(overrides) - set(self.settings.model_fields))
        if unknown:
            raise ValueError(f"site {self.name!r} has no setting {', '.join(unknown)} "
                             f"(settings: {', '.join(self.settings.model_fields)})")
        read = self.settings(_env_prefix=f"{self.name.upper()}_",
                             _env_file=env_file or cluster_env_file(), **overrides)
        if not read.base_url and self.base_url:
            return read.model_copy(update={"base_url": self.base_url.rstrip("/")})
        return read

    def dress(self, request: Request, cluster: HeaderSettings, key: str) -> Request:
        """``request`` under the site's default browser headers (its own headers win;
        providers go over both). ``key`` (a unit id) picks the browser, so a unit keeps
        one identity across retries and workers."""
        from external_interface.user_agent.headers import headers_for  # not for a parser

        headers = headers_for(*cluster.resolved(self.name, self.headers), key)  # a new dict
        if request.headers:
            own = {name.lower() for name in request.headers}
            headers = {k: v for k, v in headers.items() if k.lower() not in own} | \
                request.headers
        return request.but(headers=headers)

    def stored_settings(self, stored: dict[str, Any]) -> SiteSettings:
        """The settings a launch stored with its job, as every unit of the job sees them."""
        return self.settings.model_validate(stored)
