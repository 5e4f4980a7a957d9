"""The socket layer: sockets that obey the running fetch's deadline, proxy managers that
keep credentials in one header, pools per process."""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from external_interface.fetch_transport import (
    MAX_POOLS,
    PROXY_MANAGERS,
    Deadline,
    DeadlineSocket,
    DeadlineSSLSocket,
    TlsContext,
    Transport,
    proxy_manager,
)


@pytest.fixture
def pair() -> Iterator[tuple[DeadlineSocket, socket.socket]]:
    """A connected ``DeadlineSocket`` and its plain peer."""
    ours, peer = socket.socketpair()
    bounded = DeadlineSocket(ours.family, ours.type, ours.proto, ours.detach())
    yield bounded, peer
    bounded.close()
    peer.close()


# -- deadline sockets ------------------------------------------------------------------
def test_a_socket_refuses_to_block_once_the_deadline_has_passed(
        pair: tuple[DeadlineSocket, socket.socket]) -> None:
    ours, peer = pair
    peer.sendall(b"late")
    with Deadline(0), pytest.raises(TimeoutError, match="fetch deadline passed"):
        ours.recv(4)


@pytest.mark.timeout(20)
def test_a_blocking_socket_waits_only_the_time_left(
        pair: tuple[DeadlineSocket, socket.socket]) -> None:
    ours, _ = pair
    ours.settimeout(None)  # would wait forever on its own
    with Deadline(0.2), pytest.raises(TimeoutError):
        ours.recv(1)


def test_the_next_fetch_gets_the_timeout_urllib3_asked_for_not_the_last_deadlines(
        pair: tuple[DeadlineSocket, socket.socket]) -> None:
    ours, peer = pair
    ours.settimeout(10)
    with Deadline(0.05), pytest.raises(TimeoutError):
        ours.recv(1)
    peer.sendall(b"x")
    with Deadline(30):
        assert ours.recv(1) == b"x" and ours.gettimeout() == 10


def test_outside_a_fetch_a_socket_is_a_plain_socket(
        pair: tuple[DeadlineSocket, socket.socket]) -> None:
    ours, peer = pair
    ours.settimeout(3)
    ours.sendall(b"ping")
    assert peer.recv(4) == b"ping" and ours.gettimeout() == 3


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A throwaway self-signed certificate for 127.0.0.1 (openssl's command line)."""
    if shutil.which("openssl") is None:
        pytest.skip("no openssl command here")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=60)
    return cert, key


@pytest.mark.timeout(20)
def test_a_tls_socket_made_by_the_fetchers_context_obeys_the_deadline(
        certificate: tuple[Path, Path]) -> None:
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(*certificate)
    listener = socket.create_server(("127.0.0.1", 0))
    done = threading.Event()

    def serve() -> None:  # complete the handshake, then say nothing
        conn, _ = listener.accept()
        with server.wrap_socket(conn, server_side=True):
            done.wait(10)

    threading.Thread(target=serve, daemon=True).start()
    context = TlsContext().get()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # self-signed
    try:
        plain = socket.create_connection(listener.getsockname())
        with context.wrap_socket(plain) as tls:
            assert isinstance(tls, DeadlineSSLSocket)
            tls.settimeout(None)
            with Deadline(0.2), pytest.raises(TimeoutError):
                tls.recv(1)
    finally:
        done.set()
        listener.close()


# -- proxies and pools -------------------------------------------------------------------
def test_proxy_credentials_become_the_proxy_authorization_header_only() -> None:
    manager = proxy_manager("http://us%40er:p%3Aw@127.0.0.1:3128", TlsContext())
    assert manager.proxy is not None and manager.proxy.url == "http://127.0.0.1:3128"
    assert manager.proxy_headers == {"Proxy-Authorization": "Basic dXNAZXI6cDp3"}  # us@er:p:w


@pytest.mark.parametrize("proxy", ["socks5://u:pw@127.0.0.1:1080", "127.0.0.1:3128",
                                   "http://u:pw@:3128", "http://u:pw@127.0.0.1:port"])
def test_a_proxy_url_that_is_not_http_or_malformed_is_a_value_error(proxy: str) -> None:
    with pytest.raises(ValueError) as caught:
        proxy_manager(proxy, TlsContext())
    assert "pw" not in str(caught.value)


def test_past_the_proxy_limit_the_oldest_proxys_pools_are_closed() -> None:
    transport = Transport()
    proxies = [f"http://127.0.0.1:{10_000 + i}" for i in range(PROXY_MANAGERS + 1)]
    first = transport.pool("https", "example.com", 443, proxies[0])
    for proxy in proxies[1:]:
        transport.pool("https", "example.com", 443, proxy)
    assert first.pool is None  # closed
    again = transport.pool("https", "example.com", 443, proxies[0])
    assert again is not first and again.pool is not None


def test_past_the_pool_limit_the_oldest_direct_pool_is_closed() -> None:
    transport = Transport()
    first = transport.pool("http", "host-0.example", 80)
    for i in range(1, MAX_POOLS + 1):
        transport.pool("http", f"host-{i}.example", 80)
    assert first.pool is None
    assert transport.pool("http", "host-0.example", 80).pool is not None


def test_pools_are_kept_per_process() -> None:
    transport = Transport()
    pool = transport.pool("http", "example.com", 80)
    child = os.fork()
    if child == 0:  # the child: its own pool, never the parent's sockets
        os._exit(0 if transport.pool("http", "example.com", 80) is not pool else 1)
    assert os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]) == 0
    assert transport.pool("http", "example.com", 80) is pool
