"""Who may call the API, and from where: one token, and no state change from another site.

* **The token.** A script sends ``Authorization: Bearer <API_TOKEN>``. A browser signs
  in once on the console's login page; the server then sets a session cookie
  (``HttpOnly``, ``SameSite=Strict``) whose value is derived from the token, so the
  token itself never sits in the browser. Both are compared in constant time
  (``hmac.compare_digest``). Anything else is a 401.
* **Cross-site requests.** Every state-changing call is a POST, and a POST is refused
  (403) when the browser says it comes from another site: a ``Sec-Fetch-Site`` of
  ``cross-site`` or ``same-site``, or an ``Origin`` that is neither the server's own
  nor one of ``API_ALLOWED_ORIGINS``. A POST signed by the session cookie must also
  carry the console's CSRF token (the ``csrf`` form field or an ``X-CSRF-Token``
  header), derived from the token too. A script's bearer-token POST sends no Origin
  and no cookie: it is not a browser request, and needs no CSRF token (a page on
  another site cannot read the token to send it, and this server answers no CORS
  preflight).
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from typing import Literal
from urllib.parse import parse_qs, urlsplit

from fastapi import Request, status
from fastapi.responses import JSONResponse, RedirectResponse, Response

SESSION_COOKIE = "crawlchain_session"
CSRF_HEADER = "x-csrf-token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass(frozen=True)
class Keys:
    """The token and what is derived from it: the session cookie's value, the CSRF token."""

    token: str
    allowed_origins: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if len(self.token) < 16:
            raise ValueError("API_TOKEN must be at least 16 characters: ./control.sh start api "
                             "writes a random one into the cluster's env file")

    def _derive(self, purpose: str) -> str:
        return hmac.new(self.token.encode(), purpose.encode(), hashlib.sha256).hexdigest()

    @property
    def session(self) -> str:
        return self._derive("console session")

    @property
    def csrf(self) -> str:
        return self._derive("console csrf")

    def token_matches(self, given: str) -> bool:
        return hmac.compare_digest(given.encode(), self.token.encode())

    def session_matches(self, given: str) -> bool:
        return hmac.compare_digest(given.encode(), self.session.encode())

    def csrf_matches(self, given: str) -> bool:
        return hmac.compare_digest(given.encode(), self.csrf.encode())


Principal = Literal["bearer", "session"]


def keys_of(request: Request) -> Keys:
    keys: Keys = request.app.state.keys
    return keys


def principal(request: Request) -> Principal | None:
    """How the request proved it knows the token, or None."""
    keys = keys_of(request)
    scheme, _, credentials = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and keys.token_matches(credentials.strip()):
        return "bearer"
    cookie = request.cookies.get(SESSION_COOKIE)
    if cookie and keys.session_matches(cookie):
        return "session"
    return None


PUBLIC = frozenset({"/", "/console/login"})  # the sign-in page, and the way to it
PUBLIC_PREFIXES = ("/console/static/",)  # the console's committed CSS and script


async def guard(request: Request) -> Response | None:
    """Every request's check, before its route reads a byte of the body: the refusal to
    answer, or None to go on. Without the token: 401 (a console page: the sign-in page
    instead). A state-changing request from another site, or a session's without the
    CSRF token: 403. The sign-in form is public, but not from another site."""
    path, method = request.url.path, request.method
    if path in PUBLIC or path.startswith(PUBLIC_PREFIXES):
        why = cross_site(request) if method not in SAFE_METHODS else None
        return None if why is None else refused(why)
    found = principal(request)
    if found is None:
        if method in SAFE_METHODS and path.startswith("/console"):
            return RedirectResponse("/console/login", status.HTTP_303_SEE_OTHER)
        return JSONResponse({"detail": "a token is required: send 'Authorization: Bearer "
                                       "<API_TOKEN>' (API_TOKEN is in the cluster's env file)"},
                            status.HTTP_401_UNAUTHORIZED, {"WWW-Authenticate": "Bearer"})
    request.state.principal = found
    if method in SAFE_METHODS:
        return None
    why = cross_site(request)
    if why is None and found == "session":
        given = request.headers.get(CSRF_HEADER) or (await form(request)).get("csrf")
        if not given or not keys_of(request).csrf_matches(given):
            why = "the console's CSRF token is missing or wrong; reload the page"
    return None if why is None else refused(why)


def refused(why: str) -> Response:
    return JSONResponse({"detail": f"cross-site request refused: {why}"},
                        status.HTTP_403_FORBIDDEN)


def cross_site(request: Request) -> str | None:
    """Why the browser's own headers say the request comes from another site, or None."""
    fetch_site = request.headers.get("sec-fetch-site", "").lower()
    if fetch_site in ("cross-site", "same-site"):
        return f"Sec-Fetch-Site is {fetch_site}"
    origin = request.headers.get("origin")
    if origin is None:
        return None
    if origin == "null" or (origin != own_origin(request)
                            and origin not in keys_of(request).allowed_origins):
        return f"Origin {origin} is not this server's"
    return None


def own_origin(request: Request) -> str:
    """``scheme://host[:port]`` as the client addressed this server (its Host header)."""
    host = request.headers.get("host") or urlsplit(str(request.base_url)).netloc
    return f"{request.url.scheme}://{host}"


async def form(request: Request) -> dict[str, str]:
    """An ``application/x-www-form-urlencoded`` body as a dict (its first value per name);
    read once, kept on the request."""
    cached: dict[str, str] | None = getattr(request.state, "form", None)
    if cached is None:
        cached = {}
        if request.headers.get("content-type", "").startswith(
                "application/x-www-form-urlencoded"):
            body = (await request.body()).decode("utf-8", "replace")
            cached = {k: v[0] for k, v in parse_qs(body, keep_blank_values=True).items()}
        request.state.form = cached
    return cached
