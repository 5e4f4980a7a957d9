"""The chaos run's cluster: what the nemesis hurts, and everything it made, undone.

    with ChaosLab(workdir, world, forum, workers=4) as lab: ...

Two redis-servers (the broker and the state plane, each with AOF on its own data dir,
each on a unix socket and a TCP port on the lab's bridge), the sandbox serving the demo
site and the forum on the bridge's address, and Celery workers: all in the root
namespace but the last, which runs in a network namespace of its own (``sandbox.netns``)
and reaches Redis and the sandbox over its veth only, so that taking the veth down
partitions it from both. The item store is SQLite on a tmpfs mounted for the run (a
disk the nemesis can fill without touching the host's). Nothing listens beyond the
bridge and loopback; ``close`` (run on any exit: an error, SIGINT, SIGTERM) thaws,
kills and reaps every process, removes the namespace, the bridge and the mount.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import suppress
from pathlib import Path
from types import TracebackType

import psutil
import redis

from chains.runtime.roster import Roster
from ops import embedded_redis
from sandbox.cluster import QUEUES, ROOT, Cluster
from sandbox.forum.site import ForumSite
from sandbox.netns import Lab
from sandbox.server import SandboxServer, Site
from sandbox.world import World

STORE_MB = 1024  # the store's own disk: room for the crawl, and little enough to fill
CHAOS_ENV = {
    "TASK_MAX_RETRIES": "60",  # outlasts overlapping outages of a few seconds each
    "CELERY_BROKER_SOCKET_TIMEOUT": "5",
    "CELERY_BROKER_HEALTH_CHECK_INTERVAL": "3",
    "LOG_LEVEL": "WARNING",
}


def free_port(host: str) -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


class RedisNode:
    """One redis-server with AOF, on a unix socket and on ``host:port``, restartable on
    its data dir (the AOF replayed)."""

    def __init__(self, name: str, workdir: Path, host: str) -> None:
        self.name = name
        self.dir = workdir / name
        self.socket = workdir / f"{name}.sock"
        self.log = workdir / f"{name}.log"
        self.tcp = (host, free_port(host))
        self.proc: subprocess.Popen[bytes] | None = None
        self.closed = False  # the lab is closing: a fault's late restart must not start it

    def start(self) -> None:
        if self.closed:
            raise RuntimeError(f"the lab is closed: {self.name} is not started again")
        self.dir.mkdir(parents=True, exist_ok=True)
        with suppress(FileNotFoundError):
            self.socket.unlink()  # a killed server's stale socket
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                [*embedded_redis.command(self.dir, self.socket, self.tcp),
                 "--protected-mode", "no"],  # reached from the lab's namespace, nowhere else
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        embedded_redis.wait_ready(self.socket, self.proc, timeout=60)

    def signal(self, sig: int) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)

    def kill(self) -> None:
        """SIGKILL and reap: acknowledged writes are in the AOF (written before replies)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.send_signal(signal.SIGCONT)
            self.proc.wait(timeout=30)

    def answers(self) -> bool:
        try:
            with redis.Redis(unix_socket_path=str(self.socket), socket_timeout=2) as client:
                return bool(client.ping())
        except redis.RedisError:
            return False

    @property
    def url(self) -> str:
        return f"redis://{self.tcp[0]}:{self.tcp[1]}/0"


class StoreDisk:
    """A tmpfs of ``size_mb`` mounted at ``path`` for the run: the item store's disk."""

    def __init__(self, path: Path, size_mb: int = STORE_MB) -> None:
        self.path = path
        self.size_mb = size_mb
        self.mounted = False

    def mount(self) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={self.size_mb}m,mode=700",
                        "chaos-store", str(self.path)], check=True, timeout=30,
                       capture_output=True)
        self.mounted = True

    @property
    def filler(self) -> Path:
        return self.path / "filler"

    def fill(self) -> int:
        """Write until the disk is full (bounded by its size); the bytes written."""
        written, chunk = 0, b"\0" * (1 << 20)
        with open(self.filler, "ab") as out:
            for _ in range(self.size_mb + 1):
                try:
                    written += out.write(chunk)
                    out.flush()
                except OSError:
                    break
        with suppress(OSError), open(self.path / "filler.tail", "ab") as out:
            for _ in range(1 << 12):  # the last pages a 1 MiB write could not take
                out.write(b"\0" * 256)
                out.flush()
        return written

    def free(self) -> None:
        for path in (self.filler, self.path / "filler.tail"):
            with suppress(FileNotFoundError):
                path.unlink()

    def unmount(self) -> None:
        if self.mounted:
            subprocess.run(["umount", "-l", str(self.path)], check=False, timeout=30,
                           capture_output=True)
            self.mounted = False


