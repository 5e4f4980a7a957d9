"""What the base task does with a unit's resources, step by step of its batch.

    outfit_unit   before the fetch: equip the request; an empty pool defers the unit
    settle_unit   after fetch and parse: report each resource; a ban marks what to avoid
    spend_rotations  at the close: a burnt resource sends the unit again at once, on a
                  fresh one, until the rotation budget is spent (then RotationsSpent)
    close_batch   at the close: launch the refill chain of a pool that ran dry or low;
                  a refill job's requests, bans, rotations and solves count in the job
                  it serves too
    feed_unit     after the save: a login or registration step's items go into the pool

Only units of steps that declare providers (``Work.gear``) get here: a site that
declares none goes through none of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from exceptions import Banned, NoResource, PermanentError, RotateError, RotationsSpent
from external_interface.providers import rotation
from external_interface.providers.outfit import NeedResource, equip, settle
from external_interface.providers.refill import DeviceItem, SessionItem, credit

if TYPE_CHECKING:
    from chains.engine import Envelope
    from external_interface.resources import Resources
    from utils.units import Work


def outfit_unit(res: Resources, w: Work) -> bool:
    """Equip the unit's request; False (and ``w.defer`` set) when a pool makes it wait.
    Raises ``NoResource`` once the unit has waited ``RESOURCES_MAX_WAITS`` times."""
    assert w.gear is not None and w.request is not None
    try:
        w.outfit = equip(res.providers, w.gear, w.request, w.unit["id"],
                         rotation.avoided(w.unit))
        return True
    except NeedResource as exc:
        w.need = exc.kind
        limits = res.settings.resources
        waits = rotation.waited(w.unit)
        if waits > limits.max_waits:
            raise NoResource(f"no {exc.kind} of {w.gear.site} became available "
                             f"after {limits.max_waits} waits", url=w.request.url) from None
        w.defer = min(exc.seconds or limits.wait_s, res.settings.politeness.max_wait_s)
        return False


def settle_unit(res: Resources, w: Work) -> None:
    """Report how the unit's resources did; a rotate error counts a rotation on the unit."""
    assert w.gear is not None and w.outfit is not None
    avoid = settle(res.providers, w.gear, w.outfit, w.error,
                   res.settings.politeness.max_penalty_s)
    if isinstance(w.error, RotateError):
        rotation.rotated(w.unit, avoid)


def spend_rotations(res: Resources, retry: list[Work]) -> list[Work]:
    """The units to send again at once on fresh resources; past the budget they fail."""
    budget = res.settings.resources.max_rotations
    rotating = [w for w in retry if isinstance(w.error, RotateError) and w.outfit is not None]
    for w in rotating:
        assert w.error is not None
        if rotation.rotations(w.unit) > budget:
            w.error = RotationsSpent(
                f"gave up after {budget} rotations onto fresh resources: {w.error.reason}",
                url=w.error.url, status=w.error.status)
    return [w for w in rotating if not isinstance(w.error, PermanentError)]


def resource_counts(batch: list[Work]) -> dict[str, int]:
    """Bans met and captchas solved, for the job ledger (call before ``spend_rotations``
    turns a last ban into ``RotationsSpent``)."""
    return {"bans": sum(isinstance(w.error, Banned) for w in batch),
            "captcha_solves": sum(w.outfit.solves for w in batch if w.outfit is not None)}


def refill(res: Resources, envelope: Envelope, batch: list[Work]) -> list[str]:
    """Launch the refill chains of the pools this batch found dry or low; returns job ids."""
    from chains.engine import launch
    from chains.registry import get_chain

    wanted: dict[tuple[str, str], Any] = {}
    for w in batch:
        if w.gear is None:
            continue
        kinds = ((w.need,) if w.need else ()) + (w.outfit.low if w.outfit else ())
        for kind in kinds:
            plan = w.gear.declared.refills.get(kind)
            if plan is not None:
                wanted[(w.gear.site, kind)] = plan
    asked_by = {"job": envelope["job"], "step": envelope["step"]}
    jobs = []
    for (site, kind), plan in wanted.items():
        for params in res.providers.refills.claim(kind, site, plan, asked_by):
            jobs.append(launch(get_chain(plan.chain), params, resources=res).job_id)
    return jobs


def close_batch(res: Resources, envelope: Envelope, batch: list[Work],
                spent: dict[str, int]) -> None:
    """Refills for the pools this batch found dry or left low; what a refill job spent
    (requests, bans, rotations, captchas) is counted in the job that asked for it too."""
    refill(res, envelope, batch)
    spent = {name: n for name, n in spent.items() if n}
    if spent:
        credit(res.ledger, envelope["job"], spent)


def feed_unit(res: Resources, w: Work) -> None:
    """Put a refill step's items into their pool, free the refill lock, credit the job
    that ran dry (its summary counts the refresh)."""
    assert w.gear is not None and w.parsed is not None and w.ctx is not None
    kind, site = w.gear.uses.feeds, w.gear.site
    added = 0
    for item in w.parsed.items:
        if kind == "cookie" and isinstance(item, SessionItem):
            res.providers.cookies.add(site, item.account, item.cookies)
            added += 1
        elif kind == "device" and isinstance(item, DeviceItem):
            added += res.providers.devices.add(site, item.device_id)
    if kind is None or not added:
        return
    res.providers.refills.release(kind, site)
    if kind == "cookie":
        res.ledger.count_many(w.ctx.job_id, w.ctx.step, {"cookie_refreshes": added})
        credit(res.ledger, w.ctx.job_id, {"cookie_refreshes": added})
