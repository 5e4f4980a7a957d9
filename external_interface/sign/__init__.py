"""Request signatures: a per-site signer, applied last, after every other transformer.

A signer covers what the request will send (path, params, maybe headers), so it
runs after the user agent, cookie, device id and proxy are set, right before the
fetch, with the current time: a retry is signed again, never replayed stale.
Sites declare theirs (``SiteProviders.signer``); ``signers()`` is the registry.

``HmacSigner`` covers the common scheme (HMAC over the path and the sorted params
plus a timestamp param); a site with another scheme implements ``Signer``.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass, replace
from typing import Protocol, runtime_checkable
from urllib.parse import parse_qsl, urlencode, urlsplit

from external_interface.http import Request


@runtime_checkable
class Signer(Protocol):
    def sign(self, request: Request, now: float) -> Request:
        """The request with its signature added for time ``now`` (epoch seconds). Pure:
        the same request and time give the same signature; nothing else changes."""
        ...


@dataclass(frozen=True)
class HmacSigner:
    """``sign`` = HMAC(key, ``path?k1=v1&k2=v2``) over the URL's own query and ``params``
    with ``ts`` added, sorted; ``ts`` is whole seconds."""

    key: bytes
    digest: str = "sha256"
    sign_param: str = "sign"
    ts_param: str = "ts"

    def sign(self, request: Request, now: float) -> Request:
        params = {**request.params, self.ts_param: str(int(now))}
        parts = urlsplit(request.url)
        signed = dict(parse_qsl(parts.query)) | params
        canonical = parts.path + "?" + urlencode(sorted(
            (k, v) for k, v in signed.items() if k != self.sign_param))
        mac = hmac.new(self.key, canonical.encode(), getattr(hashlib, self.digest))
        return replace(request, params={**params, self.sign_param: mac.hexdigest()})
