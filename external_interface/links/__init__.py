"""Links for a generic crawl: a page's record fields in one pass, and the site filter.

    page = extract_page(response)                 # title, description, canonical, links
    keep = SameSite(["example.org"])              # registrable domains, tldextract offline
    follow = [url for url in page.links if keep(url)]

Index pages hold tens of thousands of links, so both are built for speed: see
``links.extract`` and ``links.domains``.
"""

from __future__ import annotations

from external_interface.links.domains import SameSite, registrable_domain, same_site
from external_interface.links.extract import PageLinks, extract_page

__all__ = ["PageLinks", "SameSite", "extract_page", "registrable_domain", "same_site"]
