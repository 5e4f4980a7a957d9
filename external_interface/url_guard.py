"""The SSRF guard: a crawl must not reach the machine's own network.

A crawler follows URLs that pages and redirects hand it, so a hostile page can
point it at ``http://127.0.0.1:6379/``, a database on ``10.0.0.5`` or the cloud
metadata service at ``169.254.169.254``. With the guard on, the fetcher refuses
any address that is not globally routable: loopback, private, link-local,
shared (CGNAT), multicast, unspecified, reserved, and the metadata endpoints,
including their IPv4-mapped, NAT64 and 6to4 spellings.

The check runs where it cannot be bypassed: every fetch client resolves the host
once, checks every address, and connects only to a checked one (``http``:
``clients.http_transport``, at connect time; ``impersonate``: the checked
addresses pinned with curl's ``RESOLVE``). A DNS answer that changes between a
check and a second lookup (rebinding) never matters, because there is no second
lookup. Numeric hosts (``2130706433``, ``0x7f.1``, ``[::1]``) are also refused
before connecting, with a clearer message. Through a ``socks5://`` proxy the
checked address is what the proxy is handed; through an http or ``socks5h://``
proxy the proxy resolves the name, so the guard can only check the URL's host
itself (literal, or resolved here as best effort); the proxy's own egress rules
must do the rest.

The allow-list (CIDRs such as ``127.0.0.0/8`` or ``ip:port`` such as
``127.0.0.1:8765`` / ``[::1]:8765``) lets the sandbox and tests through.
Metadata addresses are refused even when an allow-listed network covers them.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable, Sequence
from typing import Any
from urllib.parse import urlsplit

from exceptions import UnsafeURL
from utils.urls import numeric_ipv4, redact_url

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
AddrInfo = tuple[int, tuple[Any, ...]]  # (family, sockaddr) as getaddrinfo gives them
Resolver = Callable[[str, int], Sequence[AddrInfo]]

METADATA = frozenset(ipaddress.ip_address(a) for a in (
    "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean, ...
    "169.254.170.2",  # AWS ECS task metadata
    "fd00:ec2::254",  # AWS IPv6 metadata
    "100.100.100.200",  # Alibaba Cloud
))
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def forbidden_reason(ip: IPAddress) -> str | None:
    """Why ``ip`` must not be contacted, or None when it is globally routable.

    An IPv4-mapped or NAT64 address is judged by the IPv4 address it carries
    (DNS64 networks give every IPv4-only site a 64:ff9b:: address); a 6to4 or
    IPv4-compatible one must pass both as itself and as its IPv4 address.
    """
    carried = _carried_ipv4(ip)
    if carried is not None:
        return _tagged(_reason(carried), ip)
    for candidate in (ip, *_embedded_ipv4(ip)):
        reason = _reason(candidate)
        if reason:
            return reason if candidate is ip else _tagged(reason, ip)
    return None


def _tagged(reason: str | None, ip: IPAddress) -> str | None:
    return reason and f"{reason}, inside {ip}"


def _reason(ip: IPAddress) -> str | None:
    checks = (
        (ip in METADATA, "cloud metadata"), (ip.is_loopback, "loopback"),
        (ip.is_unspecified, "unspecified"), (ip.is_link_local, "link-local"),
        (ip.is_multicast, "multicast"), (ip.is_private, "private"),
        (ip.is_reserved, "reserved"), (not ip.is_global, "not globally routable"),
    )
    return next((reason for hit, reason in checks if hit), None)


def _carried_ipv4(ip: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address a mapped (::ffff:a.b.c.d) or NAT64 address is a way to reach."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return None
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF) if ip in _NAT64 else None


def _embedded_ipv4(ip: IPAddress) -> list[ipaddress.IPv4Address]:
    """IPv4 addresses a 6to4 (2002::/16) or IPv4-compatible (::a.b.c.d) address embeds."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return []
    found = [ip.sixtofour]
    if int(ip) >> 32 == 0:
        found.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return [v4 for v4 in found if v4 is not None]


