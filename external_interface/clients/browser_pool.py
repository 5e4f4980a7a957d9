"""One worker process's browser: headless Chromium (the system's) under Playwright, its
pages capped, recycled, and replaced when it dies or hangs.

    pool = BrowserPool(settings, guard)
    html = pool.run(lambda browser: visit(browser, ...), timeout_s)   # from any thread

Playwright's API is asyncio: the pool runs one event loop in a thread of its own, and
every unit thread hands its page to it (``run``), so one browser serves all the unit
threads of a process, at most ``BROWSER_PAGES`` pages at once. Built on first use, not
at import, and again in a forked child (a browser belongs to the process that launched
it).

Lifetimes, as Crawlee's browser pool keeps them, and for the complaints its users make:

- its pages share ``BROWSER_RENDERERS`` renderer processes (one per core by default):
  a renderer per tab would only add memory where the cores are already busy;
- pages are kept open and reused, ``PAGE_USES`` pages each (a tab costs more to open
  than a page to render), in one context per identity (User-Agent, proxy, headers,
  cookies: what the providers chose), replaced after ``CONTEXT_USES`` pages so that
  nothing grows on a long-lived context;
- a browser is retired after ``BROWSER_RECYCLE_PAGES`` pages, or once its processes
  hold more than ``BROWSER_RECYCLE_MB`` of PSS (measured every ``RSS_EVERY`` pages):
  new pages go to a fresh one, the old one closes when its last page ends;
- a browser that crashed (disconnected) is replaced on the next page; one that hangs
  (after a failed page it cannot open a context within ``PROBE_S``, or a page outlives
  its deadline by ``GRACE_S``) is killed, with all its processes, and replaced; the
  page's fetch fails with a ``NetworkError`` so its unit is retried;
- each Chromium is found among this process's descendants by a marker switch on its
  command line, so its memory is measured and it can be killed whatever Playwright's
  driver is doing; ``close`` (the worker's stop) and the exit of this process end them.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import threading
import uuid
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import psutil

from exceptions import NetworkError, NotSupported

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext, Page, Playwright

    from config import BrowserSettings
    from external_interface.clients.browser_guard import GuardProxy
    from external_interface.url_guard import UrlGuard

T = TypeVar("T")
GRACE_S = 5.0  # past its deadline, a page this late means a hung browser
PROBE_S = 3.0  # a browser that cannot open a context this fast after a failed page hangs
RSS_EVERY = 20  # pages between two measures of a browser's memory
PAGE_USES = 50  # pages one tab renders before it is closed (its renderer's memory)
CONTEXT_USES = 500  # pages of one context before a fresh one takes over
MARKER = "--crawlchain-browser"
JS_HEAP_MB = 512  # a page's script that allocates without end crashes its tab here
CHROMIUM_ARGS = ("--no-sandbox",  # Chromium refuses to run as root with its sandbox
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                 "--dns-prefetch-disable",
                 f"--js-flags=--max-old-space-size={JS_HEAP_MB}")
MISSING = ("no Chromium here: apt-get install chromium (./control.sh setup does, as root), "
           "or set BROWSER_EXECUTABLE to its path")


@dataclass
class Tab:
    """A page and how many pages it has rendered."""

    page: Page
    uses: int = 0


@dataclass
class Pages:
    """One context (one identity: its User-Agent, proxy, headers, cookies) and its idle
    pages, each reused for ``PAGE_USES`` pages (a renderer started per page costs more
    than the page), the context for ``CONTEXT_USES``."""

    context: BrowserContext
    idle: list[Tab] = field(default_factory=list)
    uses: int = 0
    in_use: int = 0


@dataclass
class Chromium:
    """One launched browser and what the pool counts of it."""

    browser: Browser
    marker: str
    served: int = 0
    in_flight: int = 0
    retired: bool = False
    processes: list[psutil.Process] = field(default_factory=list)
    contexts: dict[Hashable, Pages] = field(default_factory=dict)
    closing: set[asyncio.Task[None]] = field(default_factory=set)

    async def page(self, identity: Hashable,
                   build: Callable[[Browser], Awaitable[BrowserContext]]) -> tuple[Pages, Tab]:
        """A page of the context for ``identity`` (built by ``build`` when there is none,
        or a fresh one once the last served its pages), an idle one if there is one."""
        pages = self.contexts.get(identity)
        if pages is None or pages.uses >= CONTEXT_USES:
            if pages is not None:
                self._drop(identity, pages)
            pages = self.contexts[identity] = Pages(await build(self.browser))
        pages.uses += 1
        pages.in_use += 1
        if pages.idle:
            return pages, pages.idle.pop()
        return pages, Tab(await pages.context.new_page())

    async def give_back(self, pages: Pages, tab: Tab, reusable: bool) -> None:
        """A page done with: kept for the next one, or closed (failed, or used up); a
        context no longer current is closed with its last page."""
        pages.in_use -= 1
        tab.uses += 1
        current = any(p is pages for p in self.contexts.values())
        if reusable and tab.uses < PAGE_USES and not self.retired and current:
            pages.idle.append(tab)
            return
        await _quietly(tab.page.close())
        if pages.in_use == 0 and not current:
            await _quietly(pages.context.close())

    def _drop(self, identity: Hashable, pages: Pages) -> None:
        """Forget a used-up context: its idle pages closed now, itself with its last page
        (or now, with none in use); the closes run on while the new context is built."""
        del self.contexts[identity]
        closing = [tab.page.close() for tab in pages.idle]
        if pages.in_use == 0:
            closing.append(pages.context.close())
        pages.idle = []
        for work in closing:
            task = asyncio.ensure_future(_quietly(work))
            self.closing.add(task)
            task.add_done_callback(self.closing.discard)

    def tree(self) -> list[psutil.Process]:
        """The browser's processes (its main one, then every child): found once, the
        children again on every call."""
        if not self.processes:
            me = psutil.Process()
            self.processes = [p for p in _descendants(me) if _has_marker(p, self.marker)]
        main = self.processes[:1]
        return [*main, *(c for p in main for c in _descendants(p))]

    def memory_mb(self) -> float:
        """The browser's memory: the PSS of its processes (shared pages counted once over
        them all, where a sum of RSS counts them in every renderer)."""
        total = 0
        for process in self.tree():
            with contextlib.suppress(psutil.Error):
                total += process.memory_full_info().pss
        return total / 2**20

    def kill(self) -> None:
        for process in self.tree():
            with contextlib.suppress(psutil.Error):
                process.kill()


class BrowserPool:
    """This process's browser, its loop thread and its page slots."""

    def __init__(self, settings: BrowserSettings, guard: UrlGuard | None = None) -> None:
        self.settings = settings
        self.guard = guard
        self.launched = 0  # browsers launched, replacements included
        self._pid = 0
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._playwright: Playwright | None = None
        self._current: Chromium | None = None
        self._retired: list[Chromium] = []
        self._slots: asyncio.Semaphore | None = None
        self._launching: asyncio.Lock | None = None
        self._proxies: dict[str | None, GuardProxy] = {}

    def run(self, visit: Callable[[Chromium], Awaitable[T]], timeout_s: float) -> T:
        """``visit`` on the browser, in a page slot, within ``timeout_s``; a browser that
        does not give it back ``GRACE_S`` later is killed (``NetworkError``). A caller
        interrupted (a soft time limit) cancels its page."""
        loop = self._started()
        future = asyncio.run_coroutine_threadsafe(self._slot(visit), loop)
        try:
            return future.result(timeout_s + GRACE_S)
        except TimeoutError:
            future.cancel()
            self.call(self._kill_current())
            raise NetworkError(f"the browser did not finish a page {GRACE_S:g} s past its "
                               "deadline: killed and replaced") from None
        except BaseException:
            future.cancel()
            raise

    def call(self, work: Awaitable[T], timeout_s: float = 30.0) -> T:
        """``work`` on the pool's loop, from another thread."""
        return asyncio.run_coroutine_threadsafe(_awaited(work), self._started()
                                                ).result(timeout_s)

    async def guard_proxy(self, upstream: str | None) -> GuardProxy:
        """The guard's proxy for pages going out directly (``upstream`` None) or through
        the provider's proxy ``upstream``: one listener each, kept."""
        from external_interface.clients.browser_guard import GuardProxy
        from external_interface.clients.http_transport import Proxy

        found = self._proxies.get(upstream)
        if found is None:
            assert self.guard is not None
            parsed = Proxy.parse(upstream) if upstream else None
            found = self._proxies[upstream] = await GuardProxy(self.guard, parsed).start()
        return found

    def close(self) -> None:
        """Close every browser and Playwright's driver (the worker's stop); used again,
        the pool starts anew."""
        with self._lock:
            loop, self._loop = (self._loop if self._pid == os.getpid() else None), None
        if loop is None:
            return
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(15)
        loop.call_soon_threadsafe(loop.stop)

    def browsers(self) -> list[Chromium]:
        """The live browsers: the current one, and retired ones still finishing pages."""
        return [*self._retired, *filter(None, [self._current])]

    def memory_mb(self) -> float:
        """The memory of every browser of this pool (retiring ones too), PSS."""
        return sum(c.memory_mb() for c in self.browsers())

    def processes(self) -> list[psutil.Process]:
        """Every process of every live browser."""
        return [p for c in self.browsers() for p in c.tree()]

    def proxies(self) -> list[GuardProxy]:
        """The guard's proxies (each counts the connections it refused)."""
        return list(self._proxies.values())

    def _started(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._pid != os.getpid():
                self._pid = os.getpid()
                self._current, self._retired, self._proxies = None, [], {}
                self._playwright = None
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="browser-loop",
                                 daemon=True).start()
                self._slots = asyncio.Semaphore(self.settings.pages)
                self._launching = asyncio.Lock()
                self._loop = loop
                atexit.register(self.close)
            return self._loop

    async def _slot(self, visit: Callable[[Chromium], Awaitable[T]]) -> T:
        assert self._slots is not None
        async with self._slots:
            chromium = await self._browser()
            chromium.in_flight += 1
            try:
                return await visit(chromium)
            except Exception as exc:
                if not chromium.browser.is_connected():
                    raise NetworkError(f"the browser died under the page: {exc}") from None
                if not await _answers(chromium.browser):
                    await self._kill(chromium)
                    raise NetworkError("the browser stopped answering: killed and "
                                       "replaced") from None
                raise
            finally:
                chromium.in_flight -= 1
                chromium.served += 1
                await self._after_page(chromium)

    async def _browser(self) -> Chromium:
        """The current browser, launched (or replaced) when there is none fit to use."""
        assert self._launching is not None
        async with self._launching:
            current = self._current
            if current is None or current.retired or not current.browser.is_connected():
                if current is not None:
                    await self._retire(current)
                self._current = current = await self._launch()
            return current

    async def _launch(self) -> Chromium:
        from playwright.async_api import Error, async_playwright

        executable = self.settings.chromium()
        if executable is None:
            raise NotSupported(MISSING)
        if self._playwright is None:
            self._playwright = await async_playwright().start()
        marker = uuid.uuid4().hex
        options: dict[str, Any] = {}
        if self.guard is not None:
            options["proxy"] = {"server": (await self.guard_proxy(None)).url}
        try:
            renderers = self.settings.renderers or os.cpu_count() or 2
            browser = await self._playwright.chromium.launch(
                executable_path=executable, args=[
                    *CHROMIUM_ARGS, f"--renderer-process-limit={renderers}",
                    f"{MARKER}={marker}"],
                timeout=self.settings.launch_timeout_s * 1000, **options)
        except Error as exc:
            raise NetworkError(f"Chromium ({executable}) did not start: "
                               f"{str(exc).splitlines()[0]}") from None
        self.launched += 1
        return Chromium(browser, marker)

    async def _after_page(self, chromium: Chromium) -> None:
        """Retire a browser that served its pages or grew too big; close retired ones
        once their last page is done."""
        settings = self.settings
        if not chromium.retired and (
                chromium.served >= settings.recycle_pages
                or (chromium.served % RSS_EVERY == 0
                    and chromium.memory_mb() > settings.recycle_mb)):
            await self._retire(chromium)
        for old in [c for c in self._retired if c.in_flight == 0]:
            self._retired.remove(old)
            await _closed(old)

    async def _retire(self, chromium: Chromium) -> None:
        chromium.retired = True
        if chromium is self._current:
            self._current = None
        if chromium.in_flight == 0:
            await _closed(chromium)
        else:
            self._retired.append(chromium)

    async def _kill_current(self) -> None:
        """Kill the current browser (hung): its pages fail, the next page gets a new one."""
        if self._current is not None:
            await self._kill(self._current)

    async def _kill(self, chromium: Chromium) -> None:
        chromium.retired = True
        chromium.kill()
        if chromium is self._current:
            self._current = None

    async def _shutdown(self) -> None:
        for chromium in self.browsers():
            await _closed(chromium)
        self._current, self._retired = None, []
        for proxy in self._proxies.values():
            await proxy.close()
        self._proxies = {}
        if self._playwright is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._playwright.stop(), 10)
            self._playwright = None


