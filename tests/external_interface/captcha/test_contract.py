"""Every captcha solver a site declares reads the sandbox's captchas; bad input is refused."""

from __future__ import annotations

import pytest

from chains.runtime.registry import site, site_names
from external_interface.captcha import CaptchaSolver, CaptchaUnsolved, Challenge
from sandbox.captcha import CaptchaDesk

DECLARED = {name: site(name).providers for name in site_names()}
SOLVERS = {site: d.solver for site, d in DECLARED.items() if d is not None and d.solver}


def test_the_demo_site_declares_a_solver() -> None:
    assert "demo" in SOLVERS


@pytest.fixture(params=sorted(SOLVERS))
def solver(request: pytest.FixtureRequest) -> CaptchaSolver:
    return SOLVERS[request.param]


def test_a_solver_answers_a_hundred_sandbox_captchas_right(solver: CaptchaSolver) -> None:
    desk = CaptchaDesk(seed=42)
    assert isinstance(solver, CaptchaSolver)
    for _ in range(100):
        challenge = desk.issue()
        answer = solver.solve(Challenge.from_data_url(challenge.data_url))
        assert desk.check(challenge.captcha_id, answer), challenge.question


@pytest.mark.parametrize("image", [
    Challenge(b"\x89PNG\r\n", "image/png"),
    Challenge(b"<svg xmlns='http://www.w3.org/2000/svg'><text x='1'>?</text></svg>",
              "image/svg+xml"),
    Challenge(b"<svg", "image/svg+xml"),
])
def test_what_a_solver_cannot_read_is_unsolved_not_a_guess(solver: CaptchaSolver,
                                                           image: Challenge) -> None:
    with pytest.raises(CaptchaUnsolved):
        solver.solve(image)

