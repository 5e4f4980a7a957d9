"""A real crawl cluster on one machine: redis-server, the sandbox site, Celery workers.

Tests, the fault harness and benchmarks start it the same way. Everything runs as
separate OS processes on loopback and a unix socket, as in production; nothing is
mocked. Workers are started and killed by pid.

The sandbox's defences are off unless a test passes ``defences`` (then exit proxies
start too, and workers read them from ``PROXY_FILE``); without defences the demo
site's providers are off as well (``RESOURCES_DISABLED_SITES``), so request counts
are exactly those of the crawl graph. ``python -m sandbox`` and the demo defend.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import psutil
from celery import Celery

from chains.broker.app import INTERRUPTS
from chains.broker.dispatch import CeleryDispatch
from chains.runtime.context import Runtime
from chains.runtime.job import Job
from chains.runtime.launch import launch
from chains.runtime.model import Chain
from chains.runtime.registry import site_names
from chains.runtime.roster import Roster
from config import Settings
from ops import embedded_redis
from sandbox.defences import Defences
from sandbox.exits import Exits
from sandbox.forum.site import ForumSite
from sandbox.server import Faults, SandboxServer, Site
from sandbox.world import World
from worker import make_app

ROOT = Path(__file__).resolve().parent.parent
QUEUES = ",".join(site_names())  # a worker here serves every site the sandbox serves

FAST_FAILURE_ENV = {
    "CELERY_VISIBILITY_TIMEOUT": "12",
    "TASK_SOFT_TIME_LIMIT_S": "6",
    "TASK_TIME_LIMIT_S": "8",
    "TASK_BACKOFF_BASE_S": "0.2",
    "TASK_BACKOFF_MAX_S": "2",
    "FETCH_DEADLINE_S": "4",
    # Every countdown stays below the visibility timeout, or a held message is delivered
    # twice; and a 429's site cooldown is capped like a retry's backoff, as by default.
    "POLITE_MAX_WAIT_S": "8",
    "POLITE_MAX_PENALTY_S": "2",
    # A robots.txt that answers 5xx (a fault injected on every first request) disallows
    # the site for this long, then is fetched again (Google's rule; 60 s by default).
    "ROBOTS_ERROR_BACKOFF_S": "2",
    # A message lost between kombu's pop and its unacked record is sent again soon.
    "REVIVE_STALL_S": "3",
    "REVIVE_INTERVAL_S": "1",
}


def local_env(workdir: Path, socket: Path, extra: dict[str, str]) -> dict[str, str]:
    """The environment of a one-machine cluster: embedded Redis on ``socket`` as broker
    and state plane, SQLite in ``workdir``, then ``extra``."""
    return {
        **os.environ,
        "CRAWLCHAIN_HOME": str(workdir),
        "CELERY_BROKER_URL": f"redis+socket://{socket}",
        "STATE_REDIS_URL": f"unix://{socket}",
        "STORAGE_URL": f"sqlite:///{workdir / 'items.db'}",
        **extra,
    }


def settings_for(env: dict[str, str]) -> Settings:
    """Settings read from ``env`` as a process started with it would read them."""
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        return Settings()
    finally:
        os.environ.clear()
        os.environ.update(saved)


def runtime_for(env: dict[str, str]) -> Runtime:
    """Clients built from ``env`` as a process started with it would build them, sending
    through the worker's Celery app."""
    settings = settings_for(env)
    return Runtime.from_settings(settings, CeleryDispatch(make_app(settings)), INTERRUPTS)


