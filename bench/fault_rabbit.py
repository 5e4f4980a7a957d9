"""A throwaway RabbitMQ node for the fault harness, and its ``kill -9``.

The machine's own RabbitMQ (a system service on 127.0.0.1:5672) is never touched: the
scenario starts a private node of the installed server under the run's directory, with
its own node name, AMQP and distribution ports on 127.0.0.1, its own data and log dirs,
config and cookie (``HOME``), registered with the machine's epmd (or one erl starts on
127.0.0.1). Killing its process group kills only this node; starting it again on the
same data dir recovers its durable queues, as a restarted broker host would.

The node speaks AMQP over TLS only (``amqps://``, no plain-text listener), with a
certificate from a CA made for the run (``sandbox.tls``), asks every client for its
certificate, and has a user of its own with a random password (no ``guest``): the
workers reach it as workers on other hosts reach a production broker.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import time
from pathlib import Path

from bench.fault_launch import start_and_launch
from bench.fault_measure import Trial, at_random_progress
from sandbox import tls

SERVER = "/usr/lib/rabbitmq/bin/rabbitmq-server"  # Debian's; the sbin wrapper runs as rabbitmq
READY_S = 90.0  # a node boots in 3-10 s; generous on two busy cores


def server_binary() -> str | None:
    """The server script to run a private node with, if one is installed."""
    on_path = shutil.which("rabbitmq-server")
    if Path(SERVER).is_file():
        return SERVER
    return on_path


def unavailable() -> str | None:
    """Why the RabbitMQ scenario cannot run here, or None."""
    if server_binary() is None:
        return "no rabbitmq-server installed (apt-get install rabbitmq-server)"
    return tls.unavailable()


def amqp_answers(port: int, authority: tls.Authority) -> bool:
    """Whether an AMQP 0-9-1 server on ``port`` answers the protocol header, over TLS with
    the client's certificate, with its Connection.Start (a method frame): booted, not
    just listening."""
    context = ssl.create_default_context(cafile=str(authority.ca))
    context.load_cert_chain(authority.client_cert, authority.client_key)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as raw, \
                context.wrap_socket(raw, server_hostname="127.0.0.1") as conn:
            conn.sendall(b"AMQP\x00\x00\x09\x01")
            return conn.recv(1) == b"\x01"
    except OSError:
        return False


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class RabbitNode:
    """One private node under ``workdir``: ``start`` (again), ``kill``, ``url``."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port, self.dist_port = free_port(), free_port()
        self.name = f"cc{self.port}@localhost"
        self.proc: subprocess.Popen[bytes] | None = None
        self.password = secrets.token_urlsafe(16)
        self.authority = tls.make_authority(workdir / "tls")

    @property
    def url(self) -> str:
        return f"amqps://crawl:{self.password}@127.0.0.1:{self.port}//"

    @property
    def client_env(self) -> dict[str, str]:
        """What a worker needs besides the URL: the CA, its certificate and key."""
        return {"AMQP_TLS_CA_FILE": str(self.authority.ca),
                "AMQP_TLS_CERT_FILE": str(self.authority.client_cert),
                "AMQP_TLS_KEY_FILE": str(self.authority.client_key)}

    def env(self) -> dict[str, str]:
        base, authority = self.workdir, self.authority
        (base / "rabbit.conf").write_text(
            "listeners.tcp = none\n"
            f"listeners.ssl.default = 127.0.0.1:{self.port}\n"
            f"ssl_options.cacertfile = {authority.ca}\n"
            f"ssl_options.certfile = {authority.server_cert}\n"
            f"ssl_options.keyfile = {authority.server_key}\n"
            "ssl_options.verify = verify_peer\n"
            "ssl_options.fail_if_no_peer_cert = true\n"
            f"default_user = crawl\ndefault_pass = {self.password}\n")
        (base / "rabbit-env.conf").write_text("")
        (base / "enabled_plugins").write_text("[].\n")
        return {
            **{k: v for k, v in os.environ.items() if not k.startswith("RABBITMQ_")},
            "HOME": str(base),  # its own .erlang.cookie
            "RABBITMQ_NODENAME": self.name,
            "RABBITMQ_DIST_PORT": str(self.dist_port),
            "RABBITMQ_CONFIG_FILE": str(base / "rabbit.conf"),
            "RABBITMQ_CONF_ENV_FILE": str(base / "rabbit-env.conf"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(base / "enabled_plugins"),
            "RABBITMQ_MNESIA_BASE": str(base / "mnesia"),
            "RABBITMQ_LOG_BASE": str(base / "log"),
            "RABBITMQ_PID_FILE": str(base / "rabbit.pid"),
            "ERL_EPMD_ADDRESS": "127.0.0.1",
            "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS":
                "-kernel inet_dist_use_interface {127,0,0,1}",
        }

    def start(self) -> None:
        """Start (or start again) the node and wait until it accepts AMQP connections."""
        binary = server_binary()
        assert binary is not None
        log = open(self.workdir / "rabbit.out", "ab")  # noqa: SIM115 - handed to the child
        self.proc = subprocess.Popen([binary], env=self.env(), cwd=self.workdir, stdout=log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        self.wait_ready()

    def wait_ready(self) -> None:
        deadline = time.monotonic() + READY_S
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"the RabbitMQ node exited ({self.proc.returncode}); see "
                                   f"{self.workdir / 'rabbit.out'}")
            if amqp_answers(self.port, self.authority):
                return
            time.sleep(0.5)
        raise TimeoutError(f"the RabbitMQ node did not accept connections in {READY_S:.0f}s")

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """``sig`` to the node's whole process group (the script and the Erlang VM)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            return
        self.proc.wait(timeout=60)
        if sig == signal.SIGKILL:
            _reap_group(self.proc.pid)


def _reap_group(pgid: int) -> None:
    """Wait (10 s at most) until nothing of the group is left (beam, its helpers)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)


# -- the scenario ------------------------------------------------------------------------
def rabbit_start(trial: Trial, workers: int) -> None:
    """A private node is the broker, over TLS (the state plane stays on the embedded Redis)."""
    node = RabbitNode(trial.cluster.workdir / "rabbit")
    trial.cleanups.append(node.kill)
    node.start()
    trial.rabbit = node
    trial.cluster.env.update({"CELERY_BROKER_URL": node.url, **node.client_env})
    start_and_launch(trial, workers)


def kill_rabbit_then_restart(trial: Trial) -> None:
    """``kill -9`` of the node mid-job; started again on its data 0.5-4 s later."""
    node = trial.rabbit
    assert isinstance(node, RabbitNode)
    at_random_progress(trial)
    trial.fault()
    node.kill(signal.SIGKILL)
    time.sleep(trial.rng.uniform(0.5, 4.0))
    started = time.monotonic()
    node.start()
    trial.note(f"the node took {time.monotonic() - started:.1f}s to start again")
