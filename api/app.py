"""The server: the job API under ``/api``, the console under ``/console``, one token.

``create_app`` takes what it serves (a ``Cluster``, the runtime's door) and the token's
``Keys``; ``python -m api`` builds both from the settings. Every request passes
``security.guard`` first, before any route reads its body. Errors become JSON a script
can read: 401 without the token, 403 cross-site, 404 an unknown job, 409 a verb the
job's state refuses, 422 a launch refused, with ``loc`` naming the field at fault.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request, status
from fastapi.responses import JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles

from api import console, jobs, workers
from api.runtime import Cluster, JobStateError, LaunchError, UnknownJob
from api.security import Keys, guard
from utils.urls import redact_text

STATIC = Path(__file__).resolve().parent / "static"
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
                               "frame-ancestors 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
}
Next = Callable[[Request], Awaitable[Response]]


def create_app(cluster: Cluster, keys: Keys) -> FastAPI:
    app = FastAPI(title="crawlchain", summary="Launch, follow and operate crawl jobs.",
                  version="1", openapi_url=None, docs_url=None, redoc_url=None)
    app.state.cluster = cluster
    app.state.keys = keys
    for router in (jobs.router, workers.router, console.pages):
        app.include_router(router)
    app.mount("/console/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/api/openapi.json", include_in_schema=False)
    def openapi() -> dict[str, Any]:
        """The schema, built from the models, with the bearer token every call needs."""
        schema = app.openapi()
        schema.setdefault("components", {})["securitySchemes"] = {
            "token": {"type": "http", "scheme": "bearer",
                      "description": "API_TOKEN from the cluster's env file"}}
        schema["security"] = [{"token": []}]
        return schema

    @app.get("/", include_in_schema=False)
    def home() -> Response:
        return RedirectResponse("/console/", status.HTTP_303_SEE_OTHER)

    app.add_exception_handler(UnknownJob, _answer(status.HTTP_404_NOT_FOUND))
    app.add_exception_handler(JobStateError, _answer(status.HTTP_409_CONFLICT))
    app.add_exception_handler(LaunchError, _launch_refused)
    app.middleware("http")(_guarded)
    app.middleware("http")(_headers)  # added last: outermost, so refusals get them too
    return app


async def _guarded(request: Request, call_next: Next) -> Response:
    refusal = await guard(request)
    return refusal if refusal is not None else await call_next(request)


def _answer(code: int) -> Callable[[Request, Exception], Awaitable[Response]]:
    async def handler(request: Request, exc: Exception) -> Response:
        return JSONResponse({"detail": redact_text(str(exc))}, status_code=code)
    return handler


async def _launch_refused(request: Request, exc: Exception) -> Response:
    """A refused launch in FastAPI's validation shape, ``loc`` naming the field."""
    assert isinstance(exc, LaunchError)
    return JSONResponse({"detail": [{"loc": ["body", *exc.field.split(".")],
                                     "msg": redact_text(str(exc)), "type": "launch_refused"}]},
                        status_code=status.HTTP_422_UNPROCESSABLE_CONTENT)


async def _headers(request: Request, call_next: Next) -> Response:
    answer = await call_next(request)
    for name, value in SECURITY_HEADERS.items():
        answer.headers.setdefault(name, value)
    if not request.url.path.startswith("/console/static/"):
        answer.headers.setdefault("Cache-Control", "no-store")  # live numbers, never stale
    return answer
