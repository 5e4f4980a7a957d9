"""Launching with further root units: a generic crawl's several starts and its sitemaps."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from chains.crawl import crawl
from chains.runtime.checks import ChainError
from chains.runtime.context import Runtime
from chains.runtime.dispatch import Recorder
from chains.runtime.launch import launch
from config import Settings


@pytest.fixture
def runtime(redis_socket: Path, redis_client: redis.Redis, tmp_path: Path,
            monkeypatch: pytest.MonkeyPatch) -> Iterator[Runtime]:
    db = redis_client.connection_pool.connection_kwargs["db"]
    monkeypatch.setenv("STATE_REDIS_URL", f"unix://{redis_socket}?db={db}")
    monkeypatch.setenv("STORAGE_URL", f"sqlite:///{tmp_path / 'items.db'}")
    built = Runtime.from_settings(Settings(), Recorder())
    yield built
    built.close()


def test_further_roots_of_any_step_start_at_depth_0_each_once(runtime: Runtime) -> None:
    job = launch(crawl, {"url": "http://a.test/"}, runtime=runtime, roots={
        "page": [{"url": "http://b.test/"}, {"url": "http://a.test/"}],
        "sitemap": [{"url": "http://a.test/sitemap.xml", "level": 0}]})
    assert isinstance(runtime.dispatch, Recorder)
    sent = {(m.envelope["step"], m.envelope["depth"], u["params"]["url"])
            for m in runtime.dispatch.sent for u in m.units}
    assert sent == {("page", 0, "http://a.test/"), ("page", 0, "http://b.test/"),
                    ("sitemap", 0, "http://a.test/sitemap.xml")}
    assert runtime.ledger.pending(job.job_id) == 3


def test_a_root_of_a_step_the_chain_lacks_is_refused_naming_it(runtime: Runtime) -> None:
    with pytest.raises(ChainError, match="root units name feeds, not steps of the chain"):
        launch(crawl, {"url": "http://a.test/"}, runtime=runtime, roots={"feeds": [{}]})
