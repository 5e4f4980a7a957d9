"""URLs as a crawler meets them: links in pages, numeric hosts, secrets in log lines.

Pages hold hrefs with spaces, tabs, fragments, relative forms, IDN hosts and
``javascript:``/``mailto:`` pseudo-links. ``join_url`` turns one into the
absolute http(s) URL a browser would follow, or ``None`` when there is nothing
to fetch, so a parser can write ``[u for h in hrefs if (u := join_url(base, h))]``.
``normalize_url`` is the strict form for URLs that arrive as params: it raises
``UnsupportedURL`` (a ``ValueError``, so a pydantic validator turns it into
``InvalidParams``).

The cleaning follows the WHATWG URL standard where Python's ``urllib`` differs:
tabs and newlines are removed anywhere (``java\\nscript:`` is ``javascript:``),
backslashes count as slashes, and numeric IPv4 hosts (``0x7f.1``,
``2130706433``) are read the way ``inet_aton`` and browsers read them.

``redact_url`` / ``redact_text`` mask credentials (``user:***@``) and secret
query values in URLs before they reach a log line or an error message.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import SplitResult, urljoin, urlsplit, urlunsplit

import idna
from w3lib.url import safe_url_string

CRAWLABLE_SCHEMES = frozenset({"http", "https"})
_REMOVED = str.maketrans("", "", "\t\n\r")
_EDGES = "".join(chr(c) for c in range(0x21))  # C0 controls and space, stripped at both ends
_ASCII_HOST = re.compile(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*\.?")
_NUMBER = re.compile(r"0x[0-9a-f]*|0[0-7]*|[1-9][0-9]*")


class UnsupportedURL(ValueError):
    """The string is not an http(s) URL a crawler can fetch; the message says why."""


def join_url(base: str, href: str) -> str | None:
    """The absolute http(s) URL ``href`` points at from page ``base``, or None if none.

    None for ``javascript:``, ``mailto:``, ``tel:``, ``data:`` and other non-http
    schemes, and for hrefs a browser could not resolve (bad host or port).
    """
    try:
        return absolute_url(base, href)
    except UnsupportedURL:
        return None


def absolute_url(base: str, href: str) -> str:
    """``href`` resolved against ``base`` and normalised; raise ``UnsupportedURL`` if it cannot."""
    try:
        joined = urljoin(_clean(base), _clean(href))
    except ValueError as exc:
        raise UnsupportedURL(f"cannot resolve {href!r} against {base!r}: {exc}") from None
    return normalize_url(joined)


def normalize_url(url: str) -> str:
    """One http(s) URL cleaned for fetching: host lower-case, IDNA and numeric hosts
    spelled out, unsafe characters percent-encoded, the fragment dropped.

    The query order and the port are kept: this is not canonicalisation for
    dedup (``utils.fingerprint.canonical_url`` is), only the URL made fetchable.
    """
    try:
        parts = urlsplit(_clean(url))
        port = parts.port
    except ValueError as exc:
        raise UnsupportedURL(f"malformed URL {redact_url(url)!r}: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in CRAWLABLE_SCHEMES:
        raise UnsupportedURL(f"scheme {scheme or '(none)'!r} is not http/https")
    netloc = _netloc(parts, normalize_host(parts.hostname or ""), port)
    rebuilt = urlunsplit((scheme, netloc, parts.path or "/", parts.query, ""))
    return safe_url_string(rebuilt)


def normalize_host(host: str) -> str:
    """A URL host as it goes on the wire: IPv6 bracketed, numeric IPv4 dotted, names IDNA."""
    if not host:
        raise UnsupportedURL("URL has no host")
    if ":" in host:
        try:
            return f"[{ipaddress.IPv6Address(host.split('%')[0]).compressed}]"
        except ValueError:
            raise UnsupportedURL(f"invalid IPv6 host {host!r}") from None
    numeric = numeric_ipv4(host)
    if numeric is not None:
        return str(numeric)
    if not host.isascii():
        try:
            host = idna.encode(host, uts46=True).decode("ascii")
        except idna.IDNAError as exc:
            raise UnsupportedURL(f"invalid international host {host!r}: {exc}") from None
    host = host.lower()
    if not _ASCII_HOST.fullmatch(host):
        raise UnsupportedURL(f"invalid host {host!r}")
    return host


def numeric_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address a numeric host means (``127.1``, ``0x7f.1``, ``0177.0.0.1``,
    ``2130706433``), read as ``inet_aton`` and browsers read it; None for a name.

    One to four parts, each decimal, octal (leading 0) or hex (0x); the last part
    fills the remaining bytes. A trailing dot is allowed, as in a URL.
    """
    labels = host.lower().removesuffix(".").split(".")
    if not 1 <= len(labels) <= 4 or not all(_NUMBER.fullmatch(label) for label in labels):
        return None
    values = [_parse_number(label) for label in labels]
    last_bits = 8 * (5 - len(values))
    if any(v > 255 for v in values[:-1]) or values[-1] >= 1 << last_bits:
        return None
    total = values[-1]
    for index, value in enumerate(values[:-1]):
        total |= value << (24 - 8 * index)
    return ipaddress.IPv4Address(total)


def _parse_number(label: str) -> int:
    if label.startswith("0x"):
        return int(label[2:] or "0", 16)
    if len(label) > 1 and label.startswith("0"):
        return int(label[1:], 8)
    return int(label)


def _clean(url: str) -> str:
    """Strip edges, drop tabs/newlines, read backslashes as slashes before the query."""
    url = url.translate(_REMOVED).strip(_EDGES)
    cut = min((i for i in (url.find("?"), url.find("#")) if i >= 0), default=len(url))
    return url[:cut].replace("\\", "/") + url[cut:]


def _netloc(parts: SplitResult, host: str, port: int | None) -> str:
    userinfo, at, _ = parts.netloc.rpartition("@")
    return f"{userinfo}{at}{host}" + (f":{port}" if port is not None else "")


# -- secrets ----------------------------------------------------------------
_CREDENTIALS = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>[^\s/?#\"'<>]*)@")
_SECRET_QUERY = re.compile(
    r"(?P<name>[?&;][\w.\-]*?(?:pass(?:word|wd)?|pwd|secret|token|api[_\-]?key|access[_\-]?key"
    r"|signature|sig)=)(?P<value>[^&;#\s\"'<>]*)",
    re.IGNORECASE,
)


def redact_url(url: str) -> str:
    """``url`` with its password (or a lone user token) and secret query values masked.

    ``redis://:pw@h`` -> ``redis://:***@h``; ``amqp://u:pw@h`` -> ``amqp://u:***@h``;
    ``https://TOKEN@h`` -> ``https://***@h``. Meant for log lines and error messages,
    never for fetching.
    """
    return redact_text(url)


def redact_text(text: str) -> str:
    """Every URL credential and secret query value in free text masked (see ``redact_url``).

    A password must percent-encode ``/``, ``?`` and ``#`` to be a valid URL; one
    that does not is cut there by this scan, as by every URL parser.
    """
    return _SECRET_QUERY.sub(r"\g<name>***", _CREDENTIALS.sub(_mask_userinfo, text))


def _mask_userinfo(match: re.Match[str]) -> str:
    user, colon, _ = match["userinfo"].partition(":")
    masked = f"{user}:***" if colon else "***"
    return f"{match['scheme']}{masked}@"
