"""Everything a site or a chain file imports: ``from chains.api import Parsed, Response, step``.

Steps and what they read and return:

    step          declare a step: @step(url="{base_url}/thread/{thread_id}")
    Input         the base of a step's input model: class UserRef(Input): user_id: int
    Page          the input of a step that fetches the URL it is given
    Parsed        what a parse returns: items, a follow list, the next page
    Item          a stored record: class Post(Item, collection="posts", key="id")
    Request       what a step sends (a request function returns one)
    Browse        what a browser step does on its page: wait_for, click, scroll, idle,
                  screenshot (@step(client="browser", browse=Browse(wait_for="li.row")))
    Response      what a parse reads: css(), xpath(), json(), text, headers, date, follow()
    UnitContext   the unit at hand (job, step, depth, the job's site settings)

The site's declaration:

    Site          settings, politeness, headers, robots, providers, pipelines, ...
    SiteSettings  a site's knobs, fixed per launch: base_url, ...
    Politeness    a site's rate and concurrency, cluster-wide
    SiteHeaders   a site's default request headers: browser family, fixed headers

Chains, as data:

    Chain, Step, Link   a route table: steps and the fan-out links between them
    Rule                a URL pattern whose pages another step parses too
    RecrawlPolicy       what a recrawl fetches again, per step
    Schedule            launch a chain every so often (celery beat)

Extension points (``chains.runtime.extensions``):

    ItemPipeline, DropItem        change, route or drop items before the store
    Middleware, SkipUnit          change a request before its fetch, a response before its parse
    Observer, JobEvent, UnitClosed, BatchClosed   hear what the runtime did

Errors a parse raises (the tree's branches say what the runtime does with them):
``ParseError``, ``Banned``, ``SessionExpired``, ``TransientError``, ``PermanentError``.

Resource providers a defended site declares: ``SiteProviders``, ``Uses``, ``BanRule``,
``Refill``, ``SessionItem``, ``DeviceItem``, ``HmacSigner``, and a captcha solver's
``Challenge``, ``CaptchaUnsolved``, ``IMAGE_META``.

Helpers a parser uses: ``relative_time``, ``short_number``, ``extract_page`` (a page's
title, description, canonical and links), ``parse_sitemap``, ``AllowedDomains``,
``registrable_domain``, ``SITEMAP_TYPES``.

The resource providers and the helpers are loaded on first use (a parser test that never
declares a proxy pool does not load the pools). Launching is not here: a shell launches
on its cluster with ``chains.cluster.launch``, the command line with ``crawlchain
launch``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from chains.runtime.extensions import (
    BatchClosed,
    DropItem,
    ItemPipeline,
    JobEvent,
    Middleware,
    Observer,
    UnitClosed,
    UnitContext,
)
from chains.runtime.model import Chain, Link, Rule, Step
from chains.runtime.schedule import Schedule
from chains.runtime.site import Site
from chains.runtime.site_settings import SiteSettings
from chains.runtime.step import Input, Page, Parsed, step
from config import Politeness, SiteHeaders
from exceptions import (
    Banned,
    CrawlError,
    ParseError,
    PermanentError,
    SessionExpired,
    SkipUnit,
    TransientError,
)
from external_interface.dedup import RecrawlPolicy
from external_interface.http import SITEMAP_TYPES, Browse, Request, Response
from external_interface.storage import Item

if TYPE_CHECKING:
    from external_interface.captcha import IMAGE_META, CaptchaUnsolved, Challenge
    from external_interface.links.extract import extract_page
    from external_interface.providers.declare import BanRule, Refill, SiteProviders, Uses
    from external_interface.providers.refill import DeviceItem, SessionItem
    from external_interface.sign import HmacSigner
    from external_interface.sitemap import parse_sitemap
    from utils.dates import relative_time
    from utils.domains import AllowedDomains, registrable_domain
    from utils.numbers import short_number

LOADED_ON_USE = {
    "IMAGE_META": "external_interface.captcha", "CaptchaUnsolved": "external_interface.captcha",
    "Challenge": "external_interface.captcha",
    "extract_page": "external_interface.links.extract",
    "BanRule": "external_interface.providers.declare",
    "Refill": "external_interface.providers.declare",
    "SiteProviders": "external_interface.providers.declare",
    "Uses": "external_interface.providers.declare",
    "DeviceItem": "external_interface.providers.refill",
    "SessionItem": "external_interface.providers.refill",
    "HmacSigner": "external_interface.sign", "parse_sitemap": "external_interface.sitemap",
    "relative_time": "utils.dates", "AllowedDomains": "utils.domains",
    "registrable_domain": "utils.domains", "short_number": "utils.numbers",
}


def __getattr__(name: str) -> Any:
    """A provider or helper, imported when a site first names it (PEP 562)."""
    module = LOADED_ON_USE.get(name)
    if module is None:
        raise AttributeError(f"module 'chains.api' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "IMAGE_META", "SITEMAP_TYPES", "AllowedDomains", "BanRule", "Banned", "BatchClosed", "Browse",
    "CaptchaUnsolved", "Chain", "Challenge", "CrawlError", "DeviceItem", "DropItem",
    "HmacSigner", "Input", "Item", "ItemPipeline", "JobEvent", "Link", "Middleware",
    "Observer", "Page", "ParseError", "Parsed", "PermanentError", "Politeness",
    "RecrawlPolicy", "Refill", "Request", "Response", "Rule", "Schedule", "SessionExpired",
    "SessionItem", "Site", "SiteHeaders", "SiteProviders", "SiteSettings", "SkipUnit", "Step",
    "TransientError", "UnitClosed", "UnitContext", "Uses", "extract_page", "parse_sitemap",
    "registrable_domain", "relative_time", "short_number", "step",
]
