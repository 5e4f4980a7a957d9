"""The fetch phase: each live unit's request, through its middlewares and providers, fetched
within its slots.

Per unit, in pool threads when the batch has several: the middlewares'
``process_request`` (the cluster's, then the site's); the resource providers (
user agent, cookie, device id, proxy, captcha answer, signature last), or the unit
waits for an empty pool; the site's cluster-wide slot (or its host's, see
``pipeline.polite``: under the adaptive throttle's policy, capped by the declared
politeness and robots.txt's Crawl-delay; and its exit's, when the site limits each
proxy) is taken, or the unit waits for it; then the bounded fetch (through the
development cache when the job uses it), judged by the site's ban rules (by content) and
then by status, except the statuses the step parses as pages. Runs come back as their
responses arrive, so the parse phase works on one while the others are still on the
wire. At DEBUG, each fetch is one log line (``utils.logs.log_fetch``): what the job
summary counts as ``requests``.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Generator
from contextlib import ExitStack
from queue import SimpleQueue

from chains.runtime.context import fetch_slots, unit_threads
from chains.runtime.pipeline import polite
from chains.runtime.pipeline.batch import Batch, Bounds, FetchPoint, RetryAfter, UnitRun
from chains.runtime.step import site_code
from chains.runtime.units import avoided, waited
from config import Politeness
from exceptions import CrawlError, NoResource, RateLimited, TransientError
from external_interface.politeness import MustWait, acquire
from external_interface.providers.leases import NeedResource, apply_providers, check_response
from utils.logs import log_fetch

log = logging.getLogger(__name__)


def fetch(batch: Batch, runs: list[UnitRun]) -> Generator[UnitRun, None, None]:
    """Every run, the live ones fetched: ended ones first, then in order of arrival.

    Several live units are fetched by up to ``TASK_UNIT_THREADS`` of the process's unit
    threads, each taking the next unit from the batch's list until it is empty (one
    hand-off per thread, not one future per unit); an error that is no ``CrawlError``
    (a bug) is raised here. Left unfinished (the soft time limit), the batch's units not
    yet taken are not fetched."""
    live = [r for r in runs if r.live]
    yield from (r for r in runs if not r.live)
    if len(live) == 1:
        yield fetch_one(batch, live[0])
        return
    todo, done = deque(live), SimpleQueue[UnitRun | BaseException]()

    def take() -> None:
        while todo:
            try:
                r = todo.popleft()
            except IndexError:  # another thread took the last one
                return
            try:
                done.put(fetch_one(batch, r))
            except BaseException as exc:  # a bug: for the message's thread to raise
                done.put(exc)

    threads = batch.rt.settings.task.unit_threads
    pool = unit_threads(threads)
    try:
        for _ in range(min(len(live), threads)):
            pool.submit(take)
        for _ in live:
            got = done.get()
            if isinstance(got, BaseException):
                raise got
            yield got
    finally:
        todo.clear()


def fetch_one(batch: Batch, r: UnitRun) -> UnitRun:
    """The unit with its response, or with the fate that stopped it."""
    assert r.ctx is not None and r.request is not None
    try:
        for middleware in batch.middlewares:
            r = r.replace(request=site_code(middleware.process_request, r.request, r.ctx,
                                            passing=batch.rt.interrupts))
        if batch.resources is not None:
            r = _dress(batch, r)
            if not r.live:
                return r
        return _polite_fetch(batch, r)
    except CrawlError as exc:
        return r.failed(exc)


def fetch_rendered(batch: Batch, r: UnitRun) -> UnitRun:
    """A ``render="auto"`` unit whose plain page gave nothing, fetched again in the
    browser (its request as dressed before, within its slots)."""
    try:
        return _polite_fetch(batch, r.replace(render=True, response=None, parsed=None))
    except CrawlError as exc:
        return r.failed(exc)


def _dress(batch: Batch, r: UnitRun) -> UnitRun:
    """The request through the providers the step uses; an empty pool makes it wait.
    Raises ``NoResource`` once the unit has waited ``RESOURCES_MAX_WAITS`` times."""
    assert batch.resources is not None and r.request is not None
    try:
        leases = apply_providers(batch.rt.providers, batch.resources, r.request, r.unit["id"],
                       avoided(r.unit))
    except NeedResource as exc:
        limits = batch.rt.settings.resources
        if waited(r.unit) > limits.max_waits:
            raise NoResource(f"no {exc.kind} of {batch.resources.site} became available after "
                             f"{limits.max_waits} waits", url=r.request.url) from None
        wait = min(exc.seconds or limits.wait_s, batch.rt.settings.politeness.max_wait_s)
        return r.replace(need=exc.kind).ended(RetryAfter(wait, f"no {exc.kind} ready",
                                                          "wait"))
    return r.replace(leases=leases)


def _polite_fetch(batch: Batch, r: UnitRun) -> UnitRun:
    """Fetch within the site's (or host's) cluster-wide slot, or wait for it.

    A 429 cools the whole bucket down (capped), not just this unit: the throttle
    does it when it hears of the batch (``polite.observe``), the limiter here when
    the throttle is off. Through a pooled proxy it rests that exit instead (sites
    limit per address; see ``report_leases``).
    """
    assert r.request is not None and r.bounds is not None
    key = r.bounds.bucket
    try:
        slots = _slots(batch, r, r.bounds)
    except MustWait as exc:
        return r.ended(RetryAfter(exc.seconds, f"politeness: {exc.reason}", "wait"))
    request = r.leases.request if r.leases is not None else r.request
    # The server's time only: not this process's wait for a fetch slot, nor the slot's
    # release (a Redis call that rides out a broker outage for seconds), which the
    # throttle would otherwise read as the site slowing down and cut its rate.
    with slots, fetch_slots(batch.rt.settings.task.max_fetches):
        started = time.monotonic()
        try:
            response = polite.fetcher(batch, r).fetch_raw(request, batch.allowed)
            ended = time.monotonic()
            if response.status not in request.accept_statuses:
                check_response(response, batch.resources)
        except CrawlError as exc:
            ended = time.monotonic()
            direct = r.leases is None or r.leases.proxy is None
            if isinstance(exc, RateLimited) and direct and batch.rt.throttle is None:
                batch.rt.limiter.penalize(key, exc.retry_after)
            advised = exc.retry_after if isinstance(exc, TransientError) else None
            point = FetchPoint(exc.status or 0, 0, ended - started, advised, ended)
            _logged(batch, r, point)
            return r.replace(fetch=point).failed(exc)
    point = FetchPoint(response.status, len(response.body), ended - started, None, ended,
                       response.from_cache, polite.renders(batch, r))
    _logged(batch, r, point)
    return r.replace(fetch=point, response=response)


def _logged(batch: Batch, r: UnitRun, point: FetchPoint) -> None:
    """The fetch's DEBUG line (the URL redacted, the proxy by its id); free above DEBUG."""
    if log.isEnabledFor(logging.DEBUG):
        request = r.leases.request if r.leases is not None else r.request
        assert request is not None
        log_fetch(log, site=batch.site.name, step=batch.step.name.split(".", 1)[-1],
                  url=request.full_url, status=point.status, nbytes=point.nbytes,
                  seconds=point.seconds, proxy=r.leases.proxy if r.leases else None,
                  job_id=batch.job_id)


def _slots(batch: Batch, r: UnitRun, bounds: Bounds) -> ExitStack:
    """The bucket's slot, and its exit's when the site limits each proxy; raises
    ``MustWait`` (nothing held) when the unit must wait longer than an inline sleep."""
    settings = batch.rt.settings.politeness
    site = batch.site.name
    wanted: list[tuple[str, Politeness | None]] = [
        (bounds.bucket, polite.policy(batch, bounds.bucket, bounds.ceiling))]
    if batch.resources is not None and r.leases is not None and r.leases.proxy:
        wanted.append((f"{site}@{r.leases.proxy}", batch.resources.declared.per_exit))
    if polite.renders(batch, r):  # browsers are the expensive resource: capped per site
        wanted.append((f"{site}#browser",
                       Politeness(max_concurrency=batch.rt.settings.browser.site_pages)))
    held = ExitStack()
    try:
        for bucket, policy in wanted:
            if policy is not None:
                held.enter_context(acquire(batch.rt.limiter, bucket, policy,
                                           settings.max_inline_wait_s,
                                           max_wait_s=settings.max_wait_s))
    except MustWait:
        held.close()
        raise
    return held
