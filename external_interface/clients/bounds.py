"""What every fetch client keeps, written once: the redirect policy and its hop checks,
the content-type gate, the cap on decoded bytes, the request as ``Request`` says it,
and errors with their secrets masked.

``BoundedClient`` is the loop every client runs under one wall-clock ``Deadline``:

    for each hop (at most FETCH_MAX_REDIRECTS redirects):
        the job's allowed domains (``OffSite``)           (here, before anything is sent)
        sent = self._send(hop, url, deadline)             the request out, the head in:
                                                          first ``_check_url`` (http/https
                                                          only, the SSRF guard on the
                                                          URL's own host), shared
        a redirect: the next hop by ``next_hop``          (here: RFC 9110's method rules,
                                                           origin-bound headers dropped)
        else: self._read(sent, ...) -> Response           the body, under the cap

A client writes ``_send`` and ``_read`` and calls the checks below at the point its
library allows: ``check_head`` once the head is in and before any body byte is taken,
``over_cap`` as decoded bytes arrive, ``raise_masked`` for every error its libraries
raise. ``http`` pulls the body after the head; ``impersonate`` (curl) is handed the
head and the body in callbacks during one call, so its ``_send`` reads the whole hop
under the same checks and its ``_read`` only assembles the response.

Requests go out as ``Request`` says, nothing carried over from one fetch to the next:
``params`` urlencoded onto the URL, ``cookies`` as one Cookie header (an explicit one
wins), credentials in the URL as Basic auth, the proxy from ``Request.proxy`` only.
``Authorization`` and ``Proxy-Authorization`` are dropped when a redirect leaves the
origin, cookies when it leaves the host.

Every error is a ``CrawlError`` whose message and ``url`` have credentials masked
(``utils.urls.redact_text``): a proxy URL's password never reaches a log line or the
ledger, and a cause whose text held one is not chained. What a client's libraries
raise that its own mapping did not name (``library_errors``) ends as a ``NetworkError``
saying what it was, so no exception of a library ever escapes a fetch.
"""

from __future__ import annotations

import base64
import contextlib
import functools
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar, Generic, NoReturn, Protocol, TypeVar
from urllib.parse import SplitResult, unquote, urlsplit

from urllib3 import HTTPHeaderDict

from exceptions import (
    ClientError,
    CrawlError,
    NetworkError,
    OffSite,
    ResponseRejected,
    TimedOut,
    UnwantedType,
)
from external_interface.clients.http_transport import ConnectTimeout, Deadline
from external_interface.http import Request, Response, media_type_matches
from external_interface.statuses import raise_for_status
from utils.urls import UnsupportedURL, normalize_url, redact_text, redact_url, secret_free

if TYPE_CHECKING:
    from config import FetchSettings
    from external_interface.url_guard import UrlGuard
    from utils.domains import AllowedDomains

ALLOWED_SCHEMES = frozenset({"http", "https"})
REDIRECTS = frozenset({301, 302, 303, 307, 308})
PORTS = {"http": 80, "https": 443}
_ORIGIN_HEADERS = frozenset({"authorization", "proxy-authorization"})
_BODY_HEADERS = frozenset({"content-length", "content-type", "transfer-encoding"})


class Sent(Protocol):
    """A hop's request sent and its response's head in."""

    @property
    def status(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]: ...

    def release(self) -> None:
        """Give the connection back (or close it); the body is not read after this."""
        ...


SentT = TypeVar("SentT", bound=Sent)