def _system_resolver(host: str, port: int) -> list[AddrInfo]:
    return [(int(family), tuple(sockaddr)) for family, _, _, _, sockaddr
            in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)]


class UrlGuard:
    """Refuses non-public addresses; built once per fetcher, shared by its connections."""

    def __init__(self, allow: Iterable[str] = (), resolve: Resolver = _system_resolver) -> None:
        """``allow``: CIDRs or ``ip:port``; ``resolve``: ``getaddrinfo`` unless a test says else.

        A bad allow-list entry raises ``ValueError`` here, at startup, not mid-crawl.
        """
        self.networks: list[Network] = []
        self.endpoints: set[tuple[IPAddress, int]] = set()
        for entry in allow:
            self._add(entry.strip())
        self.resolve = resolve

    def _add(self, entry: str) -> None:
        if entry.startswith("[") and "]:" in entry:  # [v6]:port
            host, _, port = entry[1:].partition("]:")
        elif entry.count(":") == 1:  # v4:port
            host, _, port = entry.partition(":")
        else:
            self.networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
            return
        if not port.isdigit() or int(port) > 65535:
            raise ValueError(f"bad port in allow-list entry {entry!r}")
        self.endpoints.add((ipaddress.ip_address(host), int(port)))

    def allows(self, ip: IPAddress, port: int) -> bool:
        """True when ``ip:port`` is public or allow-listed (metadata never is)."""
        if forbidden_reason(ip) is None:
            return True
        if ip in METADATA:
            return False
        return (ip, port) in self.endpoints or any(ip in net for net in self.networks)

    def check_ip(self, ip: IPAddress, port: int, host: str) -> None:
        """Raise ``UnsafeURL`` when ``ip:port`` (what ``host`` resolved to) is refused."""
        if not self.allows(ip, port):
            raise UnsafeURL(f"host {host!r} is {ip} ({forbidden_reason(ip)}); "
                            "refused by the SSRF guard")

    def addresses(self, host: str, port: int) -> list[AddrInfo]:
        """Resolve ``host`` once; return only allowed addresses, or raise ``UnsafeURL``.

        ``socket.gaierror`` passes through (the caller reports a DNS failure).
        Addresses the guard refuses are dropped, so a rebinding answer that mixes
        public and private addresses can only ever reach the public ones.
        """
        found = list(self.resolve(host, port))
        allowed = [info for info in found if self.allows(_ip(info), port)]
        if not allowed:
            for info in found:
                self.check_ip(_ip(info), port, host)
            raise socket.gaierror(socket.EAI_NONAME, f"{host!r} resolved to no address")
        return allowed

    def check_url(self, url: str, *, resolve: bool = False) -> None:
        """Refuse ``url`` when its host is a forbidden address literal (any numeric form).

        With ``resolve`` (requests through a proxy, where no connect-time check is
        possible) a name is resolved here too and every answer must pass.
        """
        try:
            parts = urlsplit(url)
            host, port = parts.hostname or "", parts.port or _DEFAULT_PORTS.get(parts.scheme, 80)
        except ValueError:
            return  # malformed: the fetch itself reports it
        ip = literal_ip(host)
        try:
            if ip is not None:
                self.check_ip(ip, port, host)
            elif resolve:
                for info in self.resolve(host, port):
                    self.check_ip(_ip(info), port, host)
        except UnsafeURL as exc:
            raise UnsafeURL(str(exc), url=redact_url(url)) from None
        except OSError:
            return  # no answer here: the proxy may still resolve it; nothing to refuse


def literal_ip(host: str) -> IPAddress | None:
    """The address a URL host spells literally (IPv6, dotted or numeric IPv4), else None."""
    bare = host.strip("[]").split("%")[0]
    try:
        return ipaddress.ip_address(bare)
    except ValueError:
        return numeric_ipv4(bare)


def _ip(info: AddrInfo) -> IPAddress:
    return ipaddress.ip_address(info[1][0].split("%")[0])
