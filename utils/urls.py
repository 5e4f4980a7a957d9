"""URLs as a crawler meets them: links in pages, numeric hosts, secrets in log lines.

One rule turns an href found on a page, with the page's URL as base, into the
URL to fetch: ``fetch_url(href, base)`` (None when there is nothing to fetch)
and its strict form ``normalize_url`` (raises ``UnsupportedURL`` naming why, a
``ValueError``, so a pydantic validator turns it into ``InvalidParams``).
``utils.fingerprint.canonical_url`` starts from the same URL, so the link a
parser follows, the URL fetched and the key dedup keeps cannot drift apart.

The rule is the WHATWG URL standard, where a browser and Python's ``urllib``
differ:

- tabs and newlines are removed anywhere (``java\\nscript:`` is ``javascript:``),
  C0 controls and spaces trimmed at both ends, backslashes read as slashes
  before the query;
- only http(s) is fetched: ``javascript:``, ``mailto:``, ``data:``, ``tel:``,
  other schemes, an empty href and an unparseable one give None ("drop");
- relative forms resolve against the base (``../``, ``./``, ``?q``, ``//host``),
  and dot segments are removed in absolute hrefs too, ``%2e`` counting as a dot;
- scheme and host lower-case, IDN hosts in punycode (``idna``, UTS 46), numeric
  IPv4 hosts (``0x7f.1``, ``2130706433``) dotted as ``inet_aton`` reads them, a
  host ending in a number that is no IPv4 address refused; the default port
  (80, 443) dropped; ``user:pass@`` kept (the fetch sends it as Basic auth);
- the fragment dropped (it never reaches the server);
- characters RFC 3986 does not allow raw in a path or query percent-encoded as
  UTF-8, as ``w3lib.url.safe_url_string`` does; an href that needs none of
  this (most do) skips w3lib.

What the server receives is never changed in a way that can change the
resource: existing percent-escapes keep their case and are never decoded (so
``%2F`` stays distinct from ``/``), and the query keeps its order. The
normalisations only dedup needs (escape case, unreserved escapes decoded,
query arguments sorted) live in ``utils.fingerprint.canonical_url``.

``redact_url`` / ``redact_text`` mask credentials (``user:***@``) and secret
query values in URLs before they reach a log line or an error message;
``redact_data`` does it to every string of a unit's params before a view shows them.
"""

from __future__ import annotations

import ipaddress
import re
from functools import lru_cache
from typing import Any, NamedTuple
from urllib.parse import quote, unquote, urlsplit

import idna
from w3lib.url import safe_url_string

CRAWLABLE_SCHEMES = frozenset({"http", "https"})
DEFAULT_PORTS = {"http": 80, "https": 443}
_REMOVED = str.maketrans("", "", "\t\n\r")
_EDGES = "".join(chr(c) for c in range(0x21))  # C0 controls and space, stripped at both ends
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
_AUTHORITY_END = re.compile(r"[/?]")
_ASCII_HOST = re.compile(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*\.?")
_NUMBER = re.compile(r"0x[0-9a-f]*|0[0-7]*|[1-9][0-9]*")
_LAST_NUMBER = re.compile(r"[0-9]+|0x[0-9a-f]*")
# What w3lib's safe_url_string leaves as it is: RFC 3986 unreserved and sub-delims,
# ":@/" and valid escapes ("'" is escaped in the query of http(s), as WHATWG says).
_PLAIN_PATH = re.compile(r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/]|%[0-9A-Fa-f]{2})*")
_PLAIN_QUERY = re.compile(r"(?:[A-Za-z0-9\-._~!$&()*+,;=:@/?]|%[0-9A-Fa-f]{2})*")
_PLAIN_USERINFO = re.compile(r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:]|%[0-9A-Fa-f]{2})*")
_SINGLE_DOT = frozenset({".", "%2e"})
_DOUBLE_DOT = frozenset({"..", ".%2e", "%2e.", "%2e%2e"})


class UnsupportedURL(ValueError):
    """The string is not an http(s) URL a crawler can fetch; the message says why."""


