"""The save phase: every changed item of the batch through the item pipelines, then in one
bulk write, durable first.

A page whose items and leads (the children it spawns, the follow records they come
from) hash as they did at its last crawl is ``unchanged``: nothing is written. The
others' items go through the pipelines (the cluster's, then the site's: each may change
an item or drop it with a reason, ``extensions.ItemPipeline``), then are upserted by key,
so a unit run twice leaves one record. Nothing moves on before the write returns: a store
that refuses it (``StorageUnavailable``) sends every parsed unit of the batch back to be
retried, children unspawned. After the write, a refill step's items go into their pool
(a login's session into the cookie pool).
"""

from __future__ import annotations

from typing import Any

from chains.runtime.extensions import DropItem, UnitContext
from chains.runtime.pipeline.batch import Batch, UnitRun
from chains.runtime.step import site_code
from chains.runtime.units import children
from exceptions import CrawlError, ParseError, StorageUnavailable
from external_interface.providers.refill import DeviceItem, SessionItem
from external_interface.storage import Item


def save(batch: Batch, runs: list[UnitRun]) -> list[UnitRun]:
    """Every run, the parsed ones saved (``stored`` set) or failed with the store."""
    dedup, step, chain = batch.rt.dedup, batch.envelope["step"], batch.chain
    sources = {link.records or "" for link in chain.links_from(step)}
    saved: list[UnitRun] = []
    fresh: list[Item] = []
    for r in runs:
        parsed = r.parsed
        if r.live and parsed is not None:
            records, after = parsed.records(sources), parsed.next_params()
            spawns = children(chain, step, records, after, r.unit.get("page", 0))
            unchanged = r.recrawl is not None and r.recrawl.unchanged(
                dedup, parsed.items, [records, after])
            try:
                kept, dropped = ([], ()) if unchanged else through_pipelines(batch, r)
            except CrawlError as exc:
                saved.append(r.failed(exc))
                continue
            r = r.replace(unchanged=unchanged, stored=len(kept), children=spawns,
                          dropped=dropped)
            fresh += kept
        saved.append(r)
    try:
        if fresh:
            batch.rt.store.upsert(batch.job_id, fresh)
    except StorageUnavailable as exc:
        return [r.failed(exc) if r.stored is not None else r for r in saved]
    if batch.resources is not None and batch.resources.uses.feeds is not None:
        for r in saved:
            if r.stored and r.parsed is not None:
                _feed(batch, r.parsed.items)
    return saved


def through_pipelines(batch: Batch, r: UnitRun) -> tuple[list[Item], tuple[str, ...]]:
    """The unit's items as the pipelines leave them, and the reasons of those dropped.
    A pipeline's bug (an exception that is neither ``DropItem`` nor a ``CrawlError``)
    fails the unit, naming the pipeline."""
    assert r.parsed is not None and r.ctx is not None
    items: list[Item] = list(r.parsed.items)
    if not batch.pipelines:
        return items, ()
    kept: list[Item] = []
    dropped: list[str] = []
    passing = (*batch.rt.interrupts, DropItem)
    for item in items:
        try:
            kept.append(_through(batch, item, r.ctx, passing))
        except DropItem as drop:
            dropped.append(drop.reason)
    return kept, tuple(dropped)


def _through(batch: Batch, item: Item, ctx: UnitContext,
             passing: tuple[type[BaseException], ...]) -> Item:
    for pipeline in batch.pipelines:
        item = site_code(pipeline.process_item, item, ctx, passing=passing)
        if not isinstance(item, Item):
            raise ParseError(f"{type(pipeline).__name__}.process_item returned "
                             f"{type(item).__name__}, not an Item (raise DropItem to drop)")
    return item


def _feed(batch: Batch, items: list[Any]) -> None:
    """Put a refill step's items into their pool, free the refill lock, credit the job
    that ran dry (its summary counts the refresh)."""
    assert batch.resources is not None
    kind, site, providers = batch.resources.uses.feeds, batch.resources.site, batch.rt.providers
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
