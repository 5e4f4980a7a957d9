"""One folder per site, one folder per platform, one task per file: ``<site>.<platform>.<step>``.

A site's package may declare ``POLITENESS`` (a ``Politeness``): the rate and the
concurrency the whole cluster keeps towards it. ``POLITE_SITES`` overrides it.
"""

from __future__ import annotations

import importlib
from functools import lru_cache

from config import PolitenessSettings
from external_interface.politeness import Politeness


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
