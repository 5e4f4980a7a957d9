"""One error tree whose branches say what to do.

    CrawlError
    ├── TransientError          retry with exponential backoff and jitter; carries
    │   │                       ``retry_after`` when the server advised a wait
    │   ├── NetworkError        connect refused, reset, a broken body
    │   │   └── TimedOut        no answer in time: connect/read timeout, deadline passed;
    │   │                       retried at most ``TASK_MAX_TIMEOUT_RETRIES`` times
    │   ├── TryAgain            408, 425: the server asks for the request again later
    │   ├── ServerError         5xx but 501 and 505; a 503 carries ``retry_after``
    │   ├── RateLimited         429; carries ``retry_after``
    │   └── StorageUnavailable  the item store refused the write for now
    ├── RotateError             a resource is burnt: report it, take another, retry;
    │   │                       carries ``resource`` (proxy, cookie, device) when known
    │   ├── Banned              403, captcha interstitial
    │   ├── SessionExpired      401 on a site with a session pool, redirect to login
    │   └── ProxyRefused        407: the proxy refused its credentials (blames the proxy)
    └── PermanentError          give up and record why; never retried
        ├── InvalidParams       the unit's params fail its Input model
        ├── NotFound            404
        │   └── Gone            410
        ├── ClientError         other 4xx; a 401 on a site without a session pool
        ├── NotSupported        501, 505: the server will never serve this request
        ├── ResponseRejected    too large, bad scheme, too many redirects, unwanted type
        ├── OffSite             the request or a redirect leaves the job's allowed domains:
        │                       the unit is skipped (``skip_reason`` "offsite"), not failed
        ├── SkipUnit            a middleware ends the unit as skipped, with its reason
        ├── UnsafeURL           the host is an address the SSRF guard refuses
        ├── ParseError          the page is not what the parser knows
        ├── RotationsSpent      the unit burnt its rotation budget: every resource tried failed
        └── NoResource          no proxy, cookie or device became available in time

    UserError (a ValueError)    what the user gave, or the state the cluster is in, is
    │                           refused before anything runs; one line names the input
    │                           and the fix (the commands exit 2 with it, no traceback)
    ├── ClusterUnreachable      the state Redis or the broker does not answer in time
    └── (the runtime's)         ChainError, LaunchRefused, DeclarationError: a chain, a
                                launch, a site or step declaration

``ResponseRejected`` has one branch of its own: ``UnwantedType``, a content type the step
does not parse, skipped (``skip_reason``) rather than failed, as a crawler that meets a
link to a PDF or a ``.py`` file moves on.

Which status raises which is one table: ``external_interface.statuses.STATUSES``.
Context lives on the exception (``url``, ``status``), never only in the message.
Both are masked as they are set (``utils.urls.redact_text``): whoever raises one,
a site's parser included, no URL password, user token or secret query value
reaches a log line, a failure record or the monitor through it.
"""

from __future__ import annotations

from utils.urls import redact_text, redact_url


class CrawlError(Exception):
    """Base of every error a crawl step raises on purpose."""

    def __init__(self, message: str, *, url: str | None = None, status: int | None = None) -> None:
        super().__init__(redact_text(message))
        self.url = redact_url(url) if url else url
        self.status = status

    @property
    def reason(self) -> str:
        """``ClassName: message``, as recorded in the ledger and dead letters."""
        return f"{type(self).__name__}: {self}"


class TransientError(CrawlError):
    """Worth retrying later, unchanged. ``retry_after``: the server's advice in seconds
    (``Retry-After`` on a 429 or 503), None to leave the wait to the backoff; whoever
    waits caps it (``TASK_BACKOFF_MAX_S`` for the unit, ``POLITE_MAX_PENALTY_S`` for
    the site)."""

    def __init__(self, message: str, *, retry_after: float | None = None, **kw: object) -> None:
        super().__init__(message, **kw)  # type: ignore[arg-type]
        self.retry_after = retry_after


class NetworkError(TransientError):
    """The connection failed, stalled, or the fetch passed its deadline."""


class TimedOut(NetworkError):
    """No answer in time: a connect or read timeout, or the fetch's deadline passed. Retried
    fewer times than other transient errors: a URL that hung once mostly hangs again, and
    each try holds a fetch slot for the whole timeout."""


class TryAgain(TransientError):
    """408 Request Timeout or 425 Too Early: the same request is welcome later."""


