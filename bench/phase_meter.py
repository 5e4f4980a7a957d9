"""Exact CPU per phase in a worker process: the runtime's phase functions timed by each
thread's own CPU clock, nested calls taken off their caller (exclusive time).

Sampling profilers were tried first and mislead here: py-spy counts a thread as busy
whenever the OS calls it runnable, and on a loaded 2-core machine many of a crawl's
threads are runnable but waiting for a core (its samples summed to 2.8 x the workers'
measured CPU on the large forum, most of it on queue and socket waits); charging each
thread's CPU since the last tick to its stack at the tick puts a 1 ms fetch burst on
the wait it returned to. Timing the phases by ``time.thread_time_ns`` has neither
fault: it counts CPU only, the thread's own, C code (lxml, SQLite, socket syscalls)
included, wherever it runs.

``install()`` wraps, in the modules and classes that call them (the runtime is not
changed; the worker runs as ``bench.profiled_worker``):

    runtime glue  CrawlTask.run_units (base_task) and what run_message does itself
    prepare       chains.runtime.message.prepare
    fetch         pipeline.fetch.fetch_one (the unit threads: hooks, providers, the
                  slot's glue) and driving the fetch iterator in the message's thread
    fetch: http   HttpClient.fetch_raw (http.client, the socket, the response read and judged)
    fetch: politeness  RedisLimiter.try_acquire, its release and penalize (GCRA in Redis)
    parse         chains.runtime.message.parse (the step's parse function, hooks)
    save          chains.runtime.message.save (the phase's own work)
    spawn         chains.runtime.message.spawn
    close         chains.runtime.message.close
    validation    pydantic BaseModel.__init__ and model_validate (items, step inputs)
    storage       SQLiteStore.upsert, JsonlStore.upsert (serializing items included)
    dedup         external_interface.recrawl: plan, mark, Recrawl.unchanged
    ledger        every public method of chains.runtime.ledger.Ledger
    publish       Publisher.publish and CeleryDispatch.send (kombu's LPUSH included)
    metrics       chains.runtime.metrics.Metrics.send

Each process started by ``start(outdir)`` rewrites ``outdir/phases-<pid>.json`` every
second: its CPU so far (``time.process_time_ns``) and each phase's; what the phases do
not cover in a pool child is Celery's side of a task (receiving it from the consumer
over the pool's pipe, tracing, the result).
"""

from __future__ import annotations

import functools
import json
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

Fn = Callable[..., Any]


class PhaseMeter:
    """Per-thread stacks of open phases; exclusive CPU nanoseconds per phase."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Fresh state: a forked pool child starts from nothing, its lock free."""
        self.local = threading.local()
        self.counters: list[Counter[str]] = []  # one per thread, summed when read
        self.lock = threading.Lock()

    def _state(self) -> tuple[list[list[Any]], Counter[str]]:
        state = getattr(self.local, "state", None)
        if state is None:
            counter: Counter[str] = Counter()
            with self.lock:
                self.counters.append(counter)
            state = self.local.state = ([], counter)
        return state

    def enter(self, phase: str) -> None:
        self._state()[0].append([phase, time.thread_time_ns(), 0])

    def leave(self) -> None:
        now = time.thread_time_ns()
        stack, counter = self._state()
        phase, started, inner = stack.pop()
        spent = now - started
        counter[phase] += spent - inner
        if stack:
            stack[-1][2] += spent

    def totals(self) -> dict[str, int]:
        out: Counter[str] = Counter()
        with self.lock:
            counters = list(self.counters)
        for counter in counters:
            out.update(dict(counter))
        return dict(out)

    def timed(self, phase: str, fn: Fn) -> Fn:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            self.enter(phase)
            try:
                return fn(*args, **kwargs)
            finally:
                self.leave()
        return wrapper

    def timed_iter(self, phase: str, fn: Fn) -> Fn:
        """For a generator function: each step of the iterator is timed, not the call."""
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Iterator[Any]:
            inner = iter(fn(*args, **kwargs))
            while True:
                self.enter(phase)
                try:
                    item = next(inner)
                except StopIteration:
                    return
                finally:
                    self.leave()
                yield item
        return wrapper


METER = PhaseMeter()


def _wrap_attr(owner: Any, name: str, phase: str, iterator: bool = False) -> None:
    raw = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
    if isinstance(raw, classmethod):
        setattr(owner, name, classmethod(METER.timed(phase, raw.__func__)))
    elif isinstance(raw, staticmethod):
        setattr(owner, name, staticmethod(METER.timed(phase, raw.__func__)))
    elif iterator:
        setattr(owner, name, METER.timed_iter(phase, raw))
    else:
        setattr(owner, name, METER.timed(phase, raw))


def install() -> None:
    """Wrap the phase functions where they are called (see the module's docstring)."""
    from pydantic import BaseModel

    import worker  # its CrawlTask: base_task is the worker's alone to import
    from chains.broker.dispatch import CeleryDispatch
    from chains.runtime import ledger, message, metrics
    from chains.runtime.dispatch import Publisher
    from chains.runtime.pipeline import fetch
    from external_interface import recrawl
    from external_interface.clients.bounds import BoundedClient
    from external_interface.politeness.redis_gcra import RedisLimiter
    from external_interface.storage import jsonl, sqlite

    _wrap_attr(vars(worker)["CrawlTask"], "run_units", "runtime glue")
    for name in ("prepare", "parse", "save", "spawn", "close"):
        _wrap_attr(message, name, name)
    _wrap_attr(message, "fetch", "fetch", iterator=True)
    _wrap_attr(fetch, "fetch_one", "fetch")
    _wrap_attr(BoundedClient, "fetch_raw", "fetch: http")  # every client's network part
    for name in ("try_acquire", "_give_back", "penalize"):
        _wrap_attr(RedisLimiter, name, "fetch: politeness")
    _wrap_attr(BaseModel, "__init__", "validation")
    _wrap_attr(BaseModel, "model_validate", "validation")
    _wrap_attr(sqlite.SQLiteStore, "upsert", "storage")
    _wrap_attr(jsonl.JsonlStore, "upsert", "storage")
    for name in ("plan", "mark"):
        _wrap_attr(recrawl, name, "dedup")
    _wrap_attr(recrawl.Recrawl, "unchanged", "dedup")
    for name, value in list(vars(ledger.Ledger).items()):
        if callable(value) and not name.startswith("_"):
            _wrap_attr(ledger.Ledger, name, "ledger")
    _wrap_attr(Publisher, "publish", "publish")
    _wrap_attr(CeleryDispatch, "send", "publish")
    _wrap_attr(metrics.Metrics, "send", "metrics")


def start(outdir: Path, every_s: float = 1.0) -> None:
    """From now on, write this process's CPU and phase totals to ``outdir`` every
    ``every_s`` (a pool child calls it once forked)."""
    METER.reset()
    out = outdir / f"phases-{os.getpid()}.json"

    def loop() -> None:
        while True:
            tmp = out.with_suffix(".tmp")
            tmp.write_text(json.dumps({"pid": os.getpid(),
                                       "process_cpu_ns": time.process_time_ns(),
                                       "phases": METER.totals()}))
            tmp.replace(out)
            time.sleep(every_s)
    threading.Thread(target=loop, name="phase-meter", daemon=True).start()
