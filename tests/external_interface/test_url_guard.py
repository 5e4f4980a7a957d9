"""The SSRF guard: every spelling of a forbidden address is refused, at connect time,
on every redirect hop; the allow-list lets the sandbox through; DNS answers are used
exactly as checked."""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote

import pytest

from config import FetchSettings
from exceptions import NetworkError, UnsafeURL
from external_interface.http import Request
from external_interface.url_guard import AddrInfo, UrlGuard, forbidden_reason, literal_ip
from tests.external_interface.clients.raw_server import AnyClient, client


class Counting(BaseHTTPRequestHandler):
    """200 "ok" for any path; ``/redirect?to=URL`` answers 302 to URL. Counts hits."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.server.hits += 1  # type: ignore[attr-defined]
        if self.path.startswith("/redirect?to="):
            self.send_response(302)
            self.send_header("Location", unquote(self.path.split("=", 1)[1]))
            body = b""
        else:
            self.send_response(200)
            body = b"ok"
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], family: int = socket.AF_INET) -> None:
        self.address_family = family
        super().__init__(address, Counting)
        self.hits = 0
        self.port = self.server_address[1]
        threading.Thread(target=self.serve_forever, args=(0.02,), daemon=True).start()

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


@pytest.fixture
def server() -> Iterator[Server]:
    srv = Server(("127.0.0.1", 0))
    yield srv
    srv.stop()


@pytest.fixture
def other() -> Iterator[Server]:
    srv = Server(("127.0.0.1", 0))
    yield srv
    srv.stop()


def fetcher(guard: UrlGuard | None, name: str = "http") -> AnyClient:
    return client(name, FetchSettings(deadline_s=3, connect_timeout_s=1), guard=guard)


NUMERIC_LOOPBACK = ["127.0.0.1", "2130706433", "0x7f.1", "0177.0.0.1", "127.1", "0x7f000001",
                    "017700000001"]


# -- addresses -----------------------------------------------------------------------
@pytest.mark.parametrize("address", [
    "127.0.0.1", "127.255.0.9", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.1.1",
    "169.254.169.254", "fd00:ec2::254", "100.100.100.200", "::1", "0.0.0.0", "::",
    "224.0.0.1", "ff02::1", "fe80::1", "100.64.0.1", "240.0.0.1", "255.255.255.255",
    "198.18.0.1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "64:ff9b::7f00:1", "2002:7f00:1::",
    "::7f00:1", "fc00::1",
])
def test_non_public_addresses_in_every_form_are_forbidden(address: str) -> None:
    assert forbidden_reason(ipaddress.ip_address(address)) is not None


@pytest.mark.parametrize("address", ["8.8.8.8", "1.1.1.1", "93.184.216.34",
                                     "2606:4700:4700::1111", "64:ff9b::808:808"])
def test_public_addresses_pass(address: str) -> None:
    assert forbidden_reason(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize(("address", "reason"), [
    ("169.254.169.254", "cloud metadata"), ("fd00:ec2::254", "cloud metadata"),
    ("127.0.0.1", "loopback"), ("10.0.0.1", "private"), ("169.254.1.1", "link-local"),
    ("224.0.0.1", "multicast"), ("0.0.0.0", "unspecified"),
])
def test_the_reason_names_the_kind_of_address(address: str, reason: str) -> None:
    assert forbidden_reason(ipaddress.ip_address(address)) == reason


@pytest.mark.parametrize("host", [*NUMERIC_LOOPBACK, "[::ffff:127.0.0.1]"])
def test_numeric_host_spellings_are_read_as_the_address_they_mean(host: str) -> None:
    assert literal_ip(host) in (ipaddress.ip_address("127.0.0.1"),
                                ipaddress.ip_address("::ffff:127.0.0.1"))


@pytest.mark.parametrize("host", ["localhost", "example.com", "1.2.3.4.5", "0x", "08.1"])
def test_names_are_not_literals(host: str) -> None:
    assert literal_ip(host) in (None, ipaddress.ip_address("0.0.0.0"))


# -- the allow-list --------------------------------------------------------------------
def test_allow_list_takes_cidrs_addresses_and_ip_port() -> None:
    guard = UrlGuard(["10.0.0.0/8", "192.168.1.5", "127.0.0.1:8765", "[::1]:8765", "fc00::/7"])
    assert guard.allows(ipaddress.ip_address("10.9.9.9"), 1)
    assert guard.allows(ipaddress.ip_address("192.168.1.5"), 1)
    assert guard.allows(ipaddress.ip_address("127.0.0.1"), 8765)
    assert not guard.allows(ipaddress.ip_address("127.0.0.1"), 6379)
    assert guard.allows(ipaddress.ip_address("::1"), 8765)
    assert not guard.allows(ipaddress.ip_address("::1"), 22)


@pytest.mark.parametrize("entry", ["not-an-address", "127.0.0.1:99999", "[::1]:x", "10.0.0.0/33"])
def test_a_bad_allow_list_entry_fails_at_startup(entry: str) -> None:
    with pytest.raises(ValueError):
        UrlGuard([entry])


def test_metadata_stays_refused_inside_an_allowed_network(client_name: str) -> None:
    guard = UrlGuard(["169.254.0.0/16", "fd00::/8"])
    assert guard.allows(ipaddress.ip_address("169.254.1.1"), 80)
    assert not guard.allows(ipaddress.ip_address("169.254.169.254"), 80)
    assert not guard.allows(ipaddress.ip_address("fd00:ec2::254"), 80)
    with pytest.raises(UnsafeURL, match="metadata"):
        fetcher(guard, client_name).fetch(Request("http://169.254.169.254/latest/meta-data/"))


# -- fetching --------------------------------------------------------------------------
@pytest.mark.parametrize("host", NUMERIC_LOOPBACK)
def test_numeric_spellings_really_reach_loopback_without_the_guard(
        server: Server, host: str, client_name: str) -> None:
    assert fetcher(None, client_name).fetch(Request(f"http://{host}:{server.port}/")).body == b"ok"


@pytest.mark.parametrize("host", [*NUMERIC_LOOPBACK, "127.0.0.1.", "0x7F.1.", "localhost",
                                  "LOCALHOST", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]"])
def test_the_guard_refuses_loopback_in_every_spelling(
        server: Server, host: str, client_name: str) -> None:
    with pytest.raises(UnsafeURL, match="SSRF guard") as caught:
        fetcher(UrlGuard(), client_name).fetch(Request(f"http://{host}:{server.port}/"))
    assert server.hits == 0 and caught.value.url


def test_an_allow_listed_endpoint_is_fetched_and_its_neighbours_are_not(
        server: Server, other: Server, client_name: str) -> None:
    guarded = fetcher(UrlGuard([f"127.0.0.1:{server.port}"]), client_name)
    assert guarded.fetch(Request(f"http://0x7f.1:{server.port}/")).body == b"ok"
    with pytest.raises(UnsafeURL):
        guarded.fetch(Request(f"http://127.0.0.1:{other.port}/"))
    assert other.hits == 0


def test_an_allow_listed_network_covers_every_port(
        server: Server, other: Server, client_name: str) -> None:
    guarded = fetcher(UrlGuard(["127.0.0.0/8"]), client_name)
    assert guarded.fetch(Request(f"http://127.0.0.1:{other.port}/")).body == b"ok"


@pytest.mark.parametrize("target", ["http://127.0.0.1:{port}/", "http://2130706433:{port}/",
                                    "http://localhost:{port}/", "http://[::ffff:7f00:1]:{port}/"])
def test_every_redirect_hop_is_checked(
        server: Server, other: Server, target: str, client_name: str) -> None:
    guarded = fetcher(UrlGuard([f"127.0.0.1:{server.port}"]), client_name)
    with pytest.raises(UnsafeURL):
        guarded.fetch(Request(f"http://127.0.0.1:{server.port}/redirect?to="
                              + target.format(port=other.port)))
    assert server.hits == 1 and other.hits == 0


def test_through_a_proxy_the_target_host_is_checked_before_sending(
        server: Server, other: Server, client_name: str) -> None:
    proxy = f"http://127.0.0.1:{other.port}"
    guarded = fetcher(UrlGuard([f"127.0.0.1:{other.port}"]), client_name)
    for target in (f"http://127.0.0.1:{server.port}/", f"http://localhost:{server.port}/"):
        with pytest.raises(UnsafeURL):
            guarded.fetch(Request(target, proxy=proxy))
    assert other.hits == 0 and server.hits == 0


# -- DNS rebinding -----------------------------------------------------------------------
class Answers:
    """A resolver for ``rebind.test`` that gives the next scripted answer at each lookup."""

    def __init__(self, *answers: Sequence[str]) -> None:
        self.answers, self.calls = list(answers), 0

    def __call__(self, host: str, port: int) -> list[AddrInfo]:
        assert host.lower().rstrip(".") == "rebind.test"
        answer = self.answers[min(self.calls, len(self.answers) - 1)]
        self.calls += 1
        return [(socket.AF_INET, (ip, port)) for ip in answer]


@pytest.fixture
def twins() -> Iterator[tuple[Server, Server]]:
    """Servers on 127.0.0.1:P and 127.0.0.2:P: the same port, an allowed and a refused IP."""
    first = Server(("127.0.0.1", 0))
    try:
        second = Server(("127.0.0.2", first.port))
    except OSError:
        first.stop()
        pytest.skip("cannot bind 127.0.0.2 with the same port")
    yield first, second
    first.stop()
    second.stop()


@pytest.mark.parametrize("answers", [
    (["127.0.0.1"], ["127.0.0.2"]),  # rebinding after the first lookup
    (["127.0.0.2", "127.0.0.1"],),  # a mixed answer: only the allowed address is used
])
def test_the_connection_goes_to_the_address_that_was_checked(
        twins: tuple[Server, Server], answers: tuple[list[str], ...], client_name: str) -> None:
    allowed, refused = twins
    resolver = Answers(*answers)
    guarded = fetcher(UrlGuard(["127.0.0.1/32"], resolve=resolver), client_name)
    assert guarded.fetch(Request(f"http://rebind.test:{allowed.port}/")).body == b"ok"
    assert resolver.calls == 1 and allowed.hits == 1 and refused.hits == 0


def test_a_name_resolving_only_to_refused_addresses_is_refused(
        twins: tuple[Server, Server], client_name: str) -> None:
    allowed, refused = twins
    guarded = fetcher(UrlGuard(["127.0.0.1/32"], resolve=Answers(["127.0.0.2"])), client_name)
    with pytest.raises(UnsafeURL, match=r"127\.0\.0\.2"):
        guarded.fetch(Request(f"http://rebind.test:{allowed.port}/"))
    assert refused.hits == 0


# -- IPv6 loopback -----------------------------------------------------------------------
@pytest.fixture
def server6() -> Iterator[Server]:
    try:
        srv = Server(("::1", 0), socket.AF_INET6)
    except OSError:
        pytest.skip("no IPv6 loopback here")
    yield srv
    srv.stop()


def test_ipv6_loopback_is_refused_and_reachable_without_the_guard(
        server6: Server, client_name: str) -> None:
    url = f"http://[::1]:{server6.port}/"
    assert fetcher(None, client_name).fetch(Request(url)).body == b"ok"
    with pytest.raises(UnsafeURL, match="loopback"):
        fetcher(UrlGuard(), client_name).fetch(Request(url))
    assert server6.hits == 1


@pytest.mark.parametrize("host", ["rebind.test.", "REBIND.test"])
def test_every_spelling_of_a_checked_name_goes_to_the_checked_address(
        twins: tuple[Server, Server], host: str, client_name: str) -> None:
    """A final dot or another case names the same host: no spelling may slip past to a
    lookup the guard did not check."""
    allowed, refused = twins
    resolver = Answers(["127.0.0.1"], ["127.0.0.2"])
    guarded = fetcher(UrlGuard(["127.0.0.1/32"], resolve=resolver), client_name)
    assert guarded.fetch(Request(f"http://{host}:{allowed.port}/")).body == b"ok"
    assert allowed.hits == 1 and refused.hits == 0


def test_a_name_the_guard_cannot_resolve_is_not_fetched(server: Server, client_name: str) -> None:
    """``localhost`` resolves everywhere else: nothing may look it up behind the guard."""
    def fails(host: str, port: int) -> list[AddrInfo]:
        raise socket.gaierror(socket.EAI_AGAIN, "temporary failure in name resolution")

    guarded = fetcher(UrlGuard(["127.0.0.0/8"], resolve=fails), client_name)
    with pytest.raises(NetworkError, match="resolve"):
        guarded.fetch(Request(f"http://localhost:{server.port}/"))
    assert server.hits == 0