class BoundedClient(Generic[SentT]):
    """The fetch loop every client shares; a subclass writes ``_send`` and ``_read`` over
    its own ``Sent`` (what its library hands back once a head is in).

    ``guard`` turns the SSRF check on (every hop, on every connection the client makes);
    ``library_errors``: the exception families the client's libraries raise, the last
    line that keeps them inside the ``CrawlError`` tree.
    """

    name: str
    library_errors: ClassVar[tuple[type[Exception], ...]] = ()

    def __init__(self, settings: FetchSettings, guard: UrlGuard | None = None) -> None:
        self.settings = settings
        self.guard = guard

    def fetch(self, request: Request, allowed: AllowedDomains | None = None) -> Response:
        """``fetch_raw``, then the classified error for a bad status."""
        response = self.fetch_raw(request, allowed)
        raise_for_status(response)
        return response

    def fetch_raw(self, request: Request, allowed: AllowedDomains | None = None) -> Response:
        """Fetch within every bound but without judging the status (``FetchClient``)."""
        with Deadline(self.settings.deadline_s) as deadline:
            try:
                return self._follow(request, deadline, allowed)
            except self.library_errors as exc:  # what the client's own mapping missed
                what = "fetch deadline passed" if deadline.passed else "fetch failed"
                raise_masked(NetworkError, what, exc, request.url)

    def close(self) -> None:
        """Nothing kept: a client with connections closes them."""

    def _follow(self, request: Request, deadline: Deadline,
                allowed: AllowedDomains | None) -> Response:
        hop = request
        for hops in range(self.settings.max_redirects + 1):
            url = hop.full_url
            if allowed and not allowed.allows_url(url):
                raise OffSite(offsite_message(url, allowed, redirected=hops > 0),
                              url=redact_url(url))
            sent = self._send(hop, url, deadline)
            location = sent.headers.get("location")
            if sent.status not in REDIRECTS or location is None:
                return self._read(sent, url, hop.accept_types, deadline)
            try:
                hop = next_hop(hop, url, sent.status, location)
            finally:
                sent.release()  # a redirect's body unread: its connection is closed
        raise ResponseRejected(f"more than {self.settings.max_redirects} redirects",
                               url=redact_url(request.url))

    def _send(self, hop: Request, url: str, deadline: Deadline) -> SentT:
        """Send ``hop`` (to ``url``, its full URL) and read its response's head."""
        raise NotImplementedError

    def _read(self, sent: SentT, url: str, accept: tuple[str, ...],
              deadline: Deadline) -> Response:
        """The response, its body read under the cap, the connection given back."""
        raise NotImplementedError

    def _check_url(self, hop: Request, url: str) -> SplitResult:
        """The URL's parts once it is http/https and the guard lets its host through (a
        literal address; a name is checked where the client connects, or resolved here
        when a proxy will resolve it)."""
        try:
            parts = urlsplit(url)
        except ValueError as exc:  # "http://[bad" and friends
            raise_masked(ClientError, "malformed URL", exc, url)
        if parts.scheme.lower() not in ALLOWED_SCHEMES:
            raise ResponseRejected(f"scheme {parts.scheme or '(none)'!r} is not http/https",
                                   url=redact_url(url))
        if self.guard is not None:
            self.guard.check_url(url, resolve=hop.proxy is not None)
        return parts


def offsite_message(url: str, allowed: AllowedDomains, redirected: bool) -> str:
    host = urlsplit(url).hostname or "(none)"
    how = "a redirect leads to" if redirected else "the request names"
    return f"offsite: {how} host {host!r}, outside {', '.join(allowed.domains)}"


def target(parts: SplitResult, scheme: str, absolute: bool) -> str:
    """The request target: origin form, or absolute form (no credentials) for an http proxy."""
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    if not absolute:
        return path
    return f"{scheme}://{parts.netloc.rpartition('@')[2]}{path}"


def request_headers(hop: Request, parts: SplitResult,
                    defaults: Mapping[str, str]) -> dict[str, str]:
    """``defaults``, then the request's own headers (any case), its cookies and the URL's
    credentials as Basic auth."""
    names = {name.lower() for name in hop.headers}
    headers = {k: v for k, v in defaults.items() if k.lower() not in names} | hop.headers
    if hop.cookies and "cookie" not in names:
        headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in hop.cookies.items())
    if "@" in parts.netloc and "authorization" not in names and (parts.username or parts.password):
        credentials = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
        token = base64.b64encode(credentials.encode("latin-1")).decode()
        headers["Authorization"] = f"Basic {token}"
    return headers


