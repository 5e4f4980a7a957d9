"""Launching a chain: checked against the declared steps, recorded, its root published.

The job records its chain and the settings of every site it crawls, so that every
unit, on any worker, sees the same chain and the same ``base_url``; a chain built ad
hoc in a shell, or pointed at another server, needs no worker restart.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from chains.runtime import registry
from chains.runtime.checks import ChainError, check_chain
from chains.runtime.dispatch import Publisher
from chains.runtime.job import Job
from chains.runtime.session import current
from chains.runtime.units import Unit, make_unit
from utils.logs import log_job

if TYPE_CHECKING:
    from chains.runtime.context import Runtime
    from chains.runtime.model import Chain

LAUNCH_QUEUE = "crawlchain"

log = logging.getLogger(__name__)


def worker_queues() -> set[str]:
    """The queues workers consume by default: every site's, a step's own, and beat's."""
    own = {s.queue for s in registry.steps().values() if s.queue}
    return {*registry.site_names(), *own, LAUNCH_QUEUE}


def chain_sites(chain: Chain) -> list[str]:
    return sorted({spec.task.split(".", 1)[0] for spec in chain.steps.values()})


def split_settings(chain: Chain, params: Mapping[str, Any]
                   ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Keyword arguments of a launch, as (start params, {site: settings overrides}).

    A keyword that names a field of a site's settings sets it; a name that is both a
    setting and a field of the start step's input is refused as ambiguous.
    """
    start_fields = registry.step(chain.steps[chain.start].task).input.model_fields
    root: dict[str, Any] = {}
    overrides: dict[str, dict[str, Any]] = {site: {} for site in chain_sites(chain)}
    for key, value in params.items():
        owners = [s for s in overrides if key in registry.site(s).settings.model_fields]
        if owners and key in start_fields:
            raise ChainError(f"launch of {chain.name!r}: {key!r} is both a setting of "
                             f"{owners[0]} and a field of the start step's input; pass the "
                             f"setting as settings={{{owners[0]!r}: {{{key!r}: ...}}}}")
        if owners:
            for site in owners:
                overrides[site][key] = value
        else:
            root[key] = value
    return root, overrides


RootUnits = Mapping[str, Sequence[Mapping[str, Any]]]


def launch(chain: Chain, params: dict[str, Any], job_id: str | None = None,
           runtime: Runtime | None = None,
           settings: Mapping[str, Mapping[str, Any]] | None = None,
           roots: RootUnits | None = None) -> Job:
    """Create the job, register its root unit, publish it; returns the handle at once.

    ``params`` mixes the start step's params and site settings (``split_settings``);
    ``settings`` sets a site's settings explicitly. ``roots`` adds root units of any
    step of the chain, by step (a generic crawl's further start pages and its
    sitemaps), all at depth 0 beside the start unit.
    """
    return launch_many(chain, [params], [job_id] if job_id else None, runtime, settings,
                       roots)[0]


def launch_many(chain: Chain, params: list[dict[str, Any]], job_ids: list[str] | None = None,
                runtime: Runtime | None = None,
                settings: Mapping[str, Mapping[str, Any]] | None = None,
                roots: RootUnits | None = None) -> list[Job]:
    """One job per params, the chain checked once: a sharded start (Scrapy's start URLs)
    reaches the queue at once rather than one full launch after another. ``roots``:
    further root units of every job, as in ``launch``."""
    rt = runtime or current()
    check_chain(chain, registry.steps(), worker_queues())
    unknown = sorted(set(roots or {}) - set(chain.steps))
    if unknown:
        raise ChainError(f"launch of {chain.name!r}: root units name {', '.join(unknown)}, "
                         f"not steps of the chain ({', '.join(chain.steps)})")
    ids = job_ids or [uuid.uuid4().hex[:16] for _ in params]
    read: dict[str, dict[str, Any]] = {}  # a site's settings, by overrides: read once
    jobs = []
    for job_id, given in zip(ids, params, strict=True):
        root, overrides = split_settings(chain, given)
        for site, values in (settings or {}).items():
            overrides.setdefault(site, {}).update(values)
        fixed = {}
        for site, values in overrides.items():
            key = json.dumps([site, values], sort_keys=True, default=str)
            if key not in read:
                read[key] = registry.site(site).read_settings(
                    rt.settings.env_file, **values).model_dump(mode="json")
            fixed[site] = read[key]
        jobs.append((job_id, root, fixed))
    rt.ledger.create_jobs(chain.model_dump(mode="json"), jobs)
    publisher = Publisher(rt.dispatch, rt.ledger)
    for job_id, root, _ in jobs:
        publisher.spawn(chain, job_id, root_units(chain, root, roots or {}), depth=0)
        log_job(log, "started", job_id, chain=chain.name)
    return [Job(job_id, rt.ledger, rt.dispatch) for job_id in ids]


def root_units(chain: Chain, root: Mapping[str, Any], more: RootUnits) -> dict[str, list[Unit]]:
    """The start unit and any further roots, by step, each unit once."""
    units: dict[str, dict[str, Unit]] = {}
    for step, params in [(chain.start, root)] + [(s, p) for s, ps in more.items() for p in ps]:
        unit = make_unit(step, params)
        units.setdefault(step, {}).setdefault(unit["id"], unit)
    return {step: list(found.values()) for step, found in units.items()}