class ChaosLab:
    """The cluster a chaos run hurts; a context manager that leaves nothing behind."""

    def __init__(self, workdir: Path, world: World, forum: ForumSite, workers: int = 4,
                 concurrency: int = 2) -> None:
        self.workdir = workdir
        self.net = Lab()
        self.host = ""  # the partitioned worker's namespace
        self.disk = StoreDisk(workdir / "store")
        self.cluster = Cluster(workdir, world, CHAOS_ENV, forum=forum)
        self.state: RedisNode | None = None
        self.broker: RedisNode | None = None
        self.worker_count = workers
        self.concurrency = concurrency
        self.slots: list[subprocess.Popen[bytes] | None] = [None] * workers
        self.closed = False

    # -- lifecycle --------------------------------------------------------------------
    def __enter__(self) -> ChaosLab:
        try:
            self.open()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def open(self) -> None:
        self.net.create(1)
        self.host = self.net.hosts[0]
        self.disk.mount()
        gateway = self.net.gateway
        self.state = RedisNode("state", self.workdir, gateway)
        self.broker = RedisNode("broker", self.workdir, gateway)
        self.state.start()
        self.broker.start()
        env = self.cluster.env
        env["CELERY_BROKER_URL"] = f"redis+socket://{self.broker.socket}"
        env["STATE_REDIS_URL"] = f"unix://{self.state.socket}"
        env["STORAGE_URL"] = f"sqlite:///{self.disk.path / 'items.db'}"
        site = self.cluster
        site.sandbox = SandboxServer(Site(site.world, None, None, site.forum), host=gateway)
        site.sandbox.start_in_thread()
        env["DEMO_BASE_URL"] = site.sandbox.base_url
        for slot in range(self.worker_count):
            self.start_worker(slot)

    def close(self) -> None:
        """Thaw, kill and reap every process; remove the namespace and the mount. Never
        raises: it runs after any failure."""
        self.closed = True
        for node in (self.state, self.broker):
            if node is not None:
                node.closed = True
                node.signal(signal.SIGCONT)
        for proc in [p for p in self.slots if p is not None] + self.cluster.workers:
            self._kill_group(proc)
        self.cluster.workers = []
        sandbox = self.cluster.sandbox
        if sandbox is not None:
            with suppress(Exception):
                sandbox.shutdown()
                sandbox.server_close()
            self.cluster.sandbox = None
        if self.cluster._runtime is not None:
            with suppress(Exception):
                self.cluster._runtime.store.close()
            self.cluster._runtime = None
        for node in (self.state, self.broker):
            if node is not None:
                with suppress(Exception):
                    node.kill()
        with suppress(Exception):
            self.net.destroy()
        self.disk.unmount()

    @staticmethod
    def _kill_group(proc: subprocess.Popen[bytes]) -> None:
        if proc.poll() is None:
            with suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            with suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=30)

    # -- workers ----------------------------------------------------------------------
    def partitioned(self, slot: int) -> bool:
        """The last worker lives in the namespace the nemesis cuts off."""
        return slot == self.worker_count - 1

    def start_worker(self, slot: int) -> subprocess.Popen[bytes]:
        if self.closed:
            raise RuntimeError(f"the lab is closed: worker w{slot} is not started again")
        name = f"w{slot}"
        env = dict(self.cluster.env)
        prefix: list[str] = []
        if self.partitioned(slot):
            assert self.state is not None and self.broker is not None
            env["STATE_REDIS_URL"] = self.state.url
            env["CELERY_BROKER_URL"] = self.broker.url
            prefix = ["ip", "netns", "exec", self.host]
        with open(self.workdir / f"{name}.log", "ab") as log:
            proc = subprocess.Popen(
                [*prefix, sys.executable, "-m", "celery", "-A", "worker", "worker", "-Q", QUEUES,
                 "--concurrency", str(self.concurrency), "--hostname", f"{name}@%h",
                 "--loglevel", "WARNING", "--without-mingle", "--without-gossip"],
                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True)
        self.slots[slot] = proc
        self.cluster.workers.append(proc)
        return proc

    def worker(self, slot: int) -> subprocess.Popen[bytes]:
        proc = self.slots[slot]
        assert proc is not None
        return proc

    def children(self, slot: int) -> list[int]:
        try:
            return [c.pid for c in psutil.Process(self.worker(slot).pid).children()]
        except psutil.Error:
            return []

    def wait_ready(self, timeout: float = 180.0) -> None:
        """Until every worker's heartbeat is on the roster, as ``control.sh start`` waits."""
        wanted = {f"w{slot}@{socket.gethostname()}" for slot in range(self.worker_count)}
        roster = Roster(self.cluster.runtime.redis)
        self.cluster.wait_for(lambda: wanted <= set(roster.live()), timeout,
                              f"workers {sorted(wanted)}")

    def wait_pool(self, slot: int, timeout: float = 90.0) -> bool:
        """Until the worker's pool is full again; False past ``timeout``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.worker(slot).poll() is None and \
                    len(self.children(slot)) >= self.concurrency:
                return True
            time.sleep(0.2)
        return False