class _Page(NamedTuple):
    """A base URL, normalised and cut where relative hrefs join it."""

    url: str
    scheme: str
    origin: str  # scheme://netloc
    path: str
    directory: str  # the path up to its last "/"


def fetch_url(href: str, base: str | None = None) -> str | None:
    """The http(s) URL to fetch for ``href`` found on page ``base``, or None to drop it.

    None for ``javascript:``, ``mailto:``, ``tel:``, ``data:`` and other non-http
    schemes, an empty href, and hrefs a browser could not resolve (bad host or
    port). ``[u for h in hrefs if (u := fetch_url(h, page_url))]`` is a page's links.
    """
    try:
        return normalize_url(href, base)
    except UnsupportedURL:
        return None


def normalize_url(href: str, base: str | None = None) -> str:
    """The URL to fetch for ``href`` (resolved against ``base`` when relative), by the
    rule in the module docstring; ``UnsupportedURL`` says why there is none."""
    text = _clean(href)
    if not text:
        raise UnsupportedURL("empty URL: nothing to fetch")
    text = text.partition("#")[0]
    scheme_match = _SCHEME.match(text)
    if scheme_match:
        scheme = scheme_match[1].lower()
        if scheme not in CRAWLABLE_SCHEMES:
            raise UnsupportedURL(f"scheme {scheme!r} is not http/https")
        rest = text[scheme_match.end():]
        if rest.startswith("//") or base is None or _page(base).scheme != scheme:
            return _absolute(scheme, rest.lstrip("/"))
        text = rest  # "http:next.html" on an http page is relative (WHATWG)
    if base is None:
        raise UnsupportedURL(f"relative URL {redact_url(text)!r} has no base to resolve against")
    page = _page(base)
    if text.startswith("//"):
        return _absolute(page.scheme, text.lstrip("/"))
    if text.startswith("/"):
        return _finish(page.origin, text)
    if not text:  # a fragment only: the page itself
        return page.url
    if text.startswith("?"):
        return _finish(page.origin, page.path + text)
    return _finish(page.origin, page.directory + text)


@lru_cache(maxsize=64)
def _page(base: str) -> _Page:
    """The base cut for joining; cached, since every href of a page shares it."""
    try:
        url = normalize_url(base)
    except UnsupportedURL as exc:
        raise UnsupportedURL(f"base URL is not fetchable: {exc}") from None
    parts = urlsplit(url)
    origin = f"{parts.scheme}://{parts.netloc}"
    return _Page(url, parts.scheme, origin, parts.path, parts.path[:parts.path.rfind("/") + 1])


def _absolute(scheme: str, rest: str) -> str:
    """``rest`` is what follows ``scheme://`` (any number of slashes, as WHATWG reads)."""
    end = _AUTHORITY_END.search(rest)
    cut = end.start() if end else len(rest)
    path_query = rest[cut:]
    if not path_query.startswith("/"):
        path_query = "/" + path_query
    return _finish(f"{scheme}://{_netloc(scheme, rest[:cut])}", path_query)


