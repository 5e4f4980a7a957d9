"""Every endpoint needs the token, and no state changes from another site: checked over the
app's own routes, so a route added later is checked without a list to keep."""

from __future__ import annotations

import re

import pytest
from fastapi.routing import iter_route_contexts

from api.security import SESSION_COOKIE, Keys
from tests.api.conftest import TOKEN, Served

EVIL = "https://evil.example"
PUBLIC = {"/", "/console/login"}


def routes(served: Served, method: str) -> list[str]:
    """Every path the app answers ``method`` on, path parameters filled in (included
    routers flattened by FastAPI's own walk)."""
    paths = [str(route.path) for route in iter_route_contexts(served.app.routes)
             if method in (route.methods or ())]
    return [re.sub(r"\{[^}]+\}", "x", path) for path in paths]


def test_the_app_has_the_routes_these_checks_run_over(served: Served) -> None:
    posts, gets = routes(served, "POST"), routes(served, "GET")
    assert {"/api/jobs", "/api/jobs/x/pause", "/api/jobs/x/resume", "/api/jobs/x/cancel",
            "/api/jobs/x/retry", "/console/jobs/x/retry", "/console/jobs/x/cancel",
            "/console/login"} <= set(posts)
    assert {"/api/jobs", "/api/jobs/x", "/api/jobs/x/items", "/api/workers", "/api/sites",
            "/api/chains", "/api/steps", "/api/openapi.json", "/console/"} <= set(gets)


def test_every_state_changing_route_refuses_a_request_without_the_token(
        served: Served) -> None:
    anonymous = served.session(bearer=False)
    for path in routes(served, "POST"):
        answer = anonymous.post(served.url + path, json={}, allow_redirects=False)
        assert answer.status_code == 401, path
    wrong = served.session(bearer=False)
    wrong.headers["Authorization"] = "Bearer " + TOKEN[:-1] + "x"
    for path in routes(served, "POST"):
        assert wrong.post(served.url + path, json={}).status_code == 401, path


def test_every_state_changing_route_refuses_a_cross_site_request(served: Served) -> None:
    """A browser on another site holding the console's cookie (or told the token): the
    Origin or Sec-Fetch-Site it sends gets the request refused before anything runs."""
    keys = Keys(TOKEN)
    for path in routes(served, "POST"):
        browser = served.session(bearer=False)
        browser.cookies.set(SESSION_COOKIE, keys.session)
        form = {"token": TOKEN}  # the login form with the right token: still refused
        for headers in ({"Origin": EVIL}, {"Sec-Fetch-Site": "cross-site"},
                        {"Origin": "null"}):
            answer = browser.post(served.url + path, data=form, headers=headers,
                                  allow_redirects=False)
            assert answer.status_code == 403, (path, headers)
            assert "cross-site request refused" in answer.json()["detail"]
        scripted = served.session()
        answer = scripted.post(served.url + path, json={}, headers={"Origin": EVIL})
        assert answer.status_code == 403, path


def test_a_console_post_without_the_csrf_token_is_refused_even_from_the_same_site(
        served: Served) -> None:
    browser = served.session(bearer=False)
    browser.cookies.set(SESSION_COOKIE, Keys(TOKEN).session)
    for path in routes(served, "POST"):
        if path in PUBLIC:
            continue
        answer = browser.post(served.url + path, data={"step": "x"},
                              headers={"Origin": served.url, "Sec-Fetch-Site": "same-origin"})
        assert answer.status_code == 403, path
        assert "CSRF" in answer.json()["detail"]


@pytest.mark.parametrize("path", ["/api/jobs", "/api/jobs/x", "/api/workers", "/api/sites",
                                  "/api/openapi.json", "/api/jobs/x/items"])
def test_reading_needs_the_token_too(served: Served, path: str) -> None:
    assert served.session(bearer=False).get(served.url + path).status_code == 401


def test_every_api_read_refuses_a_request_without_the_token(served: Served) -> None:
    anonymous = served.session(bearer=False)
    for path in routes(served, "GET"):
        answer = anonymous.get(served.url + path, allow_redirects=False)
        if path in PUBLIC:
            continue
        if path.startswith("/console"):  # a page: the browser is sent to sign in
            assert answer.status_code == 303, path
            assert answer.headers["location"] == "/console/login"
        else:
            assert answer.status_code == 401, path


def test_the_token_signs_a_browser_in_and_the_session_reads_but_is_not_the_token(
        served: Served) -> None:
    browser = served.session(bearer=False)
    wrong = browser.post(served.url + "/console/login", data={"token": "not-it"},
                         allow_redirects=False)
    assert wrong.status_code == 401 and SESSION_COOKIE not in browser.cookies
    right = browser.post(served.url + "/console/login", data={"token": TOKEN},
                         allow_redirects=False)
    assert right.status_code == 303 and right.headers["location"] == "/console/"
    cookie = right.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and TOKEN not in cookie
    assert browser.get(served.url + "/api/jobs").status_code == 200


def test_a_state_change_from_the_console_with_its_csrf_token_goes_through(
        served: Served) -> None:
    browser = served.session(bearer=False)
    browser.cookies.set(SESSION_COOKIE, Keys(TOKEN).session)
    answer = browser.post(served.url + "/console/jobs/nosuchjob/pause",
                          data={"csrf": Keys(TOKEN).csrf},
                          headers={"Origin": served.url, "Sec-Fetch-Site": "same-origin"})
    assert answer.status_code == 404  # past the guard: the job is unknown
    assert "unknown to the ledger" in answer.json()["detail"]


def test_a_short_token_is_refused_with_the_fix() -> None:
    with pytest.raises(ValueError, match="at least 16 characters"):
        Keys("short")
