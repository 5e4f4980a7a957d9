"""One folder per site, one folder per platform, one task per file: ``<site>.<platform>.<step>``.

A site's package may declare ``POLITENESS`` (a ``Politeness``): the rate and the
concurrency the whole cluster keeps towards it. ``POLITE_SITES`` overrides it.
It may declare ``PROVIDERS`` (a ``SiteProviders``): the user agents, cookies,
device ids, proxies, captcha solver and signer its steps' requests go through.
``RESOURCES_DISABLED_SITES`` turns a site's providers off.
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from typing import TypeVar

from config import PolitenessSettings
from external_interface.politeness import Politeness
from external_interface.providers import Gear, SiteProviders

T = TypeVar("T")


def _declared(site: str, name: str, kind: type[T]) -> T | None:
    """``sites.<site>.<name>``, checked to be a ``kind``; None when the site declares none."""
    value = getattr(importlib.import_module(f"sites.{site}"), name, None)
    if value is not None and not isinstance(value, kind):
        raise TypeError(f"sites.{site}.{name} must be a {kind.__name__}, not {type(value)}")
    return value


@lru_cache(maxsize=64)
def declared_politeness(site: str) -> Politeness | None:
    """``sites.<site>.POLITENESS``, or None when the site declares none."""
    return _declared(site, "POLITENESS", Politeness)


def site_politeness(site: str, settings: PolitenessSettings) -> Politeness | None:
    """The policy in force for a site: the environment's override, else the site's own."""
    return settings.sites.get(site) or declared_politeness(site)


@lru_cache(maxsize=64)
def declared_providers(site: str) -> SiteProviders | None:
    """``sites.<site>.PROVIDERS``, or None when the site declares none."""
    return _declared(site, "PROVIDERS", SiteProviders)


@lru_cache(maxsize=256)
def task_gear(task_name: str, disabled: tuple[str, ...] = ()) -> Gear | None:
    """What a task's requests go through, or None (then they are fetched as built)."""
    site = task_name.split(".", 1)[0]
    declared = None if site in disabled else declared_providers(site)
    uses = declared.uses_for(task_name) if declared is not None else None
    return Gear(site, declared, uses) if declared is not None and uses is not None else None