def raise_masked(kind: type[CrawlError], what: str, exc: BaseException, url: str,
                 status: int | None = None) -> NoReturn:
    """Raise ``kind`` with credentials masked, chained to ``exc`` only if none was in it; a
    ``NetworkError`` that is a timeout (or a passed deadline) is raised as ``TimedOut``."""
    if kind is NetworkError and (isinstance(exc, TimeoutError | ConnectTimeout)
                                 or "deadline" in what):
        kind = TimedOut
    error = kind(redact_text(f"{what}: {type(exc).__name__}: {exc}"),
                 url=redact_url(url), status=status)
    raise error from (exc if secret_free(exc) else None)


def next_hop(hop: Request, url: str, status: int, location: str) -> Request:
    """The request for a redirect's target: method per RFC 9110, origin-bound headers
    dropped when the origin changes, cookies when the host does, params already in the URL."""
    with contextlib.suppress(UnicodeError):  # raw UTF-8 in the header, read as latin-1
        location = location.encode("latin-1").decode("utf-8")
    try:
        following = normalize_url(location, url)
    except UnsupportedURL as exc:
        raise ResponseRejected(f"redirect refused: {redact_text(str(exc))}",
                               url=redact_url(url), status=status) from None
    method, data, headers, cookies = hop.method, hop.data, hop.headers, hop.cookies
    if (status == 303 and method != "HEAD") or (status in (301, 302) and method == "POST"):
        method, data, headers = "GET", None, _without(headers, _BODY_HEADERS)
    here, there = urlsplit(url), urlsplit(following)
    if _origin(here) != _origin(there):
        headers = _without(headers, _ORIGIN_HEADERS)
    if here.hostname != there.hostname:
        headers, cookies = _without(headers, frozenset({"cookie"})), {}
    return replace(hop, url=following, method=method, data=data, params={}, headers=headers,
                   cookies=cookies)


def _without(headers: dict[str, str], names: frozenset[str]) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k.lower() not in names}


def _origin(parts: SplitResult) -> tuple[str, str, int | None]:
    return parts.scheme, parts.hostname or "", parts.port


def head_problem(defects: list[str], headers: HTTPHeaderDict) -> str | None:
    """Why a response's head cannot be trusted (lines that are not headers, lengths that
    disagree: a request smuggling trick), or None."""
    if defects:
        return repr(defects[0])
    lengths = {value.strip() for value in headers.getlist("content-length")}
    if len(lengths) > 1:
        return f"conflicting Content-Length values {sorted(lengths)}"
    return None


def check_head(status: int, headers: Mapping[str, str], url: str, accept: tuple[str, ...],
               cap: int) -> None:
    """Refuse, before any body byte is read, a 2xx of a media type the step cannot use
    and a body whose declared length (not encoded) is over the cap."""
    if accept and 200 <= status < 300:
        declared = (headers.get("content-type") or "").split(";")[0].strip().lower()
        if declared and not _accepts(declared, accept):
            raise UnwantedType(
                f"content type {declared!r} is not accepted (accepts {', '.join(accept)}): "
                "refused unread; add it to the request's accept_types to fetch it",
                media_type=declared, url=redact_url(url), status=status)
    length = headers.get("content-length") or ""
    if length.isdigit() and int(length) > cap and not headers.get("content-encoding"):
        raise ResponseRejected(f"Content-Length {length} exceeds the cap of {cap} bytes",
                               url=redact_url(url), status=status)


@functools.lru_cache(maxsize=1024)
def _accepts(declared: str, accept: tuple[str, ...]) -> bool:
    """Whether ``accept`` names media type ``declared`` (a few pairs per crawl: cached)."""
    return any(media_type_matches(declared, a) for a in accept)


def over_cap(cap: int, url: str, status: int) -> ResponseRejected:
    """The error for a body whose decoded bytes passed ``cap``."""
    return ResponseRejected(f"body exceeds the cap of {cap} decoded bytes",
                            url=redact_url(url), status=status)
