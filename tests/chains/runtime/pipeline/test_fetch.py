"""The fetch phase's log: at DEBUG, one line per fetch, the URL's secrets masked."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import pytest

from chains.demo import demo
from chains.runtime.context import Runtime
from chains.runtime.pipeline.fetch import fetch
from chains.runtime.pipeline.prepare import Batch, UnitRun, prepare
from chains.runtime.registry import step
from chains.runtime.site import Site
from chains.runtime.units import make_unit
from sandbox.server import SandboxServer
from sandbox.server import Site as SandboxSite
from sandbox.world import World
from sites.demo.site import DemoSettings

LOGGER = "chains.runtime.pipeline.fetch"
SECRET = "s3cret-in-the-url"


@pytest.fixture(scope="module")
def server() -> Iterator[SandboxServer]:
    running = SandboxServer(SandboxSite(World(seed=3)))
    running.start_in_thread()
    yield running
    running.shutdown()
    running.server_close()


def fetch_feed(rt: Runtime, base_url: str, pages: list[int]) -> list[UnitRun]:
    """Feed pages of the demo through prepare and fetch, at ``base_url``."""
    rt.ledger.create_job("j", demo.model_dump(mode="json"), {"page": 1})
    units = [make_unit("feed", {"page": page}) for page in pages]
    rt.ledger.register("j", [(u["id"], "feed") for u in units])
    batch = Batch(rt, {"job": "j", "step": "feed", "depth": 0}, demo, step("demo.h5.feed"),
                  Site("demo", settings=DemoSettings), DemoSettings(base_url=base_url), None,
                  retries=0)
    return list(fetch(batch, prepare(batch, [UnitRun(u, 1, True) for u in units])))


def fetch_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == LOGGER]


def test_at_debug_each_fetch_is_one_line_with_what_a_site_is_debugged_with(
        runtime: Runtime, server: SandboxServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    base = server.base_url.replace("http://", f"http://crawler:{SECRET}@")
    runs = fetch_feed(runtime, base, [1, 2, 3])
    lines = fetch_lines(caplog)
    assert len(lines) == len(runs) == sum(r.fetch is not None for r in runs) == 3
    by_page = {r.__dict__["url"].split("page=")[1]: r.__dict__ for r in lines}
    assert set(by_page) == {"1", "2", "3"}
    for run in runs:
        assert run.fetch is not None and run.request is not None
        fields = by_page[str(run.request.params["page"])]
        assert {k: fields[k] for k in ("site", "step", "status", "bytes", "proxy", "job_id")
                } == {"site": "demo", "step": "h5.feed", "status": 200,
                      "bytes": run.fetch.nbytes, "proxy": None, "job_id": "j"}
        assert fields["bytes"] > 0 and fields["ms"] >= 0
        assert fields["url"].startswith("http://crawler:***@127.0.0.1:")
    assert all(r.levelno == logging.DEBUG for r in lines)
    assert SECRET not in caplog.text


def test_a_fetch_that_fails_is_a_line_too(runtime: Runtime, server: SandboxServer,
                                          caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    [run] = fetch_feed(runtime, f"{server.base_url}/no-such-prefix", [1])
    [line] = fetch_lines(caplog)
    assert run.fetch is not None and run.error is not None
    assert (line.__dict__["status"], line.__dict__["bytes"]) == (404, 0)
    assert line.getMessage().startswith(f"fetch 404 {server.base_url}/no-such-prefix/h5/feed")


def test_above_debug_no_fetch_is_logged(runtime: Runtime, server: SandboxServer,
                                        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    runs = fetch_feed(runtime, server.base_url, [1, 2])
    assert all(r.fetch is not None for r in runs) and fetch_lines(caplog) == []


def test_a_fetch_is_timed_without_the_slot_release_a_broker_outage_would_stretch(
        runtime: Runtime, server: SandboxServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The throttle reads this time as the site's latency: a release riding out a Redis
    outage for seconds must not look like the site slowing down."""
    give_back = runtime.limiter._give_back  # type: ignore[attr-defined]
    released = []

    def slow_release(grant: object) -> None:
        time.sleep(0.5)
        released.append(grant)
        give_back(grant)

    monkeypatch.setattr(runtime.limiter, "_give_back", slow_release)
    [run] = fetch_feed(runtime, server.base_url, [1])
    assert released, "the fetch took a slot (slow start caps concurrency)"
    assert run.fetch is not None and run.fetch.seconds < 0.4
