"""The embedded Redis: a real ``redis-server`` (7 or later), run by this project.

``control.sh`` and the tests start it the same way: on a unix socket, no TCP port,
append-only persistence on (a restart loses no queued message) and ``noeviction``
(a full memory refuses writes instead of silently dropping queued units).

The server is ``REDIS_SERVER`` (a path; a ``valkey-server`` does too) when set, else the
``redis-server`` on ``PATH``: Debian's package, which ``./control.sh setup`` installs when
it runs as root and none is there. Servers before 7 are refused (6.2 is past its end of
life; the broker's Redis in ``docker-compose.yml`` is 7).

    python -m ops.embedded_redis start run/     # prints the pid
    python -m ops.embedded_redis binary         # prints the server's path and version
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import redis

MIN_VERSION = (7, 0)
HOW_TO_GET_ONE = (
    "run ./control.sh setup as root (it installs Debian's redis-server), or install one "
    "(apt-get install redis-server; brew install redis), or set REDIS_SERVER=/path/to/it"
)


def server_binary() -> str:
    """Path of the ``redis-server`` to run: ``REDIS_SERVER``, else the one on ``PATH``."""
    chosen = os.environ.get("REDIS_SERVER") or shutil.which("redis-server")
    if not chosen:
        raise FileNotFoundError(f"no redis-server found: {HOW_TO_GET_ONE}")
    found = server_version(chosen)
    if found < MIN_VERSION:
        raise RuntimeError(
            f"{chosen} is Redis {'.'.join(map(str, found))}; crawlchain needs "
            f"{'.'.join(map(str, MIN_VERSION))} or later: {HOW_TO_GET_ONE}")
    return chosen


def server_version(binary: str) -> tuple[int, ...]:
    """``(7, 0, 15)`` from ``redis-server --version`` (``v=7.0.15``)."""
    try:
        said = subprocess.run([binary, "--version"], capture_output=True, text=True,
                              timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise FileNotFoundError(f"{binary} does not run ({exc}): {HOW_TO_GET_ONE}") from exc
    match = re.search(r"v=(\d+)\.(\d+)\.(\d+)", said)
    if not match:
        raise RuntimeError(f"{binary} --version said {said.strip()!r}, not a Redis version")
    return tuple(int(part) for part in match.groups())


@dataclass(frozen=True)
class TLS:
    """A TLS listener (``rediss://``) instead of plain-text TCP: the server's certificate
    and key, and the CA that clients' certificates are checked against when they show
    one (``clients="yes"``: they must)."""

    address: str
    port: int
    cert: Path
    key: Path
    ca: Path
    clients: Literal["no", "optional", "yes"] = "optional"

    def arguments(self) -> list[str]:
        return ["--bind", self.address, "--port", "0", "--tls-port", str(self.port),
                "--tls-cert-file", str(self.cert), "--tls-key-file", str(self.key),
                "--tls-ca-cert-file", str(self.ca), "--tls-auth-clients", self.clients]


def command(workdir: Path, socket: Path, tcp: tuple[str, int] | None = None,
            password: str | None = None, tls: TLS | None = None) -> list[str]:
    """The server's command line: persistent, never evicting, on a unix socket only, or
    also on ``tcp`` = (address, port) for workers on other hosts (network namespaces),
    or on ``tls`` (then no plain-text port at all). Redis refuses other hosts' clients
    unless it has a ``password`` (protected mode)."""
    listen = ["--bind", tcp[0], "--port", str(tcp[1])] if tcp else ["--port", "0"]
    return [
        server_binary(),
        *(tls.arguments() if tls else listen),
        *(["--requirepass", password] if password else []),
        "--unixsocket", str(socket),
        "--unixsocketperm", "700",
        "--dir", str(workdir),
        "--appendonly", "yes",
        "--appendfsync", "everysec",
        "--save", "",
        "--maxmemory-policy", "noeviction",
        "--loglevel", "warning",
    ]


def start(workdir: Path, socket: Path, log: Path | None = None,
          tcp: tuple[str, int] | None = None, password: str | None = None,
          tls: TLS | None = None) -> subprocess.Popen[bytes]:
    """Start a server and wait until its socket answers; the caller owns the process."""
    workdir.mkdir(parents=True, exist_ok=True)
    out = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115 - handed to the child
    proc = subprocess.Popen(
        command(workdir, socket, tcp, password, tls), stdout=out, stderr=subprocess.STDOUT,
        start_new_session=True)
    wait_ready(socket, proc, password=password)
    return proc


@contextmanager
def scratch_server(given: str | None = None, prefix: str = "crawlchain-") -> Iterator[str]:
    """The given server's socket, or a private throwaway server's (no persistence: it is
    measured, not trusted), stopped on exit."""
    if given:
        yield given
        return
    with tempfile.TemporaryDirectory(prefix=prefix) as workdir:
        socket = Path(workdir) / "redis.sock"
        proc = start(Path(workdir), socket)
        try:
            with redis.Redis(unix_socket_path=str(socket)) as client:
                client.config_set("appendonly", "no")
            yield str(socket)
        finally:
            proc.terminate()
            proc.wait(timeout=60)


@contextmanager
def stopped_copy(data_dir: Path) -> Iterator[str]:
    """The socket of a private server over a copy of a stopped embedded Redis's files
    (``data_dir`` holds its ``appendonlydir``), stopped and deleted on exit: what the
    cluster last held can be read without starting, or writing to, the real one."""
    files = data_dir / "appendonlydir"
    if not files.is_dir():
        raise FileNotFoundError(f"{data_dir} holds no append-only files to read")
    with tempfile.TemporaryDirectory(prefix="crawlchain-stopped-") as workdir:
        shutil.copytree(files, Path(workdir) / "appendonlydir")
        socket = Path(workdir) / "redis.sock"
        proc = start(Path(workdir), socket)
        try:
            yield str(socket)
        finally:
            proc.terminate()
            proc.wait(timeout=60)


def wait_ready(socket: Path, proc: subprocess.Popen[bytes] | None = None,
               timeout: float = 10.0, password: str | None = None) -> None:
    """Block until ``PING`` answers on ``socket``; raise if the server died or never came."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"redis-server exited with {proc.returncode}; see its log")
        try:
            client = redis.Redis(unix_socket_path=str(socket), password=password)
            if socket.exists() and client.ping():
                return
        except redis.ConnectionError:
            pass
        time.sleep(0.05)
    raise TimeoutError(f"redis-server did not answer on {socket} within {timeout}s")


def main(argv: list[str]) -> int:
    """``start DIR``: start detached, print the pid. ``binary``: print the server path."""
    try:
        return _command(argv)
    except (FileNotFoundError, RuntimeError, TimeoutError) as exc:
        print(f"embedded redis: {exc}", file=sys.stderr)
        return 2


def _command(argv: list[str]) -> int:
    if argv[:1] == ["binary"]:
        binary = server_binary()
        print(binary, ".".join(map(str, server_version(binary))))
        return 0
    if argv[:1] == ["start"] and len(argv) == 2:
        workdir = Path(argv[1]).resolve()
        log = workdir.parent / "logs" / "redis.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        proc = start(workdir / "redis", workdir / "redis.sock", log)
        print(proc.pid)
        return 0
    print("usage: python -m ops.embedded_redis start RUN_DIR | binary", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
