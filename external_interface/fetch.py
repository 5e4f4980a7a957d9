"""The bounded HTTP fetch every task uses, on top of ``requests``.

Bounds: connect and read timeouts; a wall-clock deadline over the whole fetch,
headers and redirects included (``fetch_transport.Deadline`` shuts the sockets
down when it passes, so a server dripping a byte a second cannot stretch it); a
cap on decoded body bytes (urllib3 >= 2.7 decodes in bounded steps, so a gzip,
deflate, brotli or nested-encoding bomb stops at the cap); a refusal of
unwanted content types after the headers, before any body byte is read;
redirects followed by hand with a hop cap, a scheme check and, with a
``UrlGuard``, the SSRF check on every hop; ``Authorization`` dropped when a
redirect leaves the origin, as ``requests`` does.

Every error is a ``CrawlError`` whose message and ``url`` have credentials
masked (``utils.urls.redact_text``): a proxy URL's password never reaches a
log line or the ledger, and a cause whose text held one is not chained.
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, NoReturn
from urllib.parse import urlsplit

import requests
import urllib3.exceptions

from config import FetchSettings
from exceptions import (
    Banned,
    ClientError,
    CrawlError,
    NetworkError,
    NotFound,
    RateLimited,
    ResponseRejected,
    ServerError,
    SessionExpired,
    UnsafeURL,
)
from external_interface.fetch_transport import (
    BoundedSession,
    Deadline,
    Watchdog,
    bounded_session,
    mount_bounded,
)
from external_interface.url_guard import UrlGuard
from utils.decode import HtmlElement, XmlElement, decode_body, header_charset, parse_html, parse_xml
from utils.urls import UnsupportedURL, absolute_url, redact_text, redact_url

ALLOWED_SCHEMES = frozenset({"http", "https"})
REDIRECTS = frozenset({301, 302, 303, 307, 308})
CHUNK = 64 * 1024
HTML_TYPES = ("text/html", "application/xhtml+xml")
XML_TYPES = ("application/xml", "text/xml", "application/rss+xml", "application/atom+xml")
JSON_TYPES = ("application/json", "text/json", "application/*+json")
_ORIGIN_HEADERS = ("authorization", "proxy-authorization")
_MALFORMED = (requests.exceptions.InvalidURL, requests.exceptions.InvalidSchema,
              requests.exceptions.MissingSchema, ValueError)  # a bad URL, proxy URL or header
_READ_ERRORS = (requests.RequestException, urllib3.exceptions.HTTPError, OSError)


@dataclass(frozen=True)
class Request:
    """What a step's ``build_request`` returns; providers transform it before the fetch.

    ``accept_types``: media types the step can parse (``text/html``, ``text/*``,
    ``application/*+json``). A 2xx response of another declared type is refused
    once its headers arrive, unread; one with no Content-Type is let through.
    Empty (the default) accepts anything.

    ``meta``: values for the providers, never sent (like Scrapy's ``Request.meta``):
    a login step puts the captcha image there for the captcha provider to solve.
    """

    url: str
    method: str = "GET"
    params: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    cookies: dict[str, str] = field(default_factory=dict)
    data: bytes | None = None
    proxy: str | None = None
    accept_types: tuple[str, ...] = ()
    meta: dict[str, str] = field(default_factory=dict)

    def with_headers(self, **headers: str) -> Request:
        return replace(self, headers={**self.headers, **headers})


@dataclass(frozen=True)
class Response:
    """A fully read, size-capped response. ``encoding`` is the charset the server
    declared (None if it declared none); ``text`` decodes without trusting it blindly."""

    url: str
    status: int
    headers: dict[str, str]
    body: bytes
    encoding: str | None = None
    elapsed_s: float = 0.0

    def header(self, name: str) -> str | None:
        """A header's value, whatever the case of its name."""
        wanted = name.lower()
        return next((v for k, v in self.headers.items() if k.lower() == wanted), None)

    @property
    def content_type(self) -> str:
        """The media type, lower-case, without parameters ("" when absent)."""
        return (self.header("content-type") or "").split(";")[0].strip().lower()

    @cached_property
    def text(self) -> str:
        return decode_body(self.body, self.header("content-type"), declared=self.encoding).text

    def json(self) -> Any:
        return json.loads(self.body)

    def html(self) -> HtmlElement:
        """The page as an lxml tree (see ``utils.decode.parse_html``)."""
        return parse_html(self.text, base_url=self.url)

    def xml(self) -> XmlElement:
        """The body as an XML tree, entities unexpanded (see ``utils.decode.parse_xml``)."""
        return parse_xml(self.body, base_url=self.url)


class Fetcher:
    """One ``requests.Session`` per process with keep-alive; bounds from ``FetchSettings``.

    ``guard`` turns the SSRF check on (every hop, at connect time). A given
    ``session`` (a ``BoundedSession``, see why there) gets guarded adapters if asked.
    """

    def __init__(self, settings: FetchSettings, session: BoundedSession | None = None,
                 guard: UrlGuard | None = None) -> None:
        self.settings = settings
        self.guard = guard
        self.watchdog = Watchdog()
        self.session = session or bounded_session(guard)
        if session is not None and guard is not None:
            mount_bounded(session, guard)

    def fetch(self, request: Request) -> Response:
        """Fetch, following redirects; raise the classified error for a bad outcome."""
        response = self.fetch_raw(request)
        raise_for_status(response)
        return response

    def fetch_raw(self, request: Request) -> Response:
        """Fetch within every bound but without judging the status."""
        with Deadline(self.settings.deadline_s, self.watchdog) as deadline:
            return self._follow(request, deadline, time.monotonic())

    def _follow(self, request: Request, deadline: Deadline, started: float) -> Response:
        hop = request
        for _ in range(self.settings.max_redirects + 1):
            self._check_url(hop)
            raw = self._send(hop, deadline)
            try:
                location = raw.headers.get("location")
                if raw.status_code not in REDIRECTS or location is None:
                    return self._read(raw, hop, deadline, started)
                hop = _next_hop(hop, raw, location)
            finally:
                raw.close()
        raise ResponseRejected(f"more than {self.settings.max_redirects} redirects",
                               url=redact_url(request.url))

    def _check_url(self, hop: Request) -> None:
        try:
            scheme = urlsplit(hop.url).scheme.lower()
        except ValueError as exc:  # "http://[bad" and friends
            _raise(ClientError, "malformed URL", exc, hop.url)
        if scheme not in ALLOWED_SCHEMES:
            raise ResponseRejected(f"scheme {scheme or '(none)'!r} is not http/https",
                                   url=redact_url(hop.url))
        if self.guard is not None:
            self.guard.check_url(hop.url, resolve=hop.proxy is not None)

    def _send(self, hop: Request, deadline: Deadline) -> requests.Response:
        """Prepare (a bad request is a ``ClientError``), then send within the time left."""
        left = deadline.left()
        if left <= 0:
            raise NetworkError("fetch deadline passed before the request", url=redact_url(hop.url))
        try:
            prepared = self.session.prepare_request(requests.Request(
                hop.method, hop.url, params=hop.params or None, headers=hop.headers,
                cookies=hop.cookies, data=hop.data))
        except (requests.RequestException, ValueError) as exc:
            _raise(ClientError, "request cannot be built", exc, hop.url)
        proxies = {"http": hop.proxy, "https": hop.proxy} if hop.proxy else {}
        timeout = (min(self.settings.connect_timeout_s, left),
                   min(self.settings.read_timeout_s, left))
        try:
            return self.session.send(prepared, timeout=timeout, allow_redirects=False,
                                     **self.session.merge_environment_settings(
                                         prepared.url, proxies, True, None, None))
        except UnsafeURL as exc:
            raise UnsafeURL(str(exc), url=redact_url(hop.url)) from None
        except requests.exceptions.InvalidHeader as exc:
            _raise(ResponseRejected, "response headers are invalid", exc, hop.url)
        except _MALFORMED as exc:
            _raise(ClientError, "request cannot be sent", exc, hop.url)
        except _READ_ERRORS as exc:
            what = "fetch deadline passed" if deadline.expired else "request failed"
            _raise(NetworkError, what, exc, hop.url)

    def _read(self, raw: requests.Response, hop: Request, deadline: Deadline,
              started: float) -> Response:
        if 200 <= raw.status_code < 300:
            _check_type(raw, hop.accept_types)
        body = _read_capped(raw, self.settings.max_body_bytes, deadline)
        return Response(raw.url, raw.status_code, dict(raw.headers), body,
                        header_charset(raw.headers.get("content-type")),
                        time.monotonic() - started)


def _raise(kind: type[CrawlError], what: str, exc: BaseException, url: str,
           status: int | None = None) -> NoReturn:
    """Raise ``kind`` with credentials masked, chained to ``exc`` only if none was in it."""
    error = kind(redact_text(f"{what}: {type(exc).__name__}: {exc}"),
                 url=redact_url(url), status=status)
    raise error from (exc if _clean_chain(exc) else None)


def _clean_chain(exc: BaseException) -> bool:
    """True when no message a traceback of ``exc``'s chain would print holds a credential."""
    seen: BaseException | None = exc
    for _ in range(16):
        if seen is None:
            return True
        if redact_text(str(seen)) != str(seen):
            return False
        seen = seen.__cause__ or seen.__context__
    return False


def _next_hop(hop: Request, raw: requests.Response, location: str) -> Request:
    """The request for a redirect's target: method per RFC 9110, origin-bound headers
    dropped when the origin changes, query params already in the URL."""
    with contextlib.suppress(UnicodeError):  # raw UTF-8 in the header, read as latin-1
        location = location.encode("latin-1").decode("utf-8")
    try:
        url = absolute_url(raw.url, location)
    except UnsupportedURL as exc:
        raise ResponseRejected(f"redirect refused: {redact_text(str(exc))}",
                               url=redact_url(raw.url), status=raw.status_code) from None
    method, data = hop.method, hop.data
    if raw.status_code == 303 or (raw.status_code in (301, 302) and method == "POST"):
        method, data = "GET", None
    headers = hop.headers
    if _origin(url) != _origin(raw.url):
        headers = {k: v for k, v in headers.items() if k.lower() not in _ORIGIN_HEADERS}
    return replace(hop, url=url, method=method, data=data, params={}, headers=headers)


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    return parts.scheme, parts.hostname or "", parts.port


def _check_type(raw: requests.Response, accept: tuple[str, ...]) -> None:
    """Refuse a declared media type the step cannot use, before reading the body."""
    declared = raw.headers.get("content-type", "").split(";")[0].strip().lower()
    if not accept or not declared or any(_type_matches(declared, a) for a in accept):
        return
    raise ResponseRejected(f"content type {declared!r} is not one of {', '.join(accept)}",
                           url=redact_url(raw.url), status=raw.status_code)


def _type_matches(declared: str, pattern: str) -> bool:
    kind, _, sub = declared.partition("/")
    want_kind, _, want_sub = pattern.lower().partition("/")
    if want_kind not in ("*", kind):
        return False
    if want_sub.startswith("*+"):  # application/*+json matches application/ld+json
        return sub == want_sub[2:] or sub.endswith(want_sub[1:])
    return want_sub in ("*", sub)


def _read_capped(raw: requests.Response, cap: int, deadline: Deadline) -> bytes:
    """Read the decoded body, stopping at ``cap`` bytes and at the deadline."""
    url, status = redact_url(raw.url), raw.status_code
    declared = raw.headers.get("content-length", "")
    if declared.isdigit() and "content-encoding" not in raw.headers and int(declared) > cap:
        raise ResponseRejected(f"Content-Length {declared} exceeds the cap of {cap} bytes",
                               url=url, status=status)
    chunks: list[bytes] = []
    size = 0
    try:
        while chunk := _read_some(raw.raw, cap + 1 - size, deadline, url):
            chunks.append(chunk)
            size += len(chunk)
            if size > cap:
                raise ResponseRejected(f"body exceeds the cap of {cap} decoded bytes",
                                       url=url, status=status)
    except urllib3.exceptions.DecodeError as exc:
        _raise(ResponseRejected, "body does not decode as its Content-Encoding says",
                     exc, raw.url, status)
    except (*_READ_ERRORS, ValueError) as exc:
        what = "fetch deadline passed" if deadline.expired else "body broken off"
        _raise(NetworkError, what, exc, raw.url)
    return b"".join(chunks)


def _read_some(stream: Any, want: int, deadline: Deadline, url: str) -> bytes:
    left = deadline.left()
    if left <= 0 or deadline.expired:
        raise NetworkError("fetch deadline passed while reading the body", url=url)
    _set_read_timeout(stream, left)
    return stream.read1(min(CHUNK, want), decode_content=True)


def _set_read_timeout(stream: Any, seconds: float) -> None:
    """Shorten the socket's read timeout to the time left before the deadline."""
    sock = getattr(getattr(stream, "connection", None), "sock", None)
    if sock is not None and sock.gettimeout() is not None and sock.gettimeout() > seconds:
        sock.settimeout(seconds)


def raise_for_status(response: Response) -> None:
    """Turn a status into the error branch that says what to do."""
    status, url = response.status, redact_url(response.url)
    if status < 400:
        return
    if status == 429:
        raise RateLimited("429 Too Many Requests", url=url, status=status,
                          retry_after=parse_retry_after(response.header("Retry-After")))
    if status >= 500:
        raise ServerError(f"{status} from server", url=url, status=status)
    if status == 401:
        raise SessionExpired("401 Unauthorized", url=url, status=status)
    if status == 403:
        raise Banned("403 Forbidden", url=url, status=status)
    if status in (404, 410):
        raise NotFound(f"{status} Not Found", url=url, status=status)
    raise ClientError(f"{status} client error", url=url, status=status)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or HTTP date); None if absent/bad."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    from email.utils import parsedate_to_datetime

    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None
