"""Every signer a site declares passes one contract; the sandbox's check is the referee."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from chains.runtime.registry import site, site_names
from external_interface.http import Request
from external_interface.sign import HmacSigner, Signer
from sandbox.defences import signature_problem

DECLARED = {name: site(name).providers for name in site_names()}
SIGNERS = {site: d.signer for site, d in DECLARED.items() if d is not None and d.signer}
NOW = 1_700_000_000.0


def test_the_demo_site_declares_a_signer() -> None:
    assert "demo" in SIGNERS


@pytest.fixture(params=sorted(SIGNERS))
def signer(request: pytest.FixtureRequest) -> Signer:
    return SIGNERS[request.param]


def test_signing_is_pure_and_changes_nothing_but_its_params(signer: Signer) -> None:
    request = Request("http://127.0.0.1/h5/feed", params={"page": "2"},
                      headers={"User-Agent": "x"}, proxy="http://127.0.0.11:1")
    signed = signer.sign(request, NOW)
    assert isinstance(signer, Signer)
    assert signer.sign(request, NOW) == signed
    assert replace(signed, params=request.params) == request
    assert signed.params["page"] == "2" and len(signed.params) > 1


def test_the_signature_covers_the_params_and_the_time(signer: Signer) -> None:
    request = Request("http://127.0.0.1/h5/feed", params={"page": "2"})
    base = signer.sign(request, NOW).params
    assert signer.sign(replace(request, params={"page": "3"}), NOW).params != base
    assert signer.sign(request, NOW + 5).params != base


def test_the_demo_signature_is_what_the_sandbox_accepts_now_and_refuses_stale() -> None:
    request = Request("http://127.0.0.1:1/h5/user/u0001/statuses", params={"cursor": "b0"})
    fresh = SIGNERS["demo"].sign(request, time.time()).params
    assert signature_problem("/h5/user/u0001/statuses", fresh, time.time(), 60) is None
    stale = SIGNERS["demo"].sign(request, time.time() - 600).params
    assert signature_problem("/h5/user/u0001/statuses", stale, time.time(), 60) == (
        "stale timestamp")
    forged = HmacSigner(b"guessed").sign(request, time.time()).params
    assert signature_problem("/h5/user/u0001/statuses", forged, time.time(), 60) == "bad sign"
