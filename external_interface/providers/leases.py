"""Requests through the providers: applied before the fetch, the response judged, reported after.

    leases = apply_providers(providers, resources, request, unit)       # may raise NeedResource
    response = fetcher.fetch_raw(leases.request)
    check_response(response, resources)                 # bans by content, then status
    avoid = report_leases(providers, leases, error_or_none, ...)  # health, rests, retirements

``apply_providers`` is request in, request out, in a fixed order: user agent, cookie, device
id, proxy, captcha answer, and the signature last, over everything else. What it
leased is recorded on the ``Leases`` so that ``report_leases`` can report each resource:
a ban blames one of them (the rule's resource, else 401 -> cookie, 403 -> proxy),
a 429 rests the proxy rather than the whole site (sites limit per exit), a
network error marks the proxy down a little.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from exceptions import (
    CrawlError,
    NetworkError,
    PermanentError,
    RateLimited,
    RotateError,
    SessionExpired,
)
from external_interface.captcha import IMAGE_META, CaptchaUnsolved, Challenge
from external_interface.http import Request, Response
from external_interface.pool import Empty, Verdict
from external_interface.providers.bundle import Providers
from external_interface.providers.declare import Kind, StepResources
from external_interface.statuses import raise_for_status

SCAN_BYTES = 64 * 1024  # ban markers are looked for in the first bytes of a body


class NeedResource(Exception):
    """No member of ``kind`` to lease now: defer the unit ``seconds`` (None: the usual
    wait). Not a ``CrawlError``: waiting for a pool spends no retry and no rotation."""

    def __init__(self, kind: Kind, seconds: float | None) -> None:
        super().__init__(f"no {kind} available now")
        self.kind = kind
        self.seconds = seconds


@dataclass(frozen=True)
class Leases:
    """The equipped request and what was leased for it (pool ids)."""

    request: Request
    proxy: str | None = None
    cookie: str | None = None
    device: str | None = None
    solves: int = 0
    low: tuple[Kind, ...] = ()  # pools that ran low with this lease: refill them


def apply_providers(p: Providers, resources: StepResources, request: Request, unit_id: str,
          avoid: list[str]) -> Leases:
    """The request through every transformer its step uses; raises ``NeedResource``."""
    uses, declared, low_water = resources.uses, resources.declared, p.settings.refill_below
    if uses.user_agent:
        request = request.with_headers(**{
            "User-Agent": p.agent(declared, uses.user_agent, unit_id)})
    leases = Leases(request)
    if uses.cookie:
        session = p.cookies.lease(resources.site)
        if isinstance(session, Empty):
            raise NeedResource("cookie", session.retry_in_s)
        request = replace(request, cookies={**request.cookies, **session.cookies})
        leases = _leased(leases, "cookie", session.member, session.ready <= low_water)
    if uses.device:
        device = p.devices.lease(resources.site)
        if isinstance(device, Empty):
            raise NeedResource("device", device.retry_in_s)
        request = request.with_headers(**{declared.device_header: device.value})
        leases = _leased(leases, "device", device.member, device.ready <= low_water)
    if uses.proxy and p.proxies is not None:
        proxy = p.proxies.lease(avoid)
        if isinstance(proxy, Empty):
            raise NeedResource("proxy", proxy.retry_in_s)
        request = replace(request, proxy=proxy.value)
        leases = _leased(leases, "proxy", proxy.member, False)
    request, solves = _solve(resources, request)
    if uses.sign and declared.signer is not None:
        request = declared.signer.sign(request, time.time())
    return replace(leases, request=request, solves=solves)


def _leased(leases: Leases, kind: Kind, member: str, low: bool) -> Leases:
    lows = leases.low + ((kind,) if low else ())
    if kind == "cookie":
        return replace(leases, cookie=member, low=lows)
    if kind == "device":
        return replace(leases, device=member, low=lows)
    return replace(leases, proxy=member, low=lows)


def _solve(resources: StepResources, request: Request) -> tuple[Request, int]:
    image = request.meta.get(IMAGE_META)
    solver = resources.declared.solver
    if not (resources.uses.captcha and image and solver is not None):
        return request, 0
    try:
        answer = solver.solve(Challenge.from_data_url(image))
    except (CaptchaUnsolved, ValueError) as exc:  # ValueError: a data URL that is not one
        raise PermanentError(f"captcha not solved: {exc}", url=request.url) from exc
    params = {**request.params, resources.declared.captcha_param: answer}
    return replace(request, params=params), 1


def check_response(response: Response, resources: StepResources | None) -> None:
    """Raise the rotate error a ban rule of the site names (by content), else the
    status's error: a 401 rotates the session on a site with a session pool, and is
    permanent on one without (``resources`` None: the site declares no providers, none for
    this step, or its providers are off; then no session was sent either)."""
    rules = resources.declared.bans if resources is not None else ()
    head = response.body[:SCAN_BYTES] if rules else b""
    for rule in rules:
        if (not rule.statuses or response.status in rule.statuses) and rule.marker in head:
            raise rule.error(f"the page says {rule.marker.decode()!r}",
                             url=response.url, status=response.status, resource=rule.resource)
    raise_for_status(response, sessions=resources is not None and resources.declared.sessions)


def blame(error: RotateError, leases: Leases) -> Kind | None:
    """Which leased resource a rotate error burns."""
    held: dict[Kind, str | None] = {"proxy": leases.proxy, "cookie": leases.cookie,
                                    "device": leases.device}
    named = next((kind for kind in held if kind == error.resource), None)
    if named is not None and held[named]:
        return named
    order: tuple[Kind, ...] = (("cookie", "proxy", "device") if isinstance(error, SessionExpired)
                               else ("proxy", "cookie", "device"))
    return next((kind for kind in order if held[kind]), None)


def report_leases(p: Providers, resources: StepResources, leases: Leases, error: CrawlError | None,
           rest_cap_s: float) -> str | None:
    """Report how the request went; returns the proxy this unit must avoid from now on."""
    proxies, cooldowns = p.proxies, p.proxy_settings
    if error is None:
        if proxies is not None and leases.proxy:
            proxies.report(leases.proxy, Verdict.OK)
        return None
    if isinstance(error, RotateError):
        kind = blame(error, leases)
        if kind == "proxy" and proxies is not None and leases.proxy:
            proxies.report(leases.proxy, Verdict.BANNED, cooldowns.ban_cooldown_s)
            return leases.proxy
        if kind == "cookie" and leases.cookie:
            p.cookies.invalidate(resources.site, leases.cookie)
        if kind == "device" and leases.device:
            p.devices.retire(resources.site, leases.device)
        return None
    if proxies is not None and leases.proxy:
        if isinstance(error, RateLimited):
            rest = min(error.retry_after or cooldowns.fail_cooldown_s, rest_cap_s)
            proxies.report(leases.proxy, Verdict.COOL, rest)
        elif isinstance(error, NetworkError):
            proxies.report(leases.proxy, Verdict.FAILED, cooldowns.fail_cooldown_s)
            proxies.stale()
    return None
