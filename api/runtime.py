"""The API's one door into the crawl runtime: every call the endpoints make, in one place.

Each method calls the code the ``crawlchain`` command calls for the same verb (read
``cli/``): ``launch`` as ``crawlchain launch`` (so the launch-time checks
apply to both), the ledger's ``history`` as ``crawlchain jobs``, ``Job.overview`` as
the monitor, ``Job.pause``/``resume``/``cancel``/``retry_failed`` as the verbs, the
registry for chains and steps, the monitor's snapshot sections for workers, queues and
the sites' politeness and throttle, the export module for items. When the runtime's
modules move or are renamed, this file is the one to re-point.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from pydantic import ValidationError

from chains.runtime import registry
from chains.runtime.checks import ChainError
from chains.runtime.job import Job, history
from chains.runtime.job_control import JobStateError
from chains.runtime.launch import launch, worker_queues
from chains.runtime.ledger import TERMINAL
from chains.runtime.metrics import Metrics
from chains.runtime.model import Chain
from chains.runtime.preflight import chain_sites
from exceptions import InvalidParams
from external_interface.storage.export import Selection, export
from monitor import snapshot
from utils.urls import redact_data

if TYPE_CHECKING:
    from celery import Celery

    from chains.runtime.context import Runtime

WORKERS_FRESH_S = 2.0  # the workers view is asked of the broker at most this often

__all__ = ["TERMINAL", "Chain", "ChainError", "Cluster", "InvalidParams", "JobStateError",
           "LaunchError", "UnknownJob"]


class UnknownJob(LookupError):
    """No job of that id in the ledger."""


class LaunchError(ValueError):
    """A launch refused before anything was queued; ``field`` names the input at fault
    (``chain``, ``params.page``, ``settings.base_url``, ``crawl.start``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class Cluster:
    """The runtime as the API sees it: one ``Runtime`` (ledger, store, dispatch) and the
    Celery app its dispatch sends with (the workers and queues views ask it)."""

    def __init__(self, runtime: Runtime, app: Celery, inspect_timeout_s: float = 1.0) -> None:
        self.rt = runtime
        self.app = app
        self.inspect_timeout_s = inspect_timeout_s
        self._sending = threading.Lock()  # one verb publishes at a time
        self._workers: tuple[float, dict[str, Any]] | None = None

    @classmethod
    def current(cls, inspect_timeout_s: float = 1.0) -> Cluster:
        """This process's runtime, as the command line builds it (``session.current``)."""
        from chains.broker.dispatch import CeleryDispatch
        from chains.broker.session import current

        runtime = current()
        assert isinstance(runtime.dispatch, CeleryDispatch)
        return cls(runtime, runtime.dispatch.app, inspect_timeout_s)

    # -- launching ------------------------------------------------------------------
    def launch(self, chain_name: str, params: Mapping[str, Any], settings: Mapping[str, Any],
               http_cache: bool = False, crawl: Mapping[str, Any] | None = None) -> Job:
        """A job of the named chain, as ``crawlchain launch`` starts it; ``LaunchError``
        names the field when the input is refused before anything is queued."""
        if chain_name == "crawl":
            return self._launch_crawl(params, settings, http_cache, crawl)
        if crawl:
            raise LaunchError("crawl", f"crawl options are for the generic crawl (chain "
                              f"'crawl'), not for {chain_name!r}")
        chain = self.chain(chain_name)
        check_launch(chain, params, settings, self.rt.settings.env_file)
        extra = {"http_cache": True} if http_cache else {}
        with self._sending:
            try:
                return launch(chain, {**params, **settings, **extra}, self.rt)
            except (ChainError, InvalidParams, ValueError) as exc:
                raise LaunchError(getattr(exc, "field", "") or "chain", str(exc)) from None

    def _launch_crawl(self, params: Mapping[str, Any], settings: Mapping[str, Any],
                      http_cache: bool, crawl: Mapping[str, Any] | None) -> Job:
        from chains.cluster import launch_crawl
        from chains.crawl import DEFAULT_DEPTH

        if params or settings:
            raise LaunchError("params", "the generic crawl takes its options in 'crawl' "
                              "(start, allow_domain, max_depth, ...), not params or settings")
        options = dict(crawl or {})
        if not options.get("start"):
            raise LaunchError("crawl.start", "the generic crawl needs at least one start URL")
        depth = options.get("max_depth")
        with self._sending:
            try:
                return launch_crawl(
                    options["start"], options.get("allow_domain", []),
                    DEFAULT_DEPTH if depth is None else depth, options.get("allow", []),
                    options.get("deny", []), options.get("max_pages"),
                    options.get("sitemap", []), not options.get("no_sitemaps", False),
                    http_cache, runtime=self.rt)
            except (ChainError, ValueError) as exc:
                raise LaunchError(getattr(exc, "field", "") or "crawl", str(exc)) from None

    # -- jobs ---------------------------------------------------------------------
    def jobs(self, limit: int) -> list[dict[str, Any]]:
        """The newest jobs, as ``crawlchain jobs`` lists them."""
        return history(self.rt.ledger, limit)

    def job(self, job_id: str) -> Job:
        if self.rt.ledger.state(job_id) is None:
            raise UnknownJob(f"job {job_id} is unknown to the ledger: GET /api/jobs lists "
                             "the jobs it knows")
        return Job(job_id, self.rt.ledger, self.rt.dispatch)

    def summary(self, job_id: str, failures: int = 20) -> dict[str, Any]:
        """``Job.overview`` (progress, throughput, failure groups; gone units in the steps'
        counts) with the chain's name, the start params (secrets masked), and the
        newest failed units."""
        job = self.job(job_id)
        meta = self.rt.ledger.meta(job_id)
        overview = job.overview()
        stored = Chain.model_validate(self.rt.ledger.chain_of(job_id))
        return {**overview, "chain": stored.name,
                "params": redact_data(_json(meta.get("params"))),
                "failures": job.status(failures)["failures"] if failures else []}

    def pause(self, job_id: str) -> None:
        self.job(job_id).pause()

    def resume(self, job_id: str) -> int:
        with self._sending:
            return self.job(job_id).resume()

    def cancel(self, job_id: str) -> int:
        """The ledger's cancel: once it returns, every worker that takes a message of the
        job finds it cancelled and starts nothing, and every unit not finished is
        recorded cancelled (those fetching finish, their outcome not counted)."""
        return self.job(job_id).cancel()

    def retry(self, job_id: str, step: str | None, error: str | None) -> int:
        with self._sending:
            return self.job(job_id).retry_failed(step, error)

    def healthy(self) -> bool:
        """The state Redis answers."""
        return bool(self.rt.redis.ping())

    def state(self, job_id: str) -> str:
        return self.rt.ledger.state(job_id) or "unknown"

    def throughput(self, job_id: str) -> dict[str, Any]:
        """Units finished per second over the job's life, in the metrics' time buckets."""
        job = self.job(job_id)
        meta = self.rt.ledger.meta(job.job_id)
        created = float(meta.get("created_at", time.time()))
        end = float(meta["finished_at"]) if "finished_at" in meta else time.time()
        bucket_s, points = Metrics(self.rt.redis).life(job_id, created, end)
        return {"job_id": job_id, "bucket_s": bucket_s, "created_at": created,
                "points": [{"t": t, "units_per_s": round(n / bucket_s, 3)} for t, n in points]}

    def items(self, job_id: str, fmt: str, out: TextIO, collection: str | None = None,
              fields: tuple[str, ...] | None = None) -> int:
        """Write the job's items (one collection's, or every collection's) to ``out``, as
        ``crawlchain export JOB_ID`` does; records stream from the store one by one."""
        store = self.rt.store
        chosen = (collection,) if collection else tuple(store.collections())
        return export(store, Selection(chosen, collection is None, job_id, None, fields),
                      fmt, out)

    # -- chains and steps -----------------------------------------------------------
    def chains(self) -> dict[str, Chain]:
        return registry.chains()

    def chain(self, name: str) -> Chain:
        known = registry.chains()
        if name not in known:
            raise LaunchError("chain", f"no chain named {name!r}; known: "
                              f"{', '.join(sorted(known)) or 'none'}")
        return known[name]

    def start_input(self, chain: Chain) -> dict[str, Any]:
        """The JSON schema of the chain's start params."""
        return dict(registry.step(chain.steps[chain.start].task).input.model_json_schema())

    def steps(self) -> list[dict[str, Any]]:
        """Every declared step: its site, queue, URL template, input schema, items."""
        return [{"name": name, "site": step.site, "queue": step.queue or step.site,
                 "url": step.url, "input": step.input.model_json_schema(),
                 "items": sorted(item.collection for item in step.items),
                 "follows": list(step.follows)}
                for name, step in sorted(registry.steps().items())]

    # -- the cluster ----------------------------------------------------------------
    def workers(self) -> dict[str, Any]:
        """Live workers and every queue with its depth and consumers; a queue that a
        launch would use, or that holds messages, and that no live worker consumes is
        flagged ``unconsumed`` (its jobs wait for ever)."""
        cached = self._workers
        if cached is not None and time.monotonic() - cached[0] < WORKERS_FRESH_S:
            return cached[1]
        with ThreadPoolExecutor(2) as pool:
            asked = pool.submit(snapshot.workers, self.app, self.inspect_timeout_s)
            consumed = pool.submit(self._consumed)
            live, consumers = asked.result(), consumed.result()
        expected = worker_queues()
        depths = snapshot.queue_depths(self.app, expected)
        queues = {name: {"ready": depth, "consumers": sorted(consumers.get(name, ())),
                         "unconsumed": not consumers.get(name)
                         and (name in expected or depth > 0)}
                  for name, depth in sorted(depths.items())}
        for name, worker in live.items():
            worker["queues"] = sorted(q for q, who in consumers.items() if name in who)
        view = {"workers": live, "queues": queues}
        self._workers = (time.monotonic(), view)
        return view

    def _consumed(self) -> dict[str, set[str]]:
        """Queue -> the workers consuming it (Celery's ``active_queues``)."""
        replies = self.app.control.inspect(timeout=self.inspect_timeout_s).active_queues() or {}
        out: dict[str, set[str]] = {}
        for worker, queues in replies.items():
            for queue in queues or ():
                out.setdefault(str(queue.get("name")), set()).add(worker)
        return out

    def sites(self) -> list[dict[str, Any]]:
        """Each site's (or host's) politeness bucket and adaptive throttle, side by side."""
        buckets = snapshot.politeness(self.rt.redis)
        throttles = snapshot.throttle(self.rt.redis)
        return [{"site": name, "bucket": buckets.get(name), "throttle": throttles.get(name)}
                for name in sorted({*buckets, *throttles})]


def check_launch(chain: Chain, params: Mapping[str, Any], settings: Mapping[str, Any],
                 env_file: Path | None = None) -> None:
    """Each setting against the sites' settings, each start param against the start step's
    input model: the first wrong one named (``LaunchError``), before anything is queued.
    (Issue 29 puts such checks into the launch itself; this stays as the API's
    field-by-field answer.)"""
    sites = [registry.site(name) for name in chain_sites(chain)]
    known = {name for site in sites for name in site.settings.model_fields}
    for name in settings:
        if name not in known:
            raise LaunchError(f"settings.{name}", f"no setting {name!r} on the sites of "
                              f"{chain.name!r} (settings: {', '.join(sorted(known))})")
    for site in sites:
        mine = {k: v for k, v in settings.items() if k in site.settings.model_fields}
        _validated("settings", f"settings of {site.name}",
                   partial(site.read_settings, env_file, **mine))
    step = registry.step(chain.steps[chain.start].task)
    fields = step.input.model_fields
    for name in params:
        if name not in fields:
            raise LaunchError(f"params.{name}", f"{name!r} is not a param of {step.name} "
                              f"(params: {', '.join(fields) or 'none'})")
    _validated("params", f"params for {step.name}", lambda: step.input.model_validate(params))


def _validated(field: str, what: str, build: Callable[[], object]) -> None:
    """``build()``, its pydantic error as a ``LaunchError`` naming the first bad field."""
    try:
        build()
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise LaunchError(f"{field}.{where}" if where else field,
                          f"invalid {what}: {where or field}: {first['msg']} "
                          f"(got {first.get('input')!r})") from None


def _json(raw: str | None) -> Any:
    import json

    return json.loads(raw) if raw else {}
