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

from external_interface.clients.http_transport import (
    MAX_ROUTES,
    BoundedHTTPConnection,
    Deadline,
    DeadlineSocket,
    DeadlineSSLSocket,
    Proxy,
    Route,
    TlsContext,
    Transport,
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


def test_the_next_fetch_gets_the_timeout_http_client_asked_for_not_the_last_deadlines(
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


# -- proxies and connections ---------------------------------------------------------
def test_proxy_credentials_become_the_proxy_authorization_header_only() -> None:
    proxy = Proxy.parse("http://us%40er:p%3Aw@127.0.0.1:3128")
    assert (proxy.scheme, proxy.host, proxy.port) == ("http", "127.0.0.1", 3128)
    assert proxy.headers == {"Proxy-Authorization": "Basic dXNAZXI6cDp3"}  # us@er:p:w


def test_socks_credentials_are_kept_for_the_handshake_and_never_become_a_header() -> None:
    proxy = Proxy.parse("socks5h://us%40er:p%3Aw@127.0.0.1")
    assert (proxy.scheme, proxy.port, proxy.username, proxy.password) == (
        "socks5h", 1080, "us@er", "p:w")
    assert proxy.headers == {} and not proxy.forwards


@pytest.mark.parametrize("proxy", ["socks4://u:pw@127.0.0.1:1080", "127.0.0.1:3128",
                                   "http://u:pw@:3128", "http://u:pw@127.0.0.1:port"])
def test_a_proxy_url_of_another_scheme_or_malformed_is_a_value_error(proxy: str) -> None:
    with pytest.raises(ValueError) as caught:
        Proxy.parse(proxy)
    assert "pw" not in str(caught.value)


@pytest.fixture
def http_server() -> Iterator[tuple[str, int, list[int]]]:
    """A keep-alive server answering 200 "ok"; the list counts its accepted connections."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[int] = []
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            accepted.append(1)
            threading.Thread(target=answer, args=(conn,), daemon=True).start()

    def answer(conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as reader:
            while True:
                head = b""
                while not head.endswith(b"\r\n\r\n"):
                    line = reader.readline()
                    if not line:
                        return
                    head += line
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield "127.0.0.1", listener.getsockname()[1], accepted
    stop.set()
    thread.join(timeout=5)
    listener.close()


def exchange(transport: Transport, route: Route) -> bytes:
    sent = transport.send(route, "GET", "/", {"Host": "x"}, None)
    body = sent.read1(100)
    sent.release()
    return body


def test_a_route_reuses_its_kept_alive_connection(
        http_server: tuple[str, int, list[int]]) -> None:
    host, port, accepted = http_server
    transport, route = Transport(), Route("http", host, port)
    assert [exchange(transport, route) for _ in range(5)] == [b"ok"] * 5
    assert len(accepted) == 1


def test_an_idle_connection_the_server_closed_is_replaced_once(
        http_server: tuple[str, int, list[int]]) -> None:
    host, port, accepted = http_server
    transport, route = Transport(), Route("http", host, port)
    exchange(transport, route)
    for idle in transport._idle[route]:
        idle.sock.shutdown(socket.SHUT_RDWR)  # as a server closing it would leave it
    assert exchange(transport, route) == b"ok"
    assert len(accepted) == 2


def test_past_the_route_limit_the_oldest_routes_connections_are_closed(
        http_server: tuple[str, int, list[int]]) -> None:
    host, port, _ = http_server
    transport = Transport()
    first = Route("http", host, port, None)
    exchange(transport, first)
    [kept] = transport._idle[first]
    for i in range(MAX_ROUTES):
        transport.keep(Route("http", f"host-{i}.example", 80),
                       BoundedHTTPConnection("x", 1, timeout=1, read_timeout=1))
    assert first not in transport._idle and kept.sock is None  # closed


def test_connections_are_kept_per_process(http_server: tuple[str, int, list[int]]) -> None:
    host, port, _ = http_server
    transport, route = Transport(), Route("http", host, port)
    exchange(transport, route)
    [parents] = transport._idle[route]
    child = os.fork()
    if child == 0:  # the child: its own connection, never the parent's socket
        connection, reused = transport._connection(route)
        os._exit(0 if not reused and connection is not parents else 1)
    assert os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]) == 0
    assert transport._connection(route) == (parents, True)
