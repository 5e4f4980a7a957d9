"""A 401 is judged per site, where the fetch phase judges the response: on a site with a
session pool (the demo) another session can cure it, so it rotates; on a site without one
(the forum) nothing can, so it is permanent at once, with the reason recorded."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chains.demo import demo
from chains.forum import forum
from chains.runtime.context import Runtime
from chains.runtime.message import resources_of
from chains.runtime.model import Chain
from chains.runtime.pipeline.batch import Batch, UnitRun, fate_of
from chains.runtime.pipeline.fetch import fetch
from chains.runtime.pipeline.prepare import prepare
from chains.runtime.registry import step
from chains.runtime.site import Site
from chains.runtime.units import make_unit
from exceptions import ClientError, PermanentError, RotateError, SessionExpired
from sites.demo.site import SITE as DEMO
from sites.forum import SITE as FORUM
from tests.chains.unauthorized_support import Unauthorized, unauthorized_server


@pytest.fixture
def server() -> Iterator[Unauthorized]:
    with unauthorized_server() as running:
        yield running


def fetched(rt: Runtime, chain: Chain, site: Site, task: str, base_url: str,
            params: dict[str, str]) -> UnitRun:
    """One unit of ``task`` through prepare and fetch, its site at ``base_url``."""
    rt.ledger.create_job("j", chain.model_dump(mode="json"), {})
    unit = make_unit(chain.start, params)
    rt.ledger.register("j", [(unit["id"], chain.start)])
    batch = Batch(rt, {"job": "j", "step": chain.start, "depth": 0}, chain, step(task), site,
                  site.read_settings(base_url=base_url), resources_of(site, task, []), retries=0)
    [run] = fetch(batch, prepare(batch, [UnitRun(unit, 1, True)]))
    return run


def test_the_sites_that_declare_a_session_pool_are_the_ones_whose_401_rotates() -> None:
    assert DEMO.providers is not None and DEMO.providers.sessions
    assert FORUM.providers is None


def test_on_a_site_without_a_session_pool_a_401_is_permanent_and_says_why(
        runtime: Runtime, server: Unauthorized) -> None:
    run = fetched(runtime, forum, FORUM, "forum.web.boards", f"{server.base}/forum", {})
    assert type(run.error) is ClientError and isinstance(run.error, PermanentError)
    assert run.fate == fate_of(run.error)
    assert run.error.reason == ("ClientError: 401 Unauthorized: the site has no session "
                                "pool to rotate")
    assert server.asked == [("/forum/", None)]


def test_on_a_site_with_a_session_pool_a_401_rotates_the_session(
        runtime: Runtime, server: Unauthorized) -> None:
    runtime.providers.cookies.add("demo", "reader1", {"sid": "s1"})
    demo_user = Chain.model_validate({**demo.model_dump(), "start": "user_info"})
    run = fetched(runtime, demo_user, DEMO, "demo.h5.user_info", server.base,
                  {"user_id": "u0001"})
    assert type(run.error) is SessionExpired and isinstance(run.error, RotateError)
    assert run.leases is not None and run.leases.cookie is not None  # the session to burn
    assert server.asked == [("/h5/user/u0001", "sid=s1")]
