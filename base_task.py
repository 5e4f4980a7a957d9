"""CrawlTask: the one retrying, timed base of every site step.

A message carries an envelope (job, step, depth) and a batch of units of that
step. The batch goes through phases, each one round trip for all its units:
begin (job state, redelivered units, start counts), prepare (params validated —
invalid ones fail for good — requests built, recrawl decided), fetch and parse
(concurrently, each unit within its own fetch deadline), save (items durable
before anything else), spawn (children registered, then published), close
(dedup marks, then every unit finished in one Lua call; ``chains.outcomes``). A
unit's own order is always save -> children -> mark -> finish, so a crash at any
point leaves it unfinished and it runs again. Units that hit a transient error are retried
together with Celery's ``retry``, and only those.

A step with ``inline_next`` runs its list on in the same message: the batch's next
pages become the next batch, and children wait to fill a message of their step. What
the message holds back is recorded with each finish, so a message that comes back
after its worker died goes on from there (``chains.list_run``).

Site steps subclass nothing: they declare ``Input`` on the decorator and call
``self.crawl`` with their pure ``build_request`` and ``parse`` functions.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import as_completed
from contextlib import ExitStack
from typing import Any, ClassVar

import redis
from celery.exceptions import Reject, SoftTimeLimitExceeded
from celery.utils.log import get_task_logger
from kombu.exceptions import OperationalError
from pydantic import BaseModel

from chains.engine import Envelope, Held, Publisher, Unit, by_depth, children
from chains.list_run import RunOn, let_go, resume
from chains.model import Chain
from chains.outcomes import BatchOutcomes, chain_of, publish_again
from exceptions import (
    CrawlError,
    OffSite,
    PermanentError,
    RateLimited,
    StorageUnavailable,
    TransientError,
)
from external_interface import recrawl
from external_interface.fetch import Request, Response
from external_interface.ledger import Carry
from external_interface.politeness import MustWait, acquire
from external_interface.providers import BanRule
from external_interface.providers.outfit import check_response
from external_interface.providers.task import (
    feed_unit,
    outfit_unit,
    settle_unit,
)
from external_interface.resources import Resources, current, fetch_slots, unit_threads
from external_interface.storage import Item
from sites import site_politeness, task_gear
from utils.step_calls import site_code, validate_params
from utils.units import Done, FetchPoint, HookSignal, Parsed, Signal, UnitContext, Work

__all__ = ["CrawlTask", "Parsed", "Signal", "UnitContext"]

log = get_task_logger(__name__)

INFRASTRUCTURE_ERRORS = (redis.ConnectionError, redis.TimeoutError, OperationalError)


BuildRequest = Callable[[Any], Request]
Parse = Callable[[Any, Response], Parsed]


class CrawlTask(BatchOutcomes):
    """Base task of every site step; one instance serves a whole process."""

    Input: ClassVar[type[BaseModel]]
    acks_late = True
    reject_on_worker_lost = True
    ignore_result = True
    typing = False  # params are validated by ``Input``, not by the call signature

    # -- hooks: override in a site's base class (before_request runs in pool threads) --
    def before_request(self, unit: UnitContext, request: Request) -> Signal:
        return Signal.CONTINUE

    def after_request(self, unit: UnitContext, response: Response) -> Signal:
        return Signal.CONTINUE

    def before_save(self, unit: UnitContext, items: list[Item]) -> Signal:
        return Signal.CONTINUE

    def after_save(self, unit: UnitContext, items: list[Item]) -> Signal:
        return Signal.CONTINUE

    # -- the batch ------------------------------------------------------------
    def crawl(self, envelope: Envelope, units: list[Unit], build_request: BuildRequest,
              parse: Parse) -> dict[str, int]:
        """Run a batch of units of one step; retry only the ones that failed transiently."""
        try:
            return self._crawl(current(), envelope, units, build_request, parse)
        except INFRASTRUCTURE_ERRORS as exc:
            log.warning("state plane or broker unavailable (%s); requeueing the message", exc)
            time.sleep(2.0)
            raise Reject(str(exc), requeue=True) from exc

    def _crawl(self, res: Resources, envelope: Envelope, units: list[Unit],
               build_request: BuildRequest, parse: Parse) -> dict[str, int]:
        job_id = envelope["job"]
        begun = res.ledger.begin(job_id, [u["id"] for u in units])
        if begun.state != "running":
            return {"ignored": len(units)}
        chain = chain_of(job_id)
        carrier = units[0]["id"] if units else ""
        if units and all(finished for finished, _, _ in begun.units):
            envelope, units = resume(res, chain, envelope, carrier)
            if not units:
                return {"ignored": len(begun.units)}
            begun = res.ledger.begin(job_id, [u["id"] for u in units])
        run_on = RunOn.of(chain, envelope["step"], self.request.retries,
                          res.settings.task.soft_time_limit_s)
        out: Counter[str] = Counter()
        carrying = bool(run_on.pages_left) and begun.state == "running"
        held = Held()
        while begun.state == "running":
            batch = [Work(u, starts, first)
                     for u, (finished, starts, first) in zip(units, begun.units, strict=True)
                     if not finished]
            if len(batch) > 1 and any(w.starts > 1 for w in batch):
                out.update(self._isolate(res, chain, envelope, batch))
                break
            held = self._run_batch(res, chain, envelope, batch, build_request, parse,
                                   Held(waiting=held.waiting), run_on.allows())
            try:
                out.update(self._close(res, envelope, batch,
                                       Carry(carrier, held.ids()) if carrying else None))
            except BaseException:  # a retry ends the message: its list goes on in the queue
                let_go(res, chain, envelope, held)
                raise
            if not held.pages:
                break
            run_on.pages_left -= 1
            units = held.pages
            begun = res.ledger.begin(job_id, [u["id"] for u in units])
        return dict(out)

    def _run_batch(self, res: Resources, chain: Chain, envelope: Envelope, batch: list[Work],
                   build_request: BuildRequest, parse: Parse, held: Held,
                   run_on: bool) -> Held:
        """Every phase up to the close; returns what the message holds back to run on."""
        try:
            self._prepare(res, chain, envelope, batch, build_request)
            self._fetch_all(res, batch, parse)
            self._save(res, envelope["job"], batch)
            self._spawn(res, chain, envelope, batch, held, run_on)
        except SoftTimeLimitExceeded:
            log.warning("soft time limit: %d units of %s go back to the queue",
                        sum(not w.ready for w in batch), self.name)
            let_go(res, chain, envelope, held)
        return held

    def _isolate(self, res: Resources, chain: Chain, envelope: Envelope,
                 batch: list[Work]) -> dict[str, int]:
        """A worker died holding this batch: send each unit alone, so that a unit that
        kills its worker every time ends as poison without taking its batch-mates along."""
        log.warning("batch of %d %s units came back after a worker died; splitting it",
                    len(batch), envelope["step"])
        res.ledger.end_attempt(envelope["job"], [w.unit["id"] for w in batch])
        for w in batch:
            publish_again(res, envelope, [w.unit])
        return {"isolated": len(batch)}

    def _prepare(self, res: Resources, chain: Chain, envelope: Envelope, batch: list[Work],
                 build_request: BuildRequest) -> None:
        """Poison check, params, requests and the recrawl decision of every unit."""
        limit = res.settings.task.max_deliveries
        gear = task_gear(self.name, tuple(res.settings.resources.disabled_sites))
        for w in batch:
            w.gear = gear
            if w.starts > limit:
                w.error = PermanentError(
                    f"poison unit: its worker died {w.starts - 1} times while running it")
                continue
            try:
                params = validate_params(self.Input, w.unit["params"])
                w.ctx = UnitContext(envelope["job"], envelope["step"], self.name,
                                    w.unit["id"], params, envelope["depth"])
                w.request = site_code(build_request, params)
                if not chain.allows(w.request.url):
                    raise OffSite(f"{w.request.url} is outside the job's allowed domains",
                                  url=w.request.url)
            except PermanentError as exc:
                w.error = exc
        planned = [w for w in batch if w.live]
        policy = chain.steps[envelope["step"]].recrawl
        plans = recrawl.plan(res.dedup, policy, [
            (w.request, w.first, w.unit.get("page", 0) == 0) for w in planned if w.request])
        for w, plan in zip(planned, plans, strict=True):
            w.recrawl = plan
            if plan is not None and plan.skip:
                w.end, w.ready = Done("skipped"), True

    def _fetch_all(self, res: Resources, batch: list[Work], parse: Parse) -> None:
        """Fetch the live units, concurrently when there are several, and parse each in
        this thread as its response comes: pool threads only wait on sockets, so that
        parsing does not hand the GIL between threads (lxml releases it in every call)."""
        live = [w for w in batch if w.live]
        if len(live) == 1:
            self._parse_one(res, live[0], parse, self._fetch_one(res, live[0]))
        elif live:
            pool = unit_threads(res.settings.task.unit_threads)
            fetches = {pool.submit(self._fetch_one, res, w): w for w in live}
            for fetch in as_completed(fetches):
                self._parse_one(res, fetches[fetch], parse, fetch.result())

    def _fetch_one(self, res: Resources, w: Work) -> Response | None:
        """The unit's response; None when it has none to parse (``w`` says why)."""
        assert w.ctx is not None and w.request is not None
        try:
            self._obey("before_request", self.before_request(w.ctx, w.request))
            return self._polite_fetch(res, w)
        except HookSignal:
            w.end, w.ready = Done("skipped"), True
        except CrawlError as exc:
            w.error = exc
        return None

    def _parse_one(self, res: Resources, w: Work, parse: Parse,
                   response: Response | None) -> None:
        assert w.ctx is not None
        try:
            if response is not None:
                self._obey("after_request", self.after_request(w.ctx, response))
                started = time.monotonic()
                w.parsed = site_code(parse, w.ctx.params, response)
                w.parse_s = time.monotonic() - started
                self._obey("before_save", self.before_save(w.ctx, w.parsed.items))
        except HookSignal:
            w.end, w.ready = Done("skipped"), True
        except CrawlError as exc:
            w.error = exc
        if w.outfit is not None and w.fetched:
            settle_unit(res, w)

    def _polite_fetch(self, res: Resources, w: Work) -> Response | None:
        """Fetch within the site's cluster-wide slot; None when the unit must wait longer.

        A 429 cools the whole site down (capped), not just this unit; through a pooled
        proxy it rests that exit instead (sites limit per address; see ``settle``).
        """
        assert w.request is not None
        if w.gear is not None and not outfit_unit(res, w):
            return None
        site = self.name.split(".", 1)[0]
        slots = self._slots(res, site, w)
        if slots is None:
            return None
        with slots, fetch_slots(res.settings.task.max_fetches):
            w.fetched = True
            request = w.outfit.request if w.outfit is not None else w.request
            try:
                return self._timed_fetch(res, w, request, w.gear.declared.bans if w.gear else ())
            except RateLimited as exc:
                if w.outfit is None or w.outfit.proxy is None:
                    res.limiter.penalize(site, exc.retry_after)
                raise

    def _slots(self, res: Resources, site: str, w: Work) -> ExitStack | None:
        """The site's slot, and its exit's when the site limits each proxy; None when the
        unit must wait longer (``w.defer`` set, nothing held)."""
        settings = res.settings.politeness
        wanted = [(site, site_politeness(site, settings))]
        if w.gear is not None and w.outfit is not None and w.outfit.proxy:
            wanted.append((f"{site}@{w.outfit.proxy}", w.gear.declared.per_exit))
        held = ExitStack()
        try:
            for bucket, policy in wanted:
                if policy is not None:
                    held.enter_context(acquire(res.limiter, bucket, policy,
                                               settings.max_inline_wait_s,
                                               max_wait_s=settings.max_wait_s))
        except MustWait as exc:
            held.close()
            w.defer = exc.seconds
            return None
        return held

    def _timed_fetch(self, res: Resources, w: Work, request: Request,
                     bans: tuple[BanRule, ...] = ()) -> Response:
        """Fetch, judge (a site's ban rules by content, then the status) and note it on the
        unit for the batch's metrics: status (0 when no response came), bytes, seconds."""
        started = time.monotonic()
        try:
            response = res.fetcher.fetch_raw(request)
            check_response(response, bans)
        except CrawlError as exc:
            w.fetch = FetchPoint(exc.status or 0, 0, time.monotonic() - started)
            raise
        w.fetch = FetchPoint(response.status, len(response.body), time.monotonic() - started)
        return response

    def _save(self, res: Resources, job_id: str, batch: list[Work]) -> None:
        """One bulk write of every changed item: durable before any unit moves on."""
        parsed = [w for w in batch if w.live and w.parsed is not None]
        fresh: list[Item] = []
        for w in parsed:
            assert w.parsed is not None
            unchanged = w.recrawl is not None and w.recrawl.unchanged(res.dedup, w.parsed.items)
            w.end = Done("done", 0 if unchanged else len(w.parsed.items), unchanged)
            if not unchanged:
                fresh += w.parsed.items
        try:
            if fresh:
                res.store.upsert(job_id, fresh)
        except StorageUnavailable as exc:
            for w in parsed:
                w.end, w.error = None, exc
            return
        for w in parsed:
            self._after_save(res, w)

    def _after_save(self, res: Resources, w: Work) -> None:
        assert w.ctx is not None and w.parsed is not None
        if w.gear is not None and w.gear.uses.feeds is not None:
            feed_unit(res, w)
        try:
            self._obey("after_save", self.after_save(w.ctx, w.parsed.items))
        except HookSignal:
            pass  # the items are saved already: there is nothing left to skip
        except CrawlError as exc:
            w.end, w.error = None, exc

    def _spawn(self, res: Resources, chain: Chain, envelope: Envelope, batch: list[Work],
               held: Held, run_on: bool) -> None:
        """Register every child of the batch in one call, then publish them by step.

        With ``run_on``, the batch's new next pages go to ``held.pages`` to run inline
        and children wait in ``held`` for full messages; once the list ends (no page
        held), whatever waits is published.
        """
        done = [w for w in batch if w.end is not None and w.end.outcome == "done"
                and w.error is None and w.parsed is not None]
        publisher = Publisher(res.app, res.ledger)
        sources = {link.records for link in chain.links_from(envelope["step"])}
        for rerun in (False, True):  # children of a parent that runs again are all resent
            kids: dict[str, dict[str, Unit]] = {}  # two parents may name the same child
            for w in (w for w in done if w.first != rerun):
                assert w.parsed is not None
                found = children(chain, envelope["step"], w.parsed.records(sources),
                                 w.parsed.next_params(), w.unit.get("page", 0))
                for step, units in found.items():
                    kids.setdefault(step, {}).update((u["id"], u) for u in units)
            for depth, group in by_depth(envelope["step"], envelope["depth"], kids).items():
                publisher.spawn(chain, envelope["job"], group, depth, rerun,
                                held if run_on else None, envelope["step"])
        if not held.pages:
            publisher.flush(chain, envelope["job"], held)
        for w in done:
            w.ready = True

    def _obey(self, hook: str, signal: Signal) -> None:
        if signal is Signal.SKIP:
            raise HookSignal(f"{hook} asked to skip")
        if signal is Signal.RETRY:
            raise TransientError(f"{hook} asked to retry")
        if signal is Signal.ABORT:
            raise PermanentError(f"{hook} aborted the unit")

    def on_failure(self, exc: BaseException, task_id: str, args: tuple[Any, ...],
                   kwargs: dict[str, Any], einfo: Any) -> None:
        """The message died (hard time limit, a bug in the loop): requeue its units.

        Their start counts were not taken back, so a unit that keeps killing its
        message ends as a poison unit after ``max_deliveries`` starts.
        """
        if len(args) != 2:
            return
        envelope, units = args
        res = current()
        job_id = envelope["job"]
        left = [u for u in units if not res.ledger.is_finished(job_id, u["id"])]
        log.error("message %s of %s died (%r); requeueing %d units", task_id, self.name, exc,
                  len(left))
        if left and not isinstance(exc, Reject):
            publish_again(res, envelope, left)


