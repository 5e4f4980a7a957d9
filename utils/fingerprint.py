"""Request and item fingerprints: the keys of the dedup store.

Pure functions. A fingerprint is a 16-byte BLAKE2b digest: 128 bits keep the
chance that two of a trillion distinct requests share one below 1e-14, and
BLAKE2b is faster than SHA-1 in CPython. Every part is length-framed before it
is hashed, so ``("ab", "c")`` and ``("a", "bc")`` never collide by concatenation.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from utils.urls import UnsupportedURL, normalize_url

DIGEST_SIZE = 16
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_RAW = re.compile(r"[\[\]|^`{}\\\"<> ]")  # never raw in RFC 3986; WHATWG leaves some raw
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def canonical_url(url: str, keep_query_order: bool = False) -> str:
    """The URL a server would treat as the same resource, as one string: the URL to
    fetch (``utils.urls.normalize_url``: WHATWG resolution, default port, IDNA host,
    empty password and fragment dropped), then the forms RFC 3986 calls equivalent:

    - escapes upper-cased (``%2f`` is ``%2F``) and unreserved ones decoded (``%7E``
      is ``~``), as RFC 3986 section 6.2.2 allows; reserved ones never (``%2F``
      stays distinct from ``/``);
    - what RFC 3986 never allows raw but a browser leaves raw (``|``, ``^``, ``[``,
      ``]``, ``{``, ``}``, a backquote, a backslash in the query) percent-encoded, so
      ``/a|b`` and ``/a%7Cb``, one page to every server, share a key, as they do for
      Scrapy's ``canonicalize_url``;
    - in the query, ``%20`` is ``+``, ``a`` is ``a=``, empty pairs go, and the
      arguments are sorted by name, stably: the values of a repeated name keep their
      order (``?a=1&a=2`` is a list to PHP, Rails and Django). No sorting when
      ``keep_query_order`` is set, for sites whose arguments mean different things
      in a different order.

    A URL the rule refuses keeps its own spelling (edges trimmed): it still has a
    key, and the fetch reports why it cannot be fetched.
    """
    try:
        fetchable = _encode_raw(normalize_url(url))
    except UnsupportedURL:
        fetchable = url.strip()
    head, _, query = fetchable.partition("?")
    if "%" in head:
        head = _ESCAPE.sub(_escape, head)
    query = _canonical_query(query, keep_query_order) if query else ""
    return f"{head}?{query}" if query else head


def _encode_raw(url: str) -> str:
    """The path and query of a WHATWG URL with the characters in ``_RAW`` escaped; the
    host is left alone (an IPv6 host is bracketed)."""
    path_start = url.index("/", url.index("//") + 2)
    rest = url[path_start:]
    if _RAW.search(rest) is None:  # most URLs
        return url
    return url[:path_start] + _RAW.sub(lambda m: f"%{ord(m[0]):02X}", rest)


def _canonical_query(query: str, keep_order: bool) -> str:
    if "%" in query:
        query = _ESCAPE.sub(_escape, query).replace("%20", "+")
    pairs = [pair if "=" in pair else pair + "=" for pair in query.split("&") if pair]
    if not keep_order:
        pairs.sort(key=lambda pair: pair.partition("=")[0])
    return "&".join(pairs)


def _escape(match: re.Match[str]) -> str:
    char = chr(int(match[1], 16))
    return char if char in _UNRESERVED else "%" + match[1].upper()


def request_fingerprint(
    method: str,
    url: str,
    body: bytes | str = b"",
    headers: Mapping[str, str] | None = None,
    header_names: Iterable[str] = (),
    keep_query_order: bool = False,
) -> bytes:
    """The identity of an HTTP request: method, canonical URL, body and chosen headers.

    Only the headers named in ``header_names`` count (case-insensitive), since
    most headers (user agent, cookies) vary between fetches of the same resource.
    A chosen header that is absent differs from one that is present but empty.
    """
    lowered = {name.lower(): value for name, value in (headers or {}).items()}
    chosen = sorted({name.lower() for name in header_names})
    header_part = json.dumps([[name, lowered.get(name)] for name in chosen])
    return _digest(
        method.upper().encode(),
        canonical_url(url, keep_query_order).encode(),
        body.encode() if isinstance(body, str) else body,
        header_part.encode(),
    )


def id_fingerprint(
    site: str, step: str, natural_id: str | int, fields: Mapping[str, Any] | None = None
) -> bytes:
    """The identity of an API-style unit whose URL is not its identity.

    ``fields`` are the data fields that also distinguish units (a page size, a
    region); they are hashed as sorted JSON, so their order does not matter.
    """
    data = json.dumps(fields or {}, sort_keys=True, separators=(",", ":"), default=str)
    return _digest(site.encode(), step.encode(), str(natural_id).encode(), data.encode())


def _digest(*parts: bytes) -> bytes:
    """BLAKE2b over the length-framed parts."""
    hasher = hashlib.blake2b(digest_size=DIGEST_SIZE)
    for part in parts:
        hasher.update(len(part).to_bytes(8, "big"))
        hasher.update(part)
    return hasher.digest()
