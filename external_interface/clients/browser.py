"""The ``browser`` client: the page rendered by headless Chromium (the system's, through
Playwright), its DOM handed on as the ``Response`` body, so ``css()`` and ``xpath()``
read what a person would see.

    @step(url="{base}/app", client="browser", browse=Browse(wait_for="li.row"))

The page's ``Browse`` (``Request.browse``) says what is done before the DOM is read:
wait for a selector, click, scroll, wait for the network to be idle, take a screenshot.
The browser, its pages and their lifetimes are ``clients.browser_pool``'s.

How each bound holds here:

- deadline: the whole page (navigation, redirects, every action, the DOM read) runs
  under one ``FETCH_DEADLINE_S``; a browser that does not give a page back a few
  seconds later is killed and replaced, and the fetch fails as a ``NetworkError``.
- body cap: the rendered document (or a non-HTML body) over ``FETCH_MAX_BODY_BYTES``
  is refused, as a decoded body is.
- content types: the navigation's response is judged by ``check_head`` before the
  page is used (a JSON or a text document is handed on as its own bytes).
- SSRF guard: every connection the page makes, subresources, frames, ``fetch()``,
  redirects, goes through the guard's proxy (``clients.browser_guard``); a document
  the guard refused raises ``UnsafeURL``.
- the job's domains: checked on the URL before the page is opened, and on every hop
  of the navigation's redirects once it ended (Chromium follows them itself, so an
  off-site hop was requested, never rendered).
- secrets: every error says the URL redacted, the proxy never.
- identity: cookies, the User-Agent and the proxy the providers chose are set on the
  page's own context; the other request headers go out with every request of the page.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from exceptions import CrawlError, NetworkError, OffSite, ResponseRejected, UnsafeURL
from external_interface.clients.bounds import check_head, offsite_message, over_cap
from external_interface.clients.browser_guard import REFUSED_HEADER
from external_interface.clients.browser_pool import BrowserPool, Chromium
from external_interface.http import HTML_TYPES, Browse, Request, Response, media_type_matches
from utils.urls import redact_text, redact_url

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from playwright.async_api import Browser, BrowserContext, Page, Route
    from playwright.async_api import Response as PageResponse

    from config import BrowserSettings, FetchSettings
    from external_interface.url_guard import UrlGuard
    from utils.domains import AllowedDomains

DEFAULT_BROWSE = Browse()
SCROLL_WAIT_MS = 1500  # a scroll that adds nothing within this long: the list has ended
_NOT_SENT = frozenset({"user-agent", "cookie", "host", "connection", "content-length",
                       "accept-encoding", "proxy-authorization", "keep-alive"})


class BrowserClient:
    """Renders pages in this process's ``BrowserPool``; safe from many threads."""

    name = "browser"

    def __init__(self, settings: FetchSettings, browser: BrowserSettings,
                 guard: UrlGuard | None = None) -> None:
        self.settings = settings
        self.guard = guard
        self.pool = BrowserPool(browser, guard)

    def fetch_raw(self, request: Request, allowed: AllowedDomains | None = None) -> Response:
        """The rendered page (``FetchClient``): every bound of the module's list."""
        url = request.full_url
        if allowed and not allowed.allows_url(url):
            raise OffSite(offsite_message(url, allowed, redirected=False), url=redact_url(url))
        if self.guard is not None:
            self.guard.check_url(url, resolve=request.proxy is not None)
        deadline = self.settings.deadline_s
        started = time.monotonic()
        try:
            return self.pool.run(lambda chromium: _timed(
                self._render(chromium, request, allowed, started), deadline, url), deadline)
        except CrawlError:
            raise
        except Exception as exc:  # Playwright's errors, a browser gone
            raise NetworkError(redact_text(f"the page failed: {type(exc).__name__}: "
                                           f"{str(exc).splitlines()[0] if str(exc) else ''}"),
                               url=redact_url(url)) from None

    def close(self) -> None:
        self.pool.close()

    async def _render(self, chromium: Chromium, request: Request,
                      allowed: AllowedDomains | None, started: float) -> Response:
        browse = request.browse or DEFAULT_BROWSE
        options = await self._context(request)
        identity = (repr(sorted(options.items())), tuple(sorted(request.cookies.items())),
                    browse.block)

        async def build(browser: Browser) -> BrowserContext:
            context = await browser.new_context(**options)
            if request.cookies:
                await context.add_cookies([{"name": k, "value": v, "url": request.full_url}
                                           for k, v in request.cookies.items()])
            if browse.block:
                await context.route("**/*", _blocking(frozenset(browse.block)))
            return context

        pages, tab = await chromium.page(identity, build)
        reusable = False
        try:
            refused: list[str] = []

            def heard(answer: PageResponse) -> None:
                if answer.headers.get(REFUSED_HEADER.lower()):
                    refused.append(answer.url)

            tab.page.on("response", heard)
            try:
                main = await tab.page.goto(request.full_url, wait_until="load")
            except Exception:
                if refused:
                    raise UnsafeURL("a request of the navigation is refused by the SSRF guard",
                                    url=redact_url(refused[0])) from None
                raise
            if main is None:
                raise NetworkError("the page gave no response", url=redact_url(request.url))
            response = await self._read(tab.page, main, request, browse, allowed, started)
            tab.page.remove_listener("response", heard)
            reusable = True
            return response
        finally:
            await asyncio.shield(chromium.give_back(pages, tab, reusable))

    async def _context(self, request: Request) -> dict[str, Any]:
        """The page's context: the providers' User-Agent, proxy and headers."""
        options: dict[str, Any] = {"service_workers": "block", "java_script_enabled": True}
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _NOT_SENT}
        agent = next((v for k, v in request.headers.items() if k.lower() == "user-agent"), None)
        if agent:
            options["user_agent"] = agent
        if headers:
            options["extra_http_headers"] = headers
        if request.proxy is not None:
            if self.guard is not None:
                proxy = await self.pool.guard_proxy(request.proxy)
                options["proxy"] = {"server": proxy.url}
            else:
                options["proxy"] = _playwright_proxy(request.proxy)
        return options

    async def _read(self, page: Page, main: PageResponse, request: Request, browse: Browse,
                    allowed: AllowedDomains | None, started: float) -> Response:
        url = page.url
        self._check_hops(main, request, allowed)
        headers = await main.all_headers()
        if headers.get(REFUSED_HEADER.lower()):
            raise UnsafeURL("a hop of the navigation is refused by the SSRF guard",
                            url=redact_url(main.url))
        cap = self.settings.max_body_bytes
        check_head(main.status, headers, url, request.accept_types, cap)
        kind = (headers.get("content-type") or "text/html").split(";")[0].strip().lower()
        if not any(media_type_matches(kind, t) for t in HTML_TYPES):
            body = await main.body()  # JSON, text: the document's own bytes
            encoding = None
        else:
            await _act(page, browse)
            body = (await page.content()).encode("utf-8")
            headers = {k: v for k, v in headers.items()
                       if k not in ("content-length", "content-encoding", "transfer-encoding")}
            headers["content-type"] = "text/html; charset=utf-8"
            encoding = "utf-8"
        if len(body) > cap:
            raise over_cap(cap, url, main.status)
        shot = await page.screenshot(full_page=True) if browse.screenshot else None
        return Response(url, main.status, headers, body, encoding,
                        time.monotonic() - started, screenshot=shot)

    def _check_hops(self, main: PageResponse, request: Request,
                    allowed: AllowedDomains | None) -> None:
        """The navigation's redirects: on the job's domains, and no more than allowed."""
        hops: list[str] = []
        earlier = main.request.redirected_from
        while earlier is not None:
            hops.append(earlier.url)
            earlier = earlier.redirected_from
        if len(hops) > self.settings.max_redirects:
            raise ResponseRejected(f"more than {self.settings.max_redirects} redirects",
                                   url=redact_url(request.url))
        for hop in (main.url, *hops):
            if allowed and not allowed.allows_url(hop):
                raise OffSite(offsite_message(hop, allowed, redirected=True),
                              url=redact_url(hop))


