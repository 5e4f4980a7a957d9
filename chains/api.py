"""Everything a site imports: ``from chains.api import Item, Parsed, Response, step``.

    step          declare a step: @step("site.platform.step", url="{base_url}/...")
    Parsed        what a parse returns: items, follow lists, the next page
    Page          the input of a step that fetches the URL it is given
    Item          a stored record: class Post(Item, collection="posts", key="id")
    Request       what a step sends (a request function returns one)
    Response      what a parse reads: css(), xpath(), json(), text, headers, date, follow()
    Site          a site's declaration: settings, politeness, providers, hooks
    SiteSettings  a site's knobs, fixed per launch: base_url, ...
    Hooks, Signal, UnitContext    lifecycle hooks and what they answer
    Politeness    a site's rate and concurrency, cluster-wide
    SiteHeaders   a site's default request headers: browser family, fixed headers
"""

from chains.runtime.site import Hooks, Signal, Site, SiteSettings, UnitContext
from chains.runtime.step import Page, Parsed, step
from config import Politeness, SiteHeaders
from external_interface.http import Request, Response
from external_interface.storage import Item

__all__ = ["Hooks", "Item", "Page", "Parsed", "Politeness", "Request", "Response", "Signal", "Site",
           "SiteHeaders", "SiteSettings", "UnitContext", "step"]
