"""What a site declares once, beside its steps: settings, politeness, headers, robots,
providers, and its pipelines, middlewares and observers (``extensions``).

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
pipelines, middlewares or observers but the cluster's. Settings are the site's knobs,
like Scrapy's ``custom_settings``, but per launch, not per process:
``launch(chain, base_url=...)`` (or the environment, ``FORUM_BASE_URL``, read by the
launcher) fixes them for the job, and every unit of the job sees the same values on
every worker. Secrets (passwords, keys) do not belong here: they would travel with the
job; a site reads those from its workers' environment.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from chains.runtime.extensions import ItemPipeline, Middleware, Observer
from chains.runtime.site_settings import SiteSettings
from config import HeaderSettings, Politeness, SiteHeaders, cluster_env_file
from exceptions import UserError
from external_interface.clients import DEFAULT_CLIENT, OWN_IDENTITY, known_client

if TYPE_CHECKING:
    from external_interface.http import Request
    from external_interface.providers.declare import SiteProviders


@dataclass(frozen=True)
class Site:
    """A site's declaration. ``name`` is the first part of its steps' names and its
    folder under ``sites/``; its queue unless a step says otherwise.

    ``headers``: the browser family and fixed headers of its requests (default: a
    desktop browser's, ``HEADERS_FAMILY``; ``HEADERS_SITES`` overrides per site).
    ``robots``: obey robots.txt (``ROBOTS_OBEY=false`` turns it off everywhere).
    ``politeness_per``: one politeness bucket and throttle for the whole site, or one
    per host its requests go to (a generic crawl spanning many hosts).
    ``pipelines``, ``middlewares``, ``observers``: the site's own, after the cluster's
    (``chains.runtime.extensions``).
    ``client``: the fetch client of its steps (``external_interface.clients``): ``http``,
    or ``impersonate`` for a site that refuses a Python client's TLS; a step may name its
    own, and a launch may set ``client`` for the job.
    """

    name: str
    settings: type[SiteSettings] = SiteSettings
    base_url: str = ""  # the default of ``settings.base_url`` when it declares none
    politeness: Politeness | None = None
    providers: SiteProviders | None = None
    headers: SiteHeaders | None = None
    robots: bool = True
    politeness_per: Literal["site", "host"] = "site"
    pipelines: tuple[ItemPipeline, ...] = ()
    middlewares: tuple[Middleware, ...] = ()
    observers: tuple[Observer, ...] = ()
    client: str = DEFAULT_CLIENT

    def __post_init__(self) -> None:
        known_client(self.client, f"site {self.name!r}")
        for name, kind in (("pipelines", ItemPipeline), ("middlewares", Middleware),
                           ("observers", Observer)):
            given = getattr(self, name)
            object.__setattr__(self, name, tuple(given))
            wrong = [type(x).__name__ for x in given if not isinstance(x, kind)]
            if wrong:
                raise TypeError(f"site {self.name!r}: {name} holds {', '.join(wrong)}, not "
                                f"{kind.__name__} instances (subclass {kind.__name__})")

    def client_for(self, step_client: str | None, settings: BaseModel) -> str:
        """The client a step's requests go through: the step's own, else the job's
        ``client`` setting, else the site's."""
        return step_client or getattr(settings, "client", "") or self.client

    def read_settings(self, env_file: Path | None = None, **overrides: Any) -> SiteSettings:
        """The settings a launch fixes: ``overrides``, then ``<NAME>_<FIELD>`` from the
        environment, then the cluster's env file (``env_file``; by default the one
        ``CRAWLCHAIN_ENV_FILE`` names), then the defaults."""
        unknown = sorted(set(overrides) - set(self.settings.model_fields))
        if unknown:
            from utils.names import did_you_mean, listed  # the error's path only

            known = self.settings.model_fields
            raise UserError(f"site {self.name!r} has no setting {unknown[0]}"
                            f"{did_you_mean(unknown[0], known)} (settings: {listed(known)})",
                            f"settings.{unknown[0]}")
        read = self.settings(_env_prefix=f"{self.name.upper()}_",
                             _env_file=env_file or cluster_env_file(), **overrides)
        if not read.base_url and self.base_url:
            return read.model_copy(update={"base_url": self.base_url.rstrip("/")})
        return read

    def with_default_headers(self, request: Request, cluster: HeaderSettings, key: str,
                             client: str = DEFAULT_CLIENT) -> Request:
        """``request`` under the site's default browser headers (its own headers win;
        providers go over both). ``key`` (a unit id) picks the browser, so a unit keeps
        one identity across retries and workers. A ``client`` that sends its own
        browser's identity (``impersonate``) gets the site's fixed headers only."""
        from external_interface.user_agent.headers import headers_for  # not for a parser

        family, own = cluster.resolved(self.name, self.headers)
        headers = headers_for(family, own, key, browser=client not in OWN_IDENTITY)
        if request.headers:
            given = {name.lower() for name in request.headers}
            headers = {k: v for k, v in headers.items() if k.lower() not in given} | \
                request.headers
        return request.replace(headers=headers)

    def stored_settings(self, stored: dict[str, Any]) -> SiteSettings:
        """The settings a launch stored with its job, as every unit of the job sees them."""
        return self.settings.model_validate(stored)