async def _act(page: Page, browse: Browse) -> None:
    """What the step asked to be done on the page, in ``Browse``'s order. A scroll that
    brings nothing within ``SCROLL_WAIT_MS`` ends the list, unless the step said how its
    end looks (``scroll_until``): then it scrolls on, and a list whose end never showed
    fails the fetch (retried) rather than pass for complete."""
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    for selector in browse.click:
        await page.click(selector)
    if browse.wait_for:
        await page.wait_for_selector(browse.wait_for, state="attached")
    for _ in range(browse.scroll):
        if browse.scroll_until and await page.query_selector(browse.scroll_until):
            return await _idle(page, browse)
        height = await page.evaluate("document.body.scrollHeight")
        await page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
        try:
            await page.wait_for_function("h => document.body.scrollHeight > h", arg=height,
                                         timeout=SCROLL_WAIT_MS)
        except PlaywrightTimeout:  # nothing more came: the list has ended, unless the
            if not browse.scroll_until:  # page says how its end looks: then scroll on
                break
    if browse.scroll and browse.scroll_until and not await page.query_selector(
            browse.scroll_until):
        raise NetworkError(f"{browse.scroll_until!r} never appeared in {browse.scroll} "
                           "scrolls: the list is incomplete", url=redact_url(page.url))
    await _idle(page, browse)


async def _idle(page: Page, browse: Browse) -> None:
    """Wait for the network to be idle, when the step asked for it."""
    if browse.idle:
        await page.wait_for_load_state("networkidle")


async def _timed(work: Any, deadline_s: float, url: str) -> Response:
    """``work`` within the fetch's deadline, as a ``NetworkError`` when it passes."""
    try:
        result: Response = await asyncio.wait_for(work, deadline_s)
    except TimeoutError:
        raise NetworkError(f"fetch deadline passed: the page took over {deadline_s:g} s",
                           url=redact_url(url)) from None
    return result


def _blocking(blocked: frozenset[str]) -> Callable[[Route], Awaitable[None]]:
    """A route handler that aborts the resource types in ``blocked``."""

    async def handle(route: Route) -> None:
        if route.request.resource_type in blocked:
            await route.abort("blockedbyclient")
        else:
            await route.continue_()

    return handle


def _playwright_proxy(url: str) -> dict[str, str]:
    """A proxy URL as Playwright takes it: server, then the credentials apart."""
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    proxy = {"server": f"{parts.scheme}://{netloc}{f':{parts.port}' if parts.port else ''}"}
    if parts.username:
        proxy["username"] = unquote(parts.username)
        proxy["password"] = unquote(parts.password or "")
    return proxy
