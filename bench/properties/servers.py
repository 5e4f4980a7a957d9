"""Start and stop the benchmark's servers on loopback: nginx and the latency server.

    with nginx(site_dir) as server: ... server.url ...

Every server is our own child, started in its own session under a maximum
lifetime (``timeout`` for nginx, ``--max-seconds`` for the latency server), so a
benchmark killed half-way leaves nothing running for long; it is stopped by its
pid (TERM, then KILL of its own process group), never by name. Ports are free
ones picked by the kernel unless given; a given port already in use is refused
rather than shared with somebody else's server.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from bench.properties import bench_dir

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
NGINX_PATHS = ("/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx")
MAX_LIFE_S = 3 * 3600


class ServerError(RuntimeError):
    """A server could not be had: not installed, port taken, or it did not come up."""


@dataclass
class Server:
    """A running server we started: its base URL and the process that owns it."""

    name: str
    url: str
    proc: subprocess.Popen[bytes]
    rundir: Path  # config, pid and log: removed when stopped (they are per port)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self, grace_s: float = 10.0) -> None:
        """TERM the server, then KILL its process group if it lingers."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                with suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=grace_s)
        shutil.rmtree(self.rundir, ignore_errors=True)


def free_port() -> int:
    """A port nobody listens on right now, picked by the kernel."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def check_port_free(port: int) -> None:
    with socket.socket() as sock:
        if sock.connect_ex(("127.0.0.1", port)) == 0:
            raise ServerError(f"port {port} is already in use by another process; pick another")


def wait_listening(port: int, proc: subprocess.Popen[bytes], what: str,
                   timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ServerError(f"{what} exited with {proc.returncode} before listening")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise ServerError(f"{what} did not listen on port {port} within {timeout}s")


def nginx_binary() -> str | None:
    """The installed nginx, or None."""
    found = shutil.which("nginx")
    return found or next((p for p in NGINX_PATHS if Path(p).is_file()), None)


def ensure_nginx(install: bool = True) -> str:
    """nginx's path; installed from Debian's packages first when missing and ``install``."""
    found = nginx_binary()
    if found or not install:
        if found:
            return found
        raise ServerError("nginx is not installed (apt-get install -y nginx)")
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        raise ServerError("nginx is missing and cannot be installed here: "
                          "run `apt-get install -y nginx` as root")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    print("installing nginx: apt-get install -y nginx", file=sys.stderr)
    subprocess.run(["apt-get", "install", "-y", "nginx"], check=True, env=env, timeout=600,
                   stdout=subprocess.DEVNULL)
    return ensure_nginx(install=False)


def nginx_config(run: Path, root: Path, port: int, workers: str) -> Path:
    """Render ``nginx.conf.in`` into ``run``; root's workers read files as root."""
    (run / "tmp").mkdir(parents=True, exist_ok=True)
    text = (HERE / "nginx.conf.in").read_text()
    for key, value in {"@RUN@": str(run), "@ROOT@": str(root), "@PORT@": str(port),
                       "@WORKERS@": workers,
                       "@USER@": "user root;" if os.geteuid() == 0 else ""}.items():
        text = text.replace(key, value)
    conf = run / "nginx.conf"
    conf.write_text(text)
    return conf


def start_nginx(root: Path, port: int | None = None, workers: str = "auto",
                max_life_s: int = MAX_LIFE_S) -> Server:
    """nginx in the foreground under ``timeout``, serving ``root`` on 127.0.0.1."""
    binary = ensure_nginx()
    port = port or free_port()
    check_port_free(port)
    run = bench_dir() / "servers" / f"nginx-{port}"
    conf = nginx_config(run, root.resolve(), port, workers)
    cmd = ["timeout", "--kill-after=10", str(max_life_s), binary, "-p", str(run), "-c",
           str(conf), "-e", str(run / "nginx.error.log"), "-g", "daemon off;"]
    return listening(Server("nginx", f"http://127.0.0.1:{port}",
                            spawn(cmd, run / "nginx.out"), run), port)


def start_latency_server(root: Path, port: int | None = None, latency: float = 0.25,
                         max_life_s: int = MAX_LIFE_S) -> Server:
    """The delaying static server (``latency_server.py``) on 127.0.0.1."""
    port = port or free_port()
    check_port_free(port)
    run = bench_dir() / "servers" / f"latency-{port}"
    cmd = [sys.executable, "-m", "bench.properties.latency_server", "--root", str(root),
           "--port", str(port), "--latency", str(latency), "--max-seconds", str(max_life_s)]
    return listening(Server("latency server", f"http://127.0.0.1:{port}",
                            spawn(cmd, run / "latency.out"), run), port)


def listening(server: Server, port: int) -> Server:
    """The server once it listens on ``port``; stopped, and the error raised, if it never does."""
    try:
        wait_listening(port, server.proc, server.name)
    except ServerError:
        server.stop()
        raise
    return server


def spawn(cmd: list[str], log: Path) -> subprocess.Popen[bytes]:
    """Start ``cmd`` in its own session (its group is ours to kill), output to ``log``."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        return subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)


@contextmanager
def nginx(root: Path, port: int | None = None, workers: str = "auto") -> Iterator[Server]:
    server = start_nginx(root, port, workers)
    try:
        yield server
    finally:
        server.stop()


@contextmanager
def latency_server(root: Path, port: int | None = None,
                   latency: float = 0.25) -> Iterator[Server]:
    server = start_latency_server(root, port, latency)
    try:
        yield server
    finally:
        server.stop()
