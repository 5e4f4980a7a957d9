"""The console in a real browser: headless Chromium (the system's, Debian's ``chromium``)
driven by Playwright, against the API over a real cluster. Screenshots of the jobs list
and of a job page are saved under ``run/console/`` (never committed)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from config import BrowserSettings
from sandbox.server import Faults
from tests.api.cluster_support import ApiCluster, api_cluster, broken_forum
from tests.api.conftest import TOKEN

pytestmark = [pytest.mark.slow, pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[2]
SHOTS = Path(os.environ.get("CRAWLCHAIN_HOME", ROOT)) / "run" / "console"
CHROMIUM_ARGS = ["--no-sandbox",  # Chromium refuses to run as root with its sandbox
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]  # nothing leaves this machine
LATENCY_S = 0.3  # every forum page: the job runs long enough to be watched
WAIT_MS = 120_000


@pytest.fixture(scope="module")
def chromium() -> Iterator[object]:
    executable = BrowserSettings().chromium()
    if executable is None:
        pytest.skip("no Chromium: apt-get install chromium (./control.sh setup does, as "
                    "root) or set BROWSER_EXECUTABLE")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def running(tmp_path: Path) -> Iterator[ApiCluster]:
    with api_cluster(tmp_path, workers=1, forum=broken_forum(3),
                     faults=Faults(latency_s=LATENCY_S)) as cluster:
        yield cluster


def test_a_job_is_watched_retried_and_another_cancelled_from_the_console(
        chromium: object, running: ApiCluster) -> None:
    from playwright.sync_api import Browser, expect

    assert isinstance(chromium, Browser)
    expect.set_options(timeout=WAIT_MS)  # a bound on each wait, not a figure asserted
    SHOTS.mkdir(parents=True, exist_ok=True)
    page = chromium.new_page()
    page.set_default_timeout(WAIT_MS)
    page.goto(running.url + "/console/")
    expect(page).to_have_url(running.url + "/console/login")
    page.fill("#token", TOKEN)
    page.click("button[type=submit]")
    expect(page.locator("h1")).to_have_text("Jobs")

    # 1, 2: a forum job with some 404s appears in the list, and its counts rise
    job_id = running.launch_forum()
    row = page.locator(f'tr[data-job="{job_id}"]')
    expect(row).to_be_visible()
    seen = int(row.locator("td.done").inner_text())
    page.wait_for_function(
        "([sel, seen]) => Number(document.querySelector(sel)?.textContent) > seen",
        arg=[f'tr[data-job="{job_id}"] td.done', seen])
    page.screenshot(path=str(SHOTS / "jobs.png"), full_page=True)

    # 3: its failure group, with the URLs; retried once the pages are fixed: finished
    row.locator("a").click()
    state = page.locator("#state")
    expect(state).to_have_text("finished_with_failures")
    group = page.locator('tr.failure-group[data-step="user"][data-error="NotFound"]')
    expect(group.locator("td.count")).to_have_text("3")
    urls = group.locator("td.urls div").all_inner_texts()
    assert len(urls) == 3
    assert all(url.startswith(running.forum_url + "/api/users/") for url in urls)
    running.forum.fix()
    group.locator("button.retry").click()
    expect(page.locator(".said")).to_have_text("3 failed units sent again")
    expect(state).to_have_text("finished")
    expect(page.locator("svg.chart")).to_be_visible()
    page.screenshot(path=str(SHOTS / "job.png"), full_page=True)

    # 4: a second job, cancelled from its page
    other = running.launch_forum()
    page.goto(f"{running.url}/console/jobs/{other}")
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("#cancel").click()
    expect(page.locator(".said")).to_contain_text("cancelled:")
    expect(state).to_have_text("cancelled")
    assert running.summary(other)["state"] == "cancelled"
    assert running.summary(job_id)["state"] == "finished"

    # the sites and the workers, as an operator looks them over afterwards
    page.click("text=Sites")
    expect(page.locator('tr[data-site="forum"]')).to_be_visible()
    page.screenshot(path=str(SHOTS / "sites.png"), full_page=True)
    page.click("text=Workers")
    expect(page.locator('tr[data-queue="forum"]')).not_to_have_class("unconsumed")
    expect(page.locator('tr[data-queue="crawlchain"]')).to_have_class("unconsumed")  # not -Q
    page.screenshot(path=str(SHOTS / "workers.png"), full_page=True)