class Cluster:
    """One redis-server, one sandbox, any number of worker processes, in ``workdir``."""

    def __init__(self, workdir: Path, world: World, extra_env: dict[str, str] | None = None,
                 faults: Faults | None = None, defences: Defences | None = None,
                 exits: int = 4, forum: ForumSite | None = None):
        self.workdir = workdir
        self.world = world
        self.forum = forum
        self.faults = faults
        self.defences = defences
        self.exits = Exits(exits) if defences is not None else None
        self.socket = workdir / "redis.sock"
        undefended = {} if defences is not None else {"RESOURCES_DISABLED_SITES": '["demo"]'}
        # A test launches while its workers boot: the job waits for them (a warning says
        # so), as a launch with --detach does. A test of that check sets it back.
        booting = {"LAUNCH_WORKERS": "warn"}
        self.env = local_env(workdir, self.socket, {**FAST_FAILURE_ENV, **booting,
                                                    **undefended, **(extra_env or {})})
        self.redis: subprocess.Popen[bytes] | None = None
        self.sandbox: SandboxServer | None = None
        self.workers: list[subprocess.Popen[bytes]] = []
        self.worker_names: list[str] = []
        self.worker_args: list[str] = []  # more worker options (``--max-memory-per-child``)
        self._runtime: Runtime | None = None

    # -- lifecycle --------------------------------------------------------------
    def start(self, workers: int = 1, concurrency: int = 2, redis: bool = True) -> Cluster:
        """Start everything; ``redis=False`` leaves the broker for later (``start_redis``)."""
        if redis:
            self.start_redis()
        self.sandbox = SandboxServer(Site(self.world, self.faults, self.defences, self.forum))
        self.sandbox.start_in_thread()
        self.env["DEMO_BASE_URL"] = self.sandbox.base_url
        if self.exits is not None:
            self.exits.start().write(self.workdir / "exits.txt")
            self.env.setdefault("PROXY_FILE", str(self.workdir / "exits.txt"))
        for _ in range(workers):
            self.start_worker(concurrency)
        return self

    def start_redis(self) -> None:
        """Start (or start again) the server on the same data dir: its AOF is replayed."""
        self.redis = embedded_redis.start(self.workdir / "redis", self.socket,
                                          self.workdir / "redis.log")

    def kill_redis(self, sig: int = signal.SIGKILL) -> None:
        """Stop the server with ``sig`` and reap it; its socket file stays, stale."""
        assert self.redis is not None
        self.redis.send_signal(sig)
        self.redis.wait(timeout=30)

    def signal_redis(self, sig: int) -> None:
        """Send ``sig`` without waiting: SIGSTOP freezes the server, SIGCONT thaws it."""
        assert self.redis is not None
        self.redis.send_signal(sig)

    def start_worker(self, concurrency: int = 2,
                     name: str | None = None) -> subprocess.Popen[bytes]:
        name = name or f"w{len(self.workers)}"
        log = open(self.workdir / f"{name}.log", "ab")  # noqa: SIM115 - handed to the child
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "worker", "worker", "-Q", QUEUES,
             "--concurrency", str(concurrency), "--hostname", f"{name}@%h",
             "--loglevel", "INFO", "--without-mingle", "--without-gossip", *self.worker_args],
            cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.workers.append(proc)
        self.worker_names.append(name)
        return proc

    def wait_for_workers(self, timeout: float = 60.0) -> None:
        """Until every worker process still running consumes its queues (its heartbeat
        is on the roster), as ``./control.sh start worker`` waits: a launch that
        requires a live worker (``LAUNCH_WORKERS=require``) is then accepted."""
        roster = Roster(self.runtime.redis)
        wanted = {f"{name}@{socket.gethostname()}" for name, proc in
                  zip(self.worker_names, self.workers, strict=True) if proc.poll() is None}
        self.wait_for(lambda: wanted <= set(roster.live()), timeout, f"workers {wanted}")

    def kill_worker(self, proc: subprocess.Popen[bytes], sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` to the worker's whole process group (main process and pool children)."""
        os.killpg(proc.pid, sig)
        proc.wait(timeout=30)

    def signal_worker(self, proc: subprocess.Popen[bytes], sig: int) -> None:
        """Send ``sig`` to the worker's process group without waiting (SIGSTOP, SIGCONT)."""
        os.killpg(proc.pid, sig)

    def pool_children(self, proc: subprocess.Popen[bytes]) -> list[int]:
        return [c.pid for c in psutil.Process(proc.pid).children()]

    def stop(self) -> None:
        for proc in self.workers:
            if proc.poll() is None:
                with suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
                    os.killpg(proc.pid, signal.SIGCONT)  # a frozen worker must see its TERM
        for proc in self.workers:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if self.sandbox:
            self.sandbox.shutdown()
            self.sandbox.server_close()
        if self.exits is not None:
            self.exits.stop()
        if self._runtime:
            self._runtime.store.close()
        if self.redis and self.redis.poll() is None:
            self.redis.terminate()
            self.redis.send_signal(signal.SIGCONT)  # a paused server must see its TERM
            self.redis.wait(timeout=10)

    # -- the crawl side -----------------------------------------------------------
    @property
    def runtime(self) -> Runtime:
        """Clients built from the cluster's environment, as a launching shell would."""
        if self._runtime is None:
            self._runtime = self.build_runtime()
        return self._runtime

    def build_runtime(self) -> Runtime:
        """A new set of those clients, not cached: for another thread (SQLite connections
        stay in the thread that opened them) or another launcher."""
        return runtime_for(self.env)

    @property
    def app(self) -> Celery:
        """The Celery app the launcher sends with (control commands, inspection)."""
        dispatch = self.runtime.dispatch
        assert isinstance(dispatch, CeleryDispatch)
        return dispatch.app

    @property
    def site_settings(self) -> dict[str, dict[str, Any]]:
        """The sites' settings for a job on this cluster: its sandbox's address."""
        assert self.sandbox is not None
        return {"demo": {"base_url": self.sandbox.base_url},
                "forum": {"base_url": f"{self.sandbox.base_url}/forum"}}

    def launch(self, chain: Chain, **params: Any) -> Job:
        return launch(chain, params, runtime=self.runtime, settings=self.site_settings)

    def stored_keys(self) -> dict[str, list[str]]:
        store = self.runtime.store
        return {c: [r["key"] for r in store.read(c)]
                for c in ("feed_entries", "users", "statuses", "articles", "comments")}

    def wait_for(self, predicate: Any, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise TimeoutError(f"gave up waiting {timeout}s for {what}")
            time.sleep(0.1)


@contextmanager
def running_cluster(workdir: Path, world: World, workers: int = 1, concurrency: int = 2,
                    extra_env: dict[str, str] | None = None,
                    faults: Faults | None = None,
                    defences: Defences | None = None,
                    forum: ForumSite | None = None) -> Iterator[Cluster]:
    cluster = Cluster(workdir, world, extra_env, faults, defences, forum=forum)
    try:
        yield cluster.start(workers, concurrency)
    finally:
        cluster.stop()


