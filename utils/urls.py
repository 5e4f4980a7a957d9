"""URLs as a crawler meets them: links in pages, numeric hosts, secrets in log lines.

One rule turns an href found on a page, with the page's URL as base, into the
URL to fetch: ``fetch_url(href, base)`` (None when there is nothing to fetch)
and its strict form ``normalize_url`` (raises ``UnsupportedURL`` naming why, a
``ValueError``, so a pydantic validator turns it into ``InvalidParams``).
``utils.fingerprint.canonical_url`` starts from the same URL, so the link a
parser follows, the URL fetched and the key dedup keeps cannot drift apart.

The rule is the WHATWG URL standard, as browsers join links, by ada (``ada-url``,
the parser inside Node.js); the web-platform-tests URL suite is run against it
(``tests/utils/test_urls_whatwg.py``). What a browser does, this does: tabs and
newlines removed, edges trimmed, backslashes read as slashes, dot segments (and
``%2e``) resolved, scheme and host lower-cased, IDN hosts in punycode, numeric
IPv4 hosts dotted, the default port dropped, an empty password dropped
(``a:@`` is ``a@``), what must be percent-encoded encoded as UTF-8; existing
escapes are never decoded nor re-cased (``%2F`` stays distinct from ``/``) and
the query keeps its order. A lone surrogate (a JSON API can send one) becomes
U+FFFD, as a browser's USVString makes it.

On top of the standard, a crawler's own refusals, each deliberate:

- only http(s) is fetched: ``javascript:``, ``mailto:``, ``data:``, ``tel:`` and
  other schemes give None ("drop"), as does what a browser cannot parse;
- the fragment is dropped (it never reaches the server);
- a host must be a name DNS can hold: labels of letters, digits, ``-`` and
  ``_``, none empty, an ``xn--`` label valid punycode. A browser accepts
  ``http://a..b/`` or ``http://!$&/``; no lookup of one can succeed, so it is
  refused at once instead of retried as a network error.

The normalisations only dedup needs (escape case, unreserved escapes decoded,
query arguments sorted) live in ``utils.fingerprint.canonical_url``.

``redact_url`` / ``redact_text`` mask credentials (``user:***@``) and secret
query values in URLs before they reach a log line or an error message;
``redact_data`` does it to every string of a unit's params before a view shows them.
"""

from __future__ import annotations

import ipaddress
import re
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

from ada_url import HostType, idna_to_ascii, idna_to_unicode, join_url, parse_url
from ada_url import normalize_url as whatwg_url

_CRAWLABLE = ("http://", "https://")
_EDGES = "".join(chr(c) for c in range(0x21))  # C0 controls and space, trimmed by WHATWG
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_DNS_NAME = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*\.?")
_NOT_IN_HOST = frozenset("/?#@\\")


class UnsupportedURL(ValueError):
    """The string is not an http(s) URL a crawler can fetch; the message says why."""


def fetch_url(href: str, base: str | None = None) -> str | None:
    """The http(s) URL to fetch for ``href`` found on page ``base``, or None to drop it.

    None for ``javascript:``, ``mailto:``, ``tel:``, ``data:`` and other non-http
    schemes, and hrefs a browser could not resolve (bad host or port). An empty
    href, like ``#top``, is the page itself. ``[u for h in hrefs if (u :=
    fetch_url(h, page_url))]`` is a page's links.
    """
    try:
        return normalize_url(href, base)
    except UnsupportedURL:
        return None


def normalize_url(href: str, base: str | None = None) -> str:
    """The URL to fetch for ``href`` (resolved against ``base`` when relative), by the
    rule in the module docstring; ``UnsupportedURL`` says why there is none."""
    text = _usv(href)
    try:
        url = join_url(_usv(base), text) if base is not None else whatwg_url(text)
    except ValueError:
        url = _absolute_despite_base(text, base)
    if not url.startswith(_CRAWLABLE):
        raise UnsupportedURL(f"scheme {url.partition(':')[0]!r} is not http/https")
    url = url.partition("#")[0]
    start = url.index("//") + 2
    _check_authority(url[start:url.index("/", start)])
    return url


