"""The console's pages as a browser gets them (HTML over HTTP), without a browser: signed
in by its session cookie, each page whole, and its live part alone."""

from __future__ import annotations

import re

import requests

from api.security import SESSION_COOKIE, Keys
from tests.api.conftest import TOKEN, Served


def browser(served: Served) -> requests.Session:
    client = served.session(bearer=False)
    client.cookies.set(SESSION_COOKIE, Keys(TOKEN).session)
    return client


def launched(served: Served) -> str:
    answer = served.session().post(served.url + "/api/jobs", json={"chain": "demo"})
    return str(answer.json()["job_id"])


def test_the_jobs_page_lists_a_launched_job_with_its_state(served: Served) -> None:
    job_id = launched(served)
    page = browser(served).get(served.url + "/console/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    row = re.search(rf'<tr data-job="{job_id}">(.*?)</tr>', page.text, re.S)
    assert row is not None and "state-running" in row.group(1)
    cells = dict(re.findall(r'<td class="n (\w+)">(\d+)</td>', row.group(1)))
    assert cells == {"done": "0", "failed": "0", "skipped": "0", "gone": "0", "items": "0",
                     "pending": "1"}
    assert page.headers["x-frame-options"] == "DENY"
    assert "script-src" not in page.headers["content-security-policy"]  # 'self' only


def test_the_live_part_is_the_fragment_without_the_layout(served: Served) -> None:
    launched(served)
    part = browser(served).get(served.url + "/console/?part=live")
    assert "<table" in part.text and "<html" not in part.text and "<nav" not in part.text


def test_the_job_page_shows_steps_chart_and_the_buttons_with_the_csrf_token(
        served: Served) -> None:
    job_id = launched(served)
    page = browser(served).get(f"{served.url}/console/jobs/{job_id}").text
    assert 'data-step="feed"' in page and 'id="state"' in page
    assert "built-in method" not in page  # every cell a value, not a dict's method
    assert f'action="/console/jobs/{job_id}/pause"' in page
    assert f'action="/console/jobs/{job_id}/cancel"' in page
    assert f'name="csrf" value="{Keys(TOKEN).csrf}"' in page
    assert "no units finished yet" in page or "<svg" in page


def test_a_button_acts_and_comes_back_to_the_job_page_saying_what_it_did(
        served: Served) -> None:
    job_id = launched(served)
    answer = browser(served).post(f"{served.url}/console/jobs/{job_id}/cancel",
                                  data={"csrf": Keys(TOKEN).csrf},
                                  headers={"Origin": served.url}, allow_redirects=False)
    assert answer.status_code == 303
    assert answer.headers["location"].startswith(f"/console/jobs/{job_id}?said=cancelled")
    page = browser(served).get(served.url + answer.headers["location"]).text
    assert "cancelled: 1 open units recorded as cancelled" in page
    assert 'id="cancel"' not in page  # an ended job has no buttons


def test_the_workers_page_flags_a_queue_no_worker_consumes(served: Served) -> None:
    page = browser(served).get(served.url + "/console/workers").text
    assert re.search(r'<tr data-queue="forum" class="unconsumed">', page)
    assert "no worker consumes it" in page and "No worker answers" in page


def test_the_sites_page_renders(served: Served) -> None:
    page = browser(served).get(served.url + "/console/sites")
    assert page.status_code == 200 and "<h1>Sites</h1>" in page.text


def test_the_console_assets_are_served_without_the_token(served: Served) -> None:
    anonymous = served.session(bearer=False)
    for asset in ("console.js", "console.css"):
        assert anonymous.get(f"{served.url}/console/static/{asset}").status_code == 200
    assert anonymous.get(served.url + "/console/login").status_code == 200
