"""The web console: server-rendered pages over the same calls as the API.

    /console/login        the token, once; a session cookie from then on
    /console/             the jobs, live
    /console/jobs/{id}    per-step progress, the throughput chart, failure groups with a
                          retry button each, pause / resume / cancel
    /console/sites        each site's rate, window, learnt ceiling, 429s and 5xx
    /console/workers      workers, and queues (one that no worker consumes is flagged)

Every page is whole HTML (it reads without script); ``static/console.js`` fetches the
page's live part again every two seconds (``?part=live``) and swaps it in. The buttons
are forms that POST with the CSRF token and come back to the page (303).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request, status
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates

from api.chart import throughput_svg
from api.jobs import Runtime
from api.runtime import TERMINAL
from api.security import SESSION_COOKIE, form, keys_of

HERE = Path(__file__).resolve().parent
LIVE_EVERY_MS = 2000


pages = APIRouter(prefix="/console", include_in_schema=False)


# -- the templates and their filters ----------------------------------------------------
def when(epoch: float | None) -> str:
    if not epoch:
        return "-"
    return datetime.fromtimestamp(float(epoch), UTC).strftime("%Y-%m-%d %H:%M:%S")


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = float(seconds)
    if s < 60:
        return f"{s:.1f} s"
    if s < 3600:
        return f"{int(s // 60)} min {int(s % 60)} s"
    return f"{int(s // 3600)} h {int(s % 3600 // 60)} min"


def rate(value: float | None, unit: str = "req/s") -> str:
    if value is None:
        return "-"
    v = float(value)
    return f"{v:.0f} {unit}" if v >= 100 else f"{v:.1f} {unit}" if v >= 1 else f"{v:.2f} {unit}"


def millis(seconds: float | None) -> str:
    return "-" if seconds is None else f"{float(seconds) * 1000:.0f} ms"


def percent(fraction: float | None) -> str:
    return "-" if fraction is None else f"{float(fraction) * 100:.0f} %"


templates = Jinja2Templates(directory=HERE / "templates")
templates.env.filters.update(when=when, duration=duration, rate=rate, millis=millis,
                             percent=percent)


def render(request: Request, name: str, **context: Any) -> HTMLResponse:
    """A page whole, or only its live part when the page's script asks (``?part=live``)."""
    live = request.query_params.get("part") == "live"
    return templates.TemplateResponse(
        request, f"{name}.html", {**context, "live_only": live, "csrf": keys_of(request).csrf,
                                  "every_ms": LIVE_EVERY_MS, "said": request.query_params.get(
                                      "said", "")})


# -- sign in --------------------------------------------------------------------------
@pages.get("/login", response_class=HTMLResponse)
def login_page(request: Request) -> HTMLResponse:
    return templates.TemplateResponse(request, "login.html", {"wrong": False})


@pages.post("/login")
async def login(request: Request) -> Response:
    """The token, checked in constant time; a session cookie derived from it in return."""
    token = (await form(request)).get("token", "")
    keys = keys_of(request)
    if not keys.token_matches(token):
        return templates.TemplateResponse(request, "login.html", {"wrong": True},
                                          status_code=status.HTTP_401_UNAUTHORIZED)
    answer = RedirectResponse("/console/", status.HTTP_303_SEE_OTHER)
    answer.set_cookie(SESSION_COOKIE, keys.session, httponly=True, samesite="strict",
                      secure=request.url.scheme == "https", path="/")
    return answer


@pages.post("/logout")
def logout() -> Response:
    answer = RedirectResponse("/console/login", status.HTTP_303_SEE_OTHER)
    answer.delete_cookie(SESSION_COOKIE, path="/")
    return answer


# -- pages ----------------------------------------------------------------------------
@pages.get("/", response_class=HTMLResponse)
def jobs_page(request: Request, rt: Runtime) -> HTMLResponse:
    return render(request, "jobs", jobs=rt.jobs(50), now=time.time())


@pages.get("/jobs/{job_id}", response_class=HTMLResponse)
def job_page(request: Request, job_id: str, rt: Runtime) -> HTMLResponse:
    job = rt.summary(job_id, failures=0)
    speed = rt.throughput(job_id)
    return render(request, "job", job=job, ended=job["state"] in TERMINAL,
                  chart=throughput_svg(speed["points"], speed["bucket_s"]))


@pages.get("/sites", response_class=HTMLResponse)
def sites_page(request: Request, rt: Runtime) -> HTMLResponse:
    return render(request, "sites", sites=rt.sites())


@pages.get("/workers", response_class=HTMLResponse)
def workers_page(request: Request, rt: Runtime) -> HTMLResponse:
    return render(request, "workers", **rt.workers())


# -- the buttons: each does its verb and goes back to the job page, saying what it did --
def back(job_id: str, said: str) -> Response:
    return RedirectResponse(f"/console/jobs/{quote(job_id)}?said={quote(said)}",
                            status.HTTP_303_SEE_OTHER)


@pages.post("/jobs/{job_id}/pause")
def pause_button(job_id: str, rt: Runtime) -> Response:
    rt.pause(job_id)
    return back(job_id, "paused")


@pages.post("/jobs/{job_id}/resume")
def resume_button(job_id: str, rt: Runtime) -> Response:
    return back(job_id, f"resumed: {rt.resume(job_id)} parked units sent again")


@pages.post("/jobs/{job_id}/cancel")
def cancel_button(job_id: str, rt: Runtime) -> Response:
    return back(job_id, f"cancelled: {rt.cancel(job_id)} open units recorded as cancelled")


@pages.post("/jobs/{job_id}/retry")
async def retry_button(request: Request, job_id: str, rt: Runtime) -> Response:
    """A failure group's button: its step and error class come with the form."""
    fields = await form(request)
    sent = await run_in_threadpool(rt.retry, job_id, fields.get("step") or None,
                                   fields.get("error") or None)
    return back(job_id, f"{sent} failed units sent again")