def _finish(origin: str, path_query: str) -> str:
    """Percent-encode what must be (via w3lib, only when needed), remove dot segments."""
    path, _, query = path_query.partition("?")
    if not _PLAIN_PATH.fullmatch(path) or (query and not _PLAIN_QUERY.fullmatch(query)):
        quoted = safe_url_string("http://h" + path_query)[len("http://h"):]
        path, _, query = quoted.partition("?")
    if "/." in path or "%2" in path:
        path = _remove_dot_segments(path)
    return f"{origin}{path}?{query}" if query else origin + path


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4 on an absolute path; ``%2e`` is a dot, as WHATWG says."""
    segments = path.split("/")[1:]
    kept: list[str] = []
    for index, segment in enumerate(segments):
        lowered = segment.lower()
        if lowered in _DOUBLE_DOT:
            if kept:
                kept.pop()
        elif lowered not in _SINGLE_DOT:
            kept.append(segment)
            continue
        if index == len(segments) - 1:  # "/a/.." is "/a/", not "/a"
            kept.append("")
    return "/" + "/".join(kept)


@lru_cache(maxsize=4096)
def _netloc(scheme: str, authority: str) -> str:
    """``[userinfo@]host[:port]`` normalised; cached, since a page's links share a few."""
    userinfo, at, hostport = authority.rpartition("@")
    if hostport.startswith("["):
        host, bracket, after = hostport[1:].partition("]")
        if not bracket or (after and not after.startswith(":")):
            raise UnsupportedURL(f"invalid IPv6 host in {redact_url(authority)!r}")
        port_text = after[1:]
    else:
        host, _, port_text = hostport.partition(":")
    port = _port(scheme, port_text)
    netloc = normalize_host(unquote(host) if "%" in host else host)
    if port is not None:
        netloc += f":{port}"
    if at and userinfo not in ("", ":"):
        if not _PLAIN_USERINFO.fullmatch(userinfo):
            userinfo = quote(userinfo, safe="!$&'()*+,;=:%")
        netloc = f"{userinfo}@{netloc}"
    return netloc


def _port(scheme: str, text: str) -> int | None:
    """The port a URL names, None for none or the scheme's default."""
    if not text:
        return None
    if not (text.isascii() and text.isdigit()) or int(text) > 65535:
        raise UnsupportedURL(f"invalid port {text!r}")
    port = int(text)
    return None if port == DEFAULT_PORTS[scheme] else port


def normalize_host(host: str) -> str:
    """A URL host as it goes on the wire: IPv6 bracketed, numeric IPv4 dotted, names IDNA."""
    if not host:
        raise UnsupportedURL("URL has no host")
    if ":" in host:
        try:
            return f"[{ipaddress.IPv6Address(host.strip('[]').split('%')[0]).compressed}]"
        except ValueError:
            raise UnsupportedURL(f"invalid IPv6 host {host!r}") from None
    if not host.isascii():
        try:
            host = idna.encode(host, uts46=True).decode("ascii")
        except idna.IDNAError as exc:
            raise UnsupportedURL(f"invalid international host {host!r}: {exc}") from None
    host = host.lower()
    numeric = numeric_ipv4(host)
    if numeric is not None:
        return str(numeric)
    if _LAST_NUMBER.fullmatch(host.removesuffix(".").rpartition(".")[2]):
        raise UnsupportedURL(f"host {host!r} ends in a number but is no IPv4 address")
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
    """Drop tabs/newlines, strip edges, read backslashes as slashes before the query."""
    if "\t" in url or "\n" in url or "\r" in url:
        url = url.translate(_REMOVED)
    url = url.strip(_EDGES)
    if "\\" in url:
        cut = min((i for i in (url.find("?"), url.find("#")) if i >= 0), default=len(url))
        url = url[:cut].replace("\\", "/") + url[cut:]
    return url


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


def redact_data(value: Any) -> Any:
    """A JSON-like value (a unit's params) with every string in it masked by
    ``redact_text``; for showing, never for sending."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {k: redact_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_data(v) for v in value]
    return value


def url_origin(url: str) -> str:
    """``scheme://host[:port]`` of ``url``, for endpoints whose path or query is the
    secret (a chat webhook); ``(unparseable URL)`` when it has none."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "(unparseable URL)"
    if not parts.scheme or not parts.hostname:
        return "(unparseable URL)"
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}" + (f":{port}" if port is not None else "")


def secret_free(exc: BaseException) -> bool:
    """True when no message a traceback of ``exc``'s chain would print holds a credential:
    only then may a masked error be raised ``from exc``."""
    seen: BaseException | None = exc
    for _ in range(16):
        if seen is None:
            return True
        if redact_text(str(seen)) != str(seen):
            return False
        seen = seen.__cause__ or seen.__context__
    return False


def _mask_userinfo(match: re.Match[str]) -> str:
    user, colon, _ = match["userinfo"].partition(":")
    masked = f"{user}:***" if colon else "***"
    return f"{match['scheme']}{masked}@"
