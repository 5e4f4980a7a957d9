"""The prepare phase: what every unit of a batch will be fetched as, or why it will not.

The poison check (a unit whose worker died, or whose message raised, too often),
params validated (invalid ones fail for good), the request built under the site's
default browser headers, the job's allowed domains, the recrawl decision for the whole
batch in one dedup round trip and one tree round trip (``chains.runtime.tree``: a fresh
unit is skipped only when its children are known, and never when it was the last page
of its list and the policy says ``last_page_volatile``), robots.txt
(``pipeline.robots``) and the politeness each fetch will be under (``pipeline.polite``:
its bucket and ceiling), both looked up once per origin of the batch, and the job's cap
on the step's units (``Step.max_units``, one round trip: ``chains.runtime.quota``). The
values it fills are ``pipeline.batch``'s.
"""

from __future__ import annotations

from chains.runtime.extensions import UnitContext
from chains.runtime.pipeline import polite, robots
from chains.runtime.pipeline.batch import Batch, RetryAfter, Skipped, UnitRun
from chains.runtime.quota import Quota
from chains.runtime.tree import Tree
from exceptions import OffSite, PermanentError
from external_interface import recrawl


def prepare(batch: Batch, runs: list[UnitRun]) -> list[UnitRun]:
    """Poison check, params, requests, then the recrawl decision, robots.txt and the
    job's cap on the step, of every unit."""
    runs = _recrawl(batch, [_prepare_one(batch, r) for r in runs])
    return _within_cap(batch, _obey_robots(batch, runs))


def _recrawl(batch: Batch, runs: list[UnitRun]) -> list[UnitRun]:
    """Fresh units skipped (their stored children known), the others planned."""
    step = batch.envelope["step"]
    policy = batch.chain.steps[step].recrawl
    if policy is None:
        return runs
    live = [r for r in runs if r.live and r.request is not None]
    plans = recrawl.plan(batch.rt.dedup, policy, [
        (r.request, r.first, r.unit.get("page", 0) == 0) for r in live if r.request])
    before = Tree(batch.rt.redis, batch.chain.name).load([r.unit["id"] for r in live])
    decided = {}
    for r, plan, spawned in zip(live, plans, before, strict=True):
        skip = plan is not None and plan.skip and spawned is not None and not (
            policy.last_page_volatile and not spawned.has_next(step, r.unit.get("page", 0)))
        decided[id(r)] = (plan, spawned, skip)
    out = []
    for r in runs:
        plan, spawned, skip = decided.get(id(r), (None, None, False))
        r = r.replace(recrawl=plan, before=spawned)
        out.append(r.ended(Skipped("fresh")) if skip else r)
    return out


def _obey_robots(batch: Batch, runs: list[UnitRun]) -> list[UnitRun]:
    """Each live unit with its politeness ``Bounds``, or ended when robots.txt refuses its
    URL (for good, or for now); each origin's rules and ceiling looked up once."""
    live = [r for r in runs if r.live and r.request is not None]
    if not live:
        return runs
    urls = [r.request.full_url for r in live if r.request is not None]
    verdicts = robots.verdicts(batch, urls)
    bounds = polite.bounds(batch, urls, [v.crawl_delay if v else None for v in verdicts])
    decided = {}
    for r, url, verdict, bound in zip(live, urls, verdicts, bounds, strict=True):
        refused = robots.refusal(batch, url, verdict)
        if refused is None:
            decided[id(r)] = r.replace(bounds=bound)
        elif refused.wait_s is None:
            decided[id(r)] = r.ended(Skipped(refused.reason))
        else:
            decided[id(r)] = r.ended(RetryAfter(refused.wait_s, refused.reason, "wait"))
    return [decided.get(id(r), r) for r in runs]


def _within_cap(batch: Batch, runs: list[UnitRun]) -> list[UnitRun]:
    """Live units past the job's cap on the step's units end skipped, unfetched."""
    cap = batch.chain.steps[batch.envelope["step"]].max_units
    live = [r for r in runs if r.live]
    if cap is None or not live:
        return runs
    admitted = Quota(batch.rt.redis).claim(batch.job_id, batch.envelope["step"], cap,
                                           [r.unit["id"] for r in live])
    refused = {id(r) for r, ok in zip(live, admitted, strict=True) if not ok}
    return [r.ended(Skipped("max-units")) if id(r) in refused else r for r in runs]


def poison_reason(ends: int, raised: dict[str, int]) -> str:
    """Why a unit is poison, as it happened: of its ``ends`` starts that did not end
    cleanly, those its message raised (``raised``: reason -> times, recorded by the
    worker that lived through it) and the rest, when its worker died holding it."""
    parts = [f"raised {reason} {times} times" for reason, times in
             sorted(raised.items(), key=lambda kv: -kv[1])]
    died = ends - sum(raised.values())
    if died > 0 or not parts:
        parts.append(f"its worker died {max(died, 0)} times while running it")
    return "poison unit: " + "; ".join(parts)


def _prepare_one(batch: Batch, r: UnitRun) -> UnitRun:
    limit = batch.rt.settings.task.max_deliveries
    if r.starts > limit:
        return r.failed(PermanentError(poison_reason(
            r.starts - 1, batch.rt.ledger.raises(batch.job_id, r.unit["id"]))))
    envelope = batch.envelope
    try:
        params = batch.step.params(r.unit["params"])
        ctx = UnitContext(envelope["job"], envelope["step"], batch.step.name, r.unit["id"],
                          params, envelope["depth"], batch.settings)  # type: ignore[arg-type]
        request = batch.site.with_default_headers(
            batch.step.request(params, batch.settings), batch.rt.settings.headers, r.unit["id"],
            polite.client(batch))
        if not batch.allowed.allows_url(request.url):
            raise OffSite(f"{request.url} is outside the job's allowed domains",
                          url=request.url)
    except PermanentError as exc:
        return r.failed(exc)
    return r.replace(ctx=ctx, request=request)