class ServerError(TransientError):
    """The server answered 5xx (but 501 and 505, which are ``NotSupported``)."""


class RateLimited(TransientError):
    """The server answered 429; ``retry_after`` is its advice in seconds, if any."""


class StorageUnavailable(TransientError):
    """The item store could not take the write now (locked, down, read-only)."""


class RotateError(CrawlError):
    """A resource (proxy, cookie, device id) is burnt: swap it, then retry.

    ``resource`` names the one to blame when the response said (a site's ban rule);
    None leaves it to the status: 401 blames the cookie, 403 the proxy.
    """

    def __init__(self, message: str, *, resource: str | None = None, **kw: object) -> None:
        super().__init__(message, **kw)  # type: ignore[arg-type]
        self.resource = resource


class Banned(RotateError):
    """403 or a captcha page: the exit or the session is blocked."""


class SessionExpired(RotateError):
    """401 or a redirect to login: the session cookie is no longer valid."""


class ProxyRefused(RotateError):
    """407 Proxy Authentication Required: the proxy refused this request's credentials.
    Another proxy can serve it, so the proxy is blamed (``resource="proxy"``)."""

    def __init__(self, message: str, *, resource: str | None = "proxy", **kw: object) -> None:
        super().__init__(message, resource=resource, **kw)


class PermanentError(CrawlError):
    """Retrying cannot help: record the reason and move on."""


class InvalidParams(PermanentError):
    """The unit's params do not satisfy its step's Input model."""


class NotFound(PermanentError):
    """404 Not Found, or 410 (``Gone``)."""


class Gone(NotFound):
    """410 Gone: the resource was removed for good."""


class ClientError(PermanentError):
    """Another 4xx status: the request itself is wrong."""


class NotSupported(PermanentError):
    """501 Not Implemented or 505 HTTP Version Not Supported: this server will never
    serve the request as it is."""


class ResponseRejected(PermanentError):
    """The response breaks a fetch bound: size, scheme, redirect count, content type."""


class UnsafeURL(PermanentError):
    """The URL's host is (or resolves to) an address the SSRF guard refuses:
    loopback, private, link-local, metadata. Retrying cannot make it public."""


class OffSite(PermanentError):
    """The unit's request, or a redirect it got, leaves the domains its job allows
    (``utils.domains``). Nothing is wrong with the unit: the runtime ends it as
    skipped with ``skip_reason``, as Scrapy's offsite middleware drops a request."""

    skip_reason = "offsite"


class SkipUnit(PermanentError):
    """Raised by a middleware (or a parse) that wants the unit skipped, not failed:
    the runtime ends it ``skipped`` with ``reason`` (``skip_reason``)."""

    def __init__(self, reason: str, **kw: object) -> None:
        super().__init__(reason, **kw)  # type: ignore[arg-type]
        self.skip_reason = reason[:100]


class ParseError(PermanentError):
    """The page does not have the layout the parser expects."""


class RotationsSpent(PermanentError):
    """The unit was rotated onto a fresh resource as often as its budget allows, and the
    last one was burnt too: the site refuses this unit, not just an exit or a session."""


class NoResource(PermanentError):
    """The unit waited for a proxy, cookie or device as often as allowed and none came:
    the pool is empty and its refill (a source, a login chain) is not delivering."""


class UnwantedType(ResponseRejected):
    """The response's content type is not one the step parses (a link to a PDF, an
    image, a ``.py`` file): refused unread, and the unit ends skipped with the type as
    its reason, not failed. Nothing is wrong with the page or the crawl."""

    def __init__(self, message: str, *, media_type: str = "", **kw: object) -> None:
        super().__init__(message, **kw)  # type: ignore[arg-type]
        self.skip_reason = f"type {media_type or 'unwanted'}"[:100]


class UserError(ValueError):
    """What the user gave (a name, a param, a setting, a URL, a file) or the state the
    cluster is in (no Redis, no worker on a queue) is refused before anything runs. The
    message is one line that names the input at fault and the fix; ``field`` names the
    input for a program (``params.page``, ``settings.base_url``, ``chain``). Commands
    print it and exit 2, with no traceback."""

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(redact_text(" ".join(message.split())))
        self.field = field


class ClusterUnreachable(UserError):
    """The state Redis or the broker did not answer within the command's wait
    (``STATE_COMMAND_WAIT_S``): the cluster is not started, or the URL points elsewhere."""
