"""Request and item fingerprints: the keys of the dedup store.

Pure functions. A fingerprint is a 16-byte BLAKE2b digest: 128 bits keep the
chance that two of a trillion distinct requests share one below 1e-14, and
BLAKE2b is faster than SHA-1 in CPython. Every part is length-framed before it
is hashed, so ``("ab", "c")`` and ``("a", "bc")`` never collide by concatenation.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from w3lib.url import canonicalize_url

DIGEST_SIZE = 16
_DEFAULT_PORTS = {"http": ":80", "https": ":443"}


def canonical_url(url: str, keep_query_order: bool = False) -> str:
    """The URL a server would treat as the same resource, as one string.

    w3lib lower-cases scheme and host, IDNA-encodes the host, normalises
    percent-encoding and dot segments, drops the fragment and sorts the query;
    this adds dropping the scheme's default port. Sorting is skipped when
    ``keep_query_order`` is set, for sites whose parameters mean different
    things in a different order.
    """
    canonical = canonicalize_url(url, keep_blank_values=True, keep_fragments=False)
    parts = urlsplit(canonical)
    if keep_query_order:
        parts = parts._replace(query=_ordered_query(url))
    default_port = _DEFAULT_PORTS.get(parts.scheme)
    if default_port and parts.netloc.endswith(default_port):
        parts = parts._replace(netloc=parts.netloc.removesuffix(default_port))
    return urlunsplit(parts)


def _ordered_query(url: str) -> str:
    """The query normalised pair by pair, in its original order."""
    pairs = (pair for pair in urlsplit(url).query.split("&") if pair)
    return "&".join(urlsplit(canonicalize_url(f"http://h/?{pair}")).query for pair in pairs)


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