def _absolute_despite_base(text: str, base: str | None) -> str:
    """``text`` alone when it is an absolute URL (a base that is no URL does not
    matter then); else ``UnsupportedURL`` saying which of the two is wrong."""
    if base is not None:
        try:
            return whatwg_url(text)
        except ValueError:
            pass
    shown = redact_url(text.strip(_EDGES))
    if not shown:
        raise UnsupportedURL("empty URL with no base: nothing to fetch")
    if _SCHEME.match(shown.replace("\t", "").replace("\n", "").replace("\r", "")):
        raise UnsupportedURL(f"{shown!r} is not a URL a browser can parse: bad host or port")
    if base is None:
        raise UnsupportedURL(f"relative URL {shown!r} has no base to resolve against")
    raise UnsupportedURL(f"{shown!r} does not resolve against base URL "
                         f"{redact_url(base.strip(_EDGES))!r}")


def _usv(text: str) -> str:
    """``text`` with each lone surrogate as U+FFFD, as a browser reads a string into a
    URL (UTF-8 cannot carry a surrogate); the string itself when it has none (most)."""
    if text.isascii():
        return text
    try:
        text.encode()
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


@lru_cache(maxsize=4096)
def _check_authority(authority: str) -> None:
    """``_check_host`` on ``[userinfo@]host[:port]`` as WHATWG writes it; cached, since
    a page's links name a few hosts."""
    host = authority.rpartition("@")[2]
    _check_host(host if host.endswith("]") else host.rpartition(":")[0] or host)


def _check_host(host: str) -> None:
    """Refuse a serialised host DNS cannot hold (see the module docstring). WHATWG
    writes an IPv4 host dotted and refuses a name ending in a number, so a host
    ending in a digit is an address."""
    if host.startswith("[") or host[-1:].isdigit():
        return
    if not _DNS_NAME.fullmatch(host):
        raise UnsupportedURL(f"host {host!r} is no DNS name: a label is empty or holds "
                             "more than letters, digits, '-' and '_'")
    if "xn--" in host:
        for label in host.rstrip(".").split("."):
            if label.startswith("xn--") and not _valid_a_label(label):
                raise UnsupportedURL(f"host {host!r}: label {label!r} is no valid punycode")


@lru_cache(maxsize=1024)
def _valid_a_label(label: str) -> bool:
    """An ``xn--`` label that decodes, and encodes back to itself."""
    decoded = idna_to_unicode(label)
    return decoded != label and idna_to_ascii(decoded) == label.encode()


def normalize_host(host: str) -> str:
    """A URL host as it goes on the wire: IPv6 bracketed, numeric IPv4 dotted, names in
    punycode, by the same rule as ``normalize_url``; ``UnsupportedURL`` says why not."""
    if not host:
        raise UnsupportedURL("URL has no host")
    if ":" in host:
        try:
            return f"[{ipaddress.IPv6Address(host.strip('[]').split('%')[0]).compressed}]"
        except ValueError:
            raise UnsupportedURL(f"invalid IPv6 host {host!r}") from None
    if not _NOT_IN_HOST.isdisjoint(host):
        raise UnsupportedURL(f"invalid host {host!r}")
    try:
        url = whatwg_url(f"http://{_usv(host)}/")
    except ValueError:
        raise UnsupportedURL(f"invalid host {host!r}") from None
    normal = url[len("http://"):-1]
    _check_host(normal)
    return normal


def numeric_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address a numeric host means (``127.1``, ``0x7f.1``, ``0177.0.0.1``,
    ``2130706433``), read as browsers (and ``inet_aton``) read it; None for a name.

    One to four parts, each decimal, octal (leading 0) or hex (0x); the last part
    fills the remaining bytes. A trailing dot is allowed, as in a URL.
    """
    if not host or not _NOT_IN_HOST.isdisjoint(host) or ":" in host:
        return None
    try:
        parts = parse_url(f"http://{_usv(host)}/", attributes=("hostname", "host_type"))
    except ValueError:
        return None
    if parts["host_type"] != HostType.IPV4:
        return None
    return ipaddress.IPv4Address(parts["hostname"])


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
