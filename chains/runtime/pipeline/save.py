"""The save phase: every changed item of the batch in one bulk write, durable first.

A page whose items and leads (the children it spawns, the follow records they come
from) hash as they did at its last crawl is ``unchanged``: nothing is written. Items
are upserted by key, so a unit run twice leaves one record. Nothing moves on before
the write returns: a store that refuses it (``StorageUnavailable``)
sends every parsed unit of the batch back to be retried, children unspawned. After
the write: a refill step's items go into their pool (a login's session into the
cookie pool), and the ``after_save`` hook runs.
"""

from __future__ import annotations

from typing import Any

from chains.runtime.pipeline.prepare import Batch, Skipped, UnitRun, obey
from chains.runtime.units import children
from exceptions import CrawlError, StorageUnavailable
from external_interface.providers.refill import DeviceItem, SessionItem
from external_interface.storage import Item


def save(batch: Batch, runs: list[UnitRun]) -> list[UnitRun]:
    """Every run, the parsed ones saved (``stored`` set) or failed with the store."""
    dedup, step, chain = batch.rt.dedup, batch.envelope["step"], batch.chain
    sources = {link.records for link in chain.links_from(step)}
    saved: list[UnitRun] = []
    fresh: list[Item] = []
    for r in runs:
        parsed = r.parsed
        if r.live and parsed is not None:
            records, after = parsed.records(sources), parsed.next_params()
            kids = children(chain, step, records, after, r.unit.get("page", 0))
            unchanged = r.recrawl is not None and r.recrawl.unchanged(
                dedup, parsed.items, [records, after])
            r = r.but(unchanged=unchanged, stored=0 if unchanged else len(parsed.items),
                      kids=kids)
            fresh += [] if unchanged else parsed.items
        saved.append(r)
    try:
        if fresh:
            batch.rt.store.upsert(batch.job_id, fresh)
    except StorageUnavailable as exc:
        return [r.failed(exc) if r.stored is not None else r for r in saved]
    return [_after_save(batch, r) if r.stored is not None else r for r in saved]


def _after_save(batch: Batch, r: UnitRun) -> UnitRun:
    assert r.ctx is not None and r.parsed is not None
    if batch.gear is not None and batch.gear.uses.feeds is not None:
        _feed(batch, r.parsed.items)
    try:
        fate = obey("after_save", batch.hooks.after_save(r.ctx, r.parsed.items))
    except CrawlError as exc:
        return r.failed(exc)
    if fate is None or isinstance(fate, Skipped):
        return r  # the items are saved already: there is nothing left to skip
    return r.but(stored=None).ended(fate)


def _feed(batch: Batch, items: list[Any]) -> None:
    """Put a refill step's items into their pool, free the refill lock, credit the job
    that ran dry (its summary counts the refresh)."""
    assert batch.gear is not None
    kind, site, providers = batch.gear.uses.feeds, batch.gear.site, batch.rt.providers
    added = 0
    for item in items:
        if kind == "cookie" and isinstance(item, SessionItem):
            providers.cookies.add(site, item.account, item.cookies)
            added += 1
        elif kind == "device" and isinstance(item, DeviceItem):
            added += providers.devices.add(site, item.device_id)
    if kind is None or not added:
        return
    providers.refills.release(kind, site)
    if kind == "cookie":
        step = batch.envelope["step"]
        batch.rt.ledger.count_many(batch.job_id, step, {"cookie_refreshes": added})
        batch.rt.ledger.credit_requester(batch.job_id, {"cookie_refreshes": added})
