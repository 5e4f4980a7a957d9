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

from config import PolitenessSettings
from external_interface.politeness import Politeness
from external_interface.providers import Gear, SiteProviders


@lru_cache(maxsize=64)
def declared_politeness(site: str) -> Politeness | None:
    """``sites.<site>.POLITENESS``, or None when the site declares none."""
    policy = getattr(importlib.import_module(f"sites.{site}"), "POLITENESS", None)
    if policy is not None and not isinstance(policy, Politeness):
        raise TypeError(f"sites.{site}.POLITENESS must be a Politeness, not {type(policy)}")
    return policy


def site_politeness(site: str, settings: PolitenessSettings) -> Politeness | None:
    """The policy in force for a site: the environment's override, else the site's own."""
    return settings.sites.get(site) or declared_politeness(site)


@lru_cache(maxsize=64)
def declared_providers(site: str) -> SiteProviders | None:
    """``sites.<site>.PROVIDERS``, or None when the site declares none."""
    declared = getattr(importlib.import_module(f"sites.{site}"), "PROVIDERS", None)
    if declared is not None and not isinstance(declared, SiteProviders):
        raise TypeError(f"sites.{site}.PROVIDERS must be a SiteProviders, not {type(declared)}")
    return declared


@lru_cache(maxsize=256)
def task_gear(task_name: str, disabled: tuple[str, ...] = ()) -> Gear | None:
    """What a task's requests go through, or None (then they are fetched as built)."""
    site = task_name.split(".", 1)[0]
    declared = None if site in disabled else declared_providers(site)
    uses = declared.uses_for(task_name) if declared is not None else None
    return Gear(site, declared, uses) if declared is not None and uses is not None else None
