"""The loopback SOCKS5 and CONNECT proxies: credentials, loopback only, and a kill that
cuts open tunnels."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest
from python_socks import ProxyError, ProxyType
from python_socks.sync import Proxy

from sandbox.tunnels import ConnectProxy, Socks5Proxy


@pytest.fixture
def echo() -> Iterator[int]:
    """A loopback server echoing one connection's bytes at a time."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(5)

    def serve() -> None:
        for _ in range(4):
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=lambda c=conn: [c.sendall(d) for d in iter(
                lambda: c.recv(1024), b"")], daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    yield listener.getsockname()[1]
    listener.close()


def socks(proxy: Socks5Proxy, password: str = "pw") -> Proxy:
    return Proxy(ProxyType.SOCKS5, "127.0.0.1", proxy.port, "u", password, rdns=True)


def test_a_socks5_tunnel_carries_bytes_and_records_what_was_asked(echo: int) -> None:
    with Socks5Proxy("u", "pw", exit="127.0.0.21") as proxy:
        with socks(proxy).connect("localhost", echo, timeout=5) as tunnel:
            tunnel.sendall(b"ping")
            assert tunnel.recv(4) == b"ping"
        assert proxy.asked == [("localhost", echo)] and proxy.tunnels == 1


def test_wrong_credentials_and_other_hosts_are_refused(echo: int) -> None:
    with Socks5Proxy("u", "pw") as proxy:
        with pytest.raises(ProxyError):
            socks(proxy, "wrong").connect("127.0.0.1", echo, timeout=5)
        with pytest.raises(ProxyError) as caught:
            socks(proxy).connect("192.0.2.1", 80, timeout=5)
        assert caught.value.error_code == 2  # not allowed: loopback only


def test_a_kill_cuts_the_open_tunnels_and_refuses_new_ones(echo: int) -> None:
    proxy = Socks5Proxy("u", "pw")
    tunnel = socks(proxy).connect("127.0.0.1", echo, timeout=5)
    proxy.kill()
    tunnel.settimeout(5)
    assert tunnel.recv(1) == b""  # closed by the proxy
    tunnel.close()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", proxy.port), timeout=2)


def test_a_connect_proxy_wants_its_credentials(echo: int) -> None:
    with ConnectProxy("u", "pw") as proxy, socket.create_connection(
            ("127.0.0.1", proxy.port), timeout=5) as conn:
        conn.sendall(f"CONNECT 127.0.0.1:{echo} HTTP/1.1\r\n\r\n".encode())
        assert conn.recv(100).startswith(b"HTTP/1.1 407 ")
    with ConnectProxy() as proxy, socket.create_connection(
            ("127.0.0.1", proxy.port), timeout=5) as conn:
        conn.sendall(f"CONNECT 127.0.0.1:{echo} HTTP/1.1\r\n\r\nping".encode())
        reply = b""
        while not reply.endswith(b"ping"):
            reply += conn.recv(100)
        assert reply == b"HTTP/1.1 200 Connection established\r\n\r\nping"
