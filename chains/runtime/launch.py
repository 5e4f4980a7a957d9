"""Launching a chain: a function of a chain and a runtime, as Scrapy's
``CrawlerProcess.crawl(spider)`` is. Checked against the declared steps, recorded, its
root published.

    job = launch(forum, {"base_url": "http://127.0.0.1:8765/forum"}, runtime)

Everything that can be checked is checked before anything is queued (``checks`` for
the chain, ``preflight`` for the params, settings, start URLs and workers): a mistake
is one ``LaunchRefused`` naming the input and the fix, from a shell, the command line
and the job API alike.

The job records its chain (resolved: every link's records and map filled in) and the
settings of every site it crawls, so that every unit, on any worker, sees the same
chain and the same ``base_url``; a chain built ad hoc in a shell, or pointed at another
server, needs no worker restart. The runtime is any ``Launcher``: a worker's, or this
host's session on the cluster (``chains.cluster``), which a Python shell uses.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from chains.runtime import registry
from chains.runtime.checks import resolve
from chains.runtime.dispatch import Dispatch, Publisher
from chains.runtime.extensions import JobEvent, Observer, notify
from chains.runtime.job import Job
from chains.runtime.ledger import RUNNING, Ledger
from chains.runtime.preflight import (
    LaunchRefused,
    WorkerPolicy,
    chain_sites,
    check_roots,
    check_settings,
    check_workers,
    read_settings,
    split_params,
)
from chains.runtime.units import Unit, make_unit
from utils.logs import log_job

if TYPE_CHECKING:
    from chains.runtime.model import Chain
    from config import Settings


class Launcher(Protocol):
    """What a launch needs of a runtime: its settings, ledger, dispatch and observers."""

    @property
    def settings(self) -> Settings: ...

    @property
    def ledger(self) -> Ledger: ...

    @property
    def dispatch(self) -> Dispatch: ...

    @property
    def observers(self) -> tuple[Observer, ...]: ...

LAUNCH_QUEUE = "crawlchain"

log = logging.getLogger(__name__)


def worker_queues() -> set[str]:
    """The queues workers consume by default: every site's, a step's own, and beat's."""
    own = {s.queue for s in registry.steps().values() if s.queue}
    return {*registry.site_names(), *own, LAUNCH_QUEUE}


RootUnits = Mapping[str, Sequence[Mapping[str, Any]]]


def launch(chain: Chain, params: Mapping[str, Any], runtime: Launcher, *,
           settings: Mapping[str, Mapping[str, Any]] | None = None,
           roots: RootUnits | None = None, job_id: str | None = None,
           workers: WorkerPolicy | None = None) -> Job:
    """Create the job, register its root unit, publish it; returns the handle at once.

    ``params`` mixes the start step's params and site settings (``split_params``);
    ``settings`` sets a site's settings explicitly. ``roots`` adds root units of any
    step of the chain, by step (a generic crawl's further start pages and its
    sitemaps), all at depth 0 beside the start unit. ``workers`` says what to do when
    no live worker consumes a queue the chain uses (default: ``LAUNCH_WORKERS``).
    """
    return launch_many(chain, [params], runtime, settings=settings, roots=roots,
                       job_ids=[job_id] if job_id else None, workers=workers)[0]


def launch_many(chain: Chain, params: Sequence[Mapping[str, Any]], runtime: Launcher, *,
                settings: Mapping[str, Mapping[str, Any]] | None = None,
                roots: RootUnits | None = None,
                job_ids: Sequence[str] | None = None,
                workers: WorkerPolicy | None = None) -> list[Job]:
    """One job per params, the chain checked once: a sharded start (Scrapy's start URLs)
    reaches the queue at once rather than one full launch after another. ``roots``:
    further root units of every job, as in ``launch``."""
    planned = plan(chain, params, settings=settings, roots=roots, job_ids=job_ids,
                   env_file=runtime.settings.env_file)
    return start(planned, runtime, workers)


@dataclass(frozen=True)
class Planned:
    """Jobs checked and ready to start: the chain resolved, each job's id, start params
    and sites' settings, and the further root units they share."""

    chain: Chain
    jobs: list[tuple[str, dict[str, Any], dict[str, dict[str, Any]]]]
    roots: RootUnits


def plan(chain: Chain, params: Sequence[Mapping[str, Any]], *,
         settings: Mapping[str, Mapping[str, Any]] | None = None,
         roots: RootUnits | None = None, job_ids: Sequence[str] | None = None,
         env_file: Path | None = None) -> Planned:
    """Every check of what was given, with no connection to anything: the chain, each
    job's params and settings, each root unit's request (``preflight``). A shell or the
    command line calls it before it reaches the cluster, so a typo is named at once."""
    chain = resolve(chain, registry.steps(), worker_queues())
    unknown = sorted(set(roots or {}) - set(chain.steps))
    if unknown:
        raise LaunchRefused(f"chain {chain.name!r}: root units name "
                            f"{', '.join(unknown)}, not steps of the chain "
                            f"({', '.join(chain.steps)})", "roots")
    check_settings(chain, settings or {})
    ids = list(job_ids or [uuid.uuid4().hex[:16] for _ in params])
    read: dict[str, dict[str, Any]] = {}  # a site's settings, by overrides: read once
    jobs = []
    for job_id, given in zip(ids, params, strict=True):
        root, overrides = split_params(chain, given)
        for site, values in (settings or {}).items():
            if site in overrides:
                overrides[site].update(values)
        fixed = {}
        for site, values in overrides.items():
            key = json.dumps([site, values], sort_keys=True, default=str)
            if key not in read:
                read[key] = read_settings(site, values, env_file)
            fixed[site] = read[key]
        check_roots(chain, {chain.start: [root], **(roots or {})}, fixed)
        jobs.append((job_id, root, fixed))
    return Planned(chain, jobs, roots or {})


def start(planned: Planned, runtime: Launcher, workers: WorkerPolicy | None = None
          ) -> list[Job]:
    """The planned jobs recorded and their root units published, once a live worker
    consumes every queue of the chain (``workers``, default ``LAUNCH_WORKERS``)."""
    rt, chain = runtime, planned.chain
    check_workers(chain, rt.ledger.redis, workers or rt.settings.launch.workers)
    rt.ledger.create_jobs(chain.model_dump(mode="json"), planned.jobs)
    publisher = Publisher(rt.dispatch, rt.ledger)
    observers = chain_observers(chain, rt.observers)
    for job_id, root, _ in planned.jobs:
        publisher.spawn(chain, job_id, root_units(chain, root, planned.roots), depth=0,
                        frontier_batch=rt.settings.launch.frontier_batch_size)
        log_job(log, "started", job_id, chain=chain.name)
        for observer in observers:
            notify(observer.job_started, JobEvent(job_id, chain.name, RUNNING))
    return [Job(job_id, rt.ledger, rt.dispatch) for job_id, _, _ in planned.jobs]


def chain_observers(chain: Chain, cluster: Sequence[Observer]) -> list[Observer]:
    """The cluster's observers, then those of every site the chain crawls."""
    return [*cluster, *(o for site in chain_sites(chain) for o in registry.site(site).observers)]


def root_units(chain: Chain, root: Mapping[str, Any], more: RootUnits) -> dict[str, list[Unit]]:
    """The start unit and any further roots, by step, each unit once."""
    units: dict[str, dict[str, Unit]] = {}
    for step, params in [(chain.start, root)] + [(s, p) for s, ps in more.items() for p in ps]:
        unit = make_unit(step, params)
        units.setdefault(step, {}).setdefault(unit["id"], unit)
    return {step: list(found.values()) for step, found in units.items()}
