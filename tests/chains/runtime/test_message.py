"""One message end to end, with no broker: a real Redis, a real sandbox server and a
``Recorder`` where messages would go. A message that runs its list on and ends in an
error hands back the page it was running, which its task adapter could not know of."""

from __future__ import annotations

from dataclasses import replace

import pytest

from chains.demo import demo
from chains.runtime.checks import resolve
from chains.runtime.context import Runtime
from chains.runtime.dispatch import Recorder
from chains.runtime.extensions import Middleware, UnitContext
from chains.runtime.message import run_message
from chains.runtime.registry import steps
from chains.runtime.units import make_unit
from external_interface.http import Request
from sandbox.server import SandboxServer


class Crash(BaseException):
    """What no phase turns into a unit's fate: the message itself ends in it."""


class CrashOnPage(Middleware):
    def __init__(self, page: int) -> None:
        self.page = page

    def process_request(self, request: Request, unit: UnitContext) -> Request:
        if request.params.get("page") == str(self.page):
            raise Crash(f"page {self.page}")
        return request


def test_a_list_run_on_that_ends_in_an_error_hands_back_its_page(
        runtime: Runtime, demo_sandbox: SandboxServer) -> None:
    rt = replace(runtime, middlewares=(CrashOnPage(2),))
    chain = resolve(demo, steps())
    rt.ledger.create_jobs(chain.model_dump(mode="json"),
                          [("j", {"page": 1}, {"demo": {"base_url": demo_sandbox.base_url}})])
    first = make_unit("feed", {"page": 1})
    rt.ledger.register("j", [(first["id"], "feed")])
    with pytest.raises(Crash):
        run_message(rt, "demo.h5.feed", {"job": "j", "step": "feed", "depth": 0}, [first], 0)
    assert isinstance(rt.dispatch, Recorder)
    second = make_unit("feed", {"page": 2}, page=1)
    sent = [u["id"] for m in rt.dispatch.sent if m.task == "demo.h5.feed" for u in m.units]
    assert rt.ledger.is_finished("j", first["id"])
    assert sent == [second["id"]]  # the page it was running, once