async def _closed(chromium: Chromium) -> None:
    """Close a browser; one that does not close within seconds is killed."""
    try:
        await asyncio.wait_for(chromium.browser.close(), 5)
    except Exception:  # hung, or already gone: make sure no process stays
        chromium.kill()
    chromium.kill()  # any process its close left behind


async def _answers(browser: Browser) -> bool:
    """Whether a browser whose page failed still answers (a context opened and closed
    within ``PROBE_S``): a page past its deadline may be the page's fault or the
    browser's."""
    try:
        context = await asyncio.wait_for(browser.new_context(), PROBE_S)
        await asyncio.wait_for(context.close(), PROBE_S)
    except Exception:
        return False
    return True


async def _quietly(work: Awaitable[Any]) -> None:
    """Close something of a browser that may be gone or hung: never raises, never waits
    more than seconds (the pool kills a hung browser)."""
    with contextlib.suppress(Exception):
        await asyncio.wait_for(work, 5)


async def _awaited(work: Awaitable[T]) -> T:
    return await work


def _descendants(process: psutil.Process) -> list[psutil.Process]:
    with contextlib.suppress(psutil.Error):
        return list(process.children(recursive=True))
    return []


def _has_marker(process: psutil.Process, marker: str) -> bool:
    try:
        return f"{MARKER}={marker}" in process.cmdline() and "--type=" not in " ".join(
            process.cmdline())
    except psutil.Error:
        return False
