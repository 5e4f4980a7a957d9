"""Hosts with their own addresses on one machine: network namespaces on a bridge (the
namespace tests of `control.sh --hosts` and the chaos run's partitioned worker).

Each host is a network namespace joined by a veth pair to a bridge in the root
namespace; the bridge's address is where the test serves Redis and the sandbox. Names
carry a random tag, so a crashed earlier run cannot collide with this one, and
``destroy`` kills every process left in the namespaces and removes every link, even
after a failure.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import time
import uuid
from contextlib import suppress
from dataclasses import dataclass, field


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30,
                          check=False)
    if check and done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done


def unavailable() -> str | None:
    """Why namespaces cannot be built here, or None (probed by building one)."""
    if shutil.which("ip") is None:
        return "the iproute2 'ip' command is not installed"
    if os.geteuid() != 0:
        return "creating network namespaces needs root"
    probe = f"ccprobe{uuid.uuid4().hex[:6]}"
    made = ip("netns", "add", probe, check=False)
    if made.returncode != 0:
        return f"'ip netns add' failed: {made.stderr.strip()}"
    ip("netns", "del", probe, check=False)
    return None


def free_subnet() -> str:
    """A 10.x.y.0/24 no local route or address uses yet (first three octets)."""
    taken = ip("-4", "route", "show", "table", "all").stdout + ip("-4", "addr").stdout
    for _ in range(200):
        prefix = f"10.{random.randint(200, 250)}.{random.randint(0, 255)}"
        if f"{prefix}." not in taken:
            return prefix
    raise RuntimeError("no free 10.200-250.x.0/24 subnet")


@dataclass
class Lab:
    """``hosts`` namespaces on one bridge; ``gateway`` is the bridge's address."""

    tag: str = field(default_factory=lambda: f"cc{uuid.uuid4().hex[:6]}")
    subnet: str = field(default_factory=free_subnet)
    hosts: list[str] = field(default_factory=list)

    @property
    def bridge(self) -> str:
        return f"{self.tag}br"

    @property
    def gateway(self) -> str:
        return f"{self.subnet}.1"

    def veth(self, host: str) -> str:
        """The root-namespace end of a host's link: down means the host is cut off."""
        return f"{self.tag}v{self.hosts.index(host)}"

    def create(self, count: int) -> Lab:
        ip("link", "add", self.bridge, "type", "bridge")
        ip("addr", "add", f"{self.gateway}/24", "dev", self.bridge)
        ip("link", "set", self.bridge, "up")
        for index in range(count):
            self.add_host(index)
        return self

    def add_host(self, index: int) -> None:
        host, outer, inner = f"{self.tag}h{index}", f"{self.tag}v{index}", f"{self.tag}n{index}"
        ip("netns", "add", host)
        self.hosts.append(host)
        ip("link", "add", outer, "type", "veth", "peer", "name", inner)
        ip("link", "set", inner, "netns", host)
        ip("link", "set", outer, "master", self.bridge)
        ip("link", "set", outer, "up")
        ip("-n", host, "addr", "add", f"{self.subnet}.{10 + index}/24", "dev", inner)
        ip("-n", host, "link", "set", inner, "up")
        ip("-n", host, "link", "set", "lo", "up")

    def cut(self, host: str) -> None:
        """Take the host's link down: its processes live on, unreachable."""
        ip("link", "set", self.veth(host), "down")

    def heal(self, host: str) -> None:
        """Bring the host's link up again."""
        ip("link", "set", self.veth(host), "up")

    def pids(self, host: str) -> list[int]:
        out = ip("netns", "pids", host, check=False).stdout
        return [int(p) for p in out.split()]

    def kill_all(self, host: str) -> None:
        """SIGKILL every process in the namespace (bounded: new ones cannot appear from
        a dead parent, so a few passes empty it)."""
        for _ in range(5):
            pids = self.pids(host)
            if not pids:
                return
            for pid in pids:
                with suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.2)

    def destroy(self) -> None:
        """Kill what runs in the namespaces, then remove them, the veths and the bridge;
        never raises, so it can run after any failure."""
        for host in self.hosts:
            self.kill_all(host)
            ip("link", "del", self.veth(host), check=False)
            ip("netns", "del", host, check=False)
        ip("link", "del", self.bridge, check=False)


def leftovers(tag: str) -> list[str]:
    """Namespaces and links still carrying ``tag``."""
    names = ip("netns", "list").stdout + ip("-o", "link").stdout
    return [line for line in names.splitlines() if tag in line]
