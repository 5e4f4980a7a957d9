"""Default request headers: a current browser's User-Agent with the headers it sends along.

    default_headers("mobile", key=unit_id)
    # {"User-Agent": "Mozilla/5.0 (iPhone; ...) Safari/604.1", "Accept": "text/html,...",
    #  "Accept-Language": "en-US,en;q=0.9", "Accept-Encoding": "gzip, deflate, br"}

A request with a library's agent (``python-urllib3/2.x``) is refused by many sites
on sight; one whose ``Accept`` does not match its agent is flagged by the rest.
So an agent comes with the ``Accept`` and ``Accept-Language`` its browser sends,
from the generated ``browsers.py`` (see ``user_agent.refresh``), and with the
``Accept-Encoding`` the fetch can decode (gzip, deflate, br), not the browser's
(zstd would come back undecodable).

The set is picked by a stable hash of ``key`` (a unit id), so a unit keeps one
identity across retries and workers. A site's own defaults (``SiteHeaders``:
a family and fixed headers) go over these; resource providers (a pooled agent,
cookies, a signature) still go over both, per unit.

A fetch client that presents a browser itself (``impersonate``: curl-impersonate's
Chrome, whose TLS handshake names the browser before any header does) sends that
browser's own default headers, in its order; a request for it carries only the
site's fixed headers (``browser=False``), so no bundled agent can contradict it.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

from config import SiteHeaders
from external_interface.user_agent import choose
from external_interface.user_agent.browsers import HEADER_SETS

DEFAULT_FAMILY = "desktop"
ACCEPT_ENCODING = "gzip, deflate, br"  # what the fetch decodes (urllib3 + brotli)


def families() -> list[str]:
    """The families a site may name, sorted."""
    return sorted(HEADER_SETS)


def default_headers(family: str | None, key: str) -> dict[str, str]:
    """A browser's default headers for ``family`` (None: desktop), the same for the same
    ``key``. Raises ``ValueError`` naming the known families for an unknown one."""
    return dict(choose(_header_sets(family, ()), key))


def site_headers(site: SiteHeaders, key: str) -> dict[str, str]:
    """A site's defaults for one unit: the family's browser headers, then the site's
    own (any case of a name replaces the default's)."""
    return headers_for(site.family, site.headers, key)


def headers_for(family: str | None, own: Mapping[str, str], key: str,
                browser: bool = True) -> dict[str, str]:
    """``site_headers`` from its parts: every unit's request passes here, and the
    merged sets are built once per family and site headers, not once per unit.
    ``browser=False``: the fetch client sends its own browser's headers; ``own`` only."""
    if not browser:
        return dict(own)
    return dict(choose(_header_sets(family, tuple(own.items())), key))


@lru_cache(maxsize=256)
def _header_sets(family: str | None, own: tuple[tuple[str, str], ...],
                 ) -> tuple[dict[str, str], ...]:
    """Every header set of ``family``, each with ``own`` over it, in the family's order
    (so ``choose`` picks the same browser for a key whatever the site adds)."""
    wanted = family or DEFAULT_FAMILY
    sets = HEADER_SETS.get(wanted)
    if not sets:
        raise ValueError(f"unknown user agent family {wanted!r}: use one of "
                         f"{', '.join(families())}, or set User-Agent in the site's headers")
    names = {name.lower() for name, _ in own}
    merged = []
    for agent, accept, language in sets:
        browser = {"User-Agent": agent, "Accept": accept, "Accept-Language": language,
                   "Accept-Encoding": ACCEPT_ENCODING}
        merged.append({k: v for k, v in browser.items() if k.lower() not in names} | dict(own))
    return tuple(merged)
