"""What a site declares about the resources its steps need (the bundle that serves them
is ``providers.bundle``).

A site declares ``Site(..., providers=SiteProviders(...))`` next to its knobs, like
Scrapy's ``custom_settings``: per platform (``"h5"``) or step (``"h5.user_info"``),
which transformers its requests go through (``Uses``), and the site's own parts:
signer, captcha solver, app user agents, ban rules (content that means "banned"),
the chains that refill its cookie and device pools, and ``per_exit``: the rate the
site allows one client address, kept per proxy on top of the site's politeness.
A site that declares nothing pays nothing: its requests are fetched as built.

The transformers run in a fixed order (``providers.leases.apply_providers``): user agent,
cookie, device id, proxy, captcha answer, and the signature last.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from config import Politeness
from exceptions import Banned, RotateError
from external_interface.captcha import CaptchaSolver
from external_interface.sign import Signer
from external_interface.user_agent.bundled import AGENTS

Kind = Literal["proxy", "cookie", "device"]


class Uses(BaseModel):
    """The transformers a step's requests go through."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    user_agent: str | None = Field(None, description="Family: mobile, desktop, or the site's.")
    proxy: bool = Field(False, description="Through a pooled proxy (direct when none is set).")
    cookie: bool = Field(False, description="With a session cookie from the site's pool.")
    device: bool = Field(False, description="With a device id header from the site's pool.")
    captcha: bool = Field(False, description="Solve the challenge in Request.meta.")
    sign: bool = Field(False, description="Signed by the site's signer, last.")
    feeds: Literal["cookie", "device"] | None = Field(
        None, description="The step's items (SessionItem, DeviceItem) go into this pool.")


@dataclass(frozen=True)
class BanRule:
    """Content that means a resource is burnt, whatever the status (an interstitial is a 200)."""

    marker: bytes
    resource: Kind
    error: type[RotateError] = Banned
    statuses: frozenset[int] = frozenset()  # empty: any status


@dataclass(frozen=True)
class Refill:
    """The chain that adds ``size`` members to a pool per launch (a login, a registration)."""

    chain: str
    size: int = 1


@dataclass(frozen=True)
class SiteProviders:
    """A site's declaration; checked when it is built (a step that signs needs a signer)."""

    uses: Mapping[str, Uses]
    signer: Signer | None = None
    solver: CaptchaSolver | None = None
    user_agents: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    bans: tuple[BanRule, ...] = ()
    refills: Mapping[str, Refill] = field(default_factory=dict)
    device_header: str = "X-Device-Id"
    captcha_param: str = "captcha_answer"
    per_exit: Politeness | None = None  # the site's limit per client address, per proxy

    def __post_init__(self) -> None:
        for part, protocol in ((self.signer, Signer), (self.solver, CaptchaSolver)):
            if part is not None and not isinstance(part, protocol):
                raise TypeError(f"{type(part).__name__} is not a {protocol.__name__}")
        for where, uses in self.uses.items():
            missing = [what for what, needed, have in (
                ("signer", uses.sign, self.signer), ("solver", uses.captcha, self.solver),
                ("refills['cookie']", uses.cookie, self.refills.get("cookie")),
                ("refills['device']", uses.device, self.refills.get("device")),
            ) if needed and have is None]
            if missing:
                raise ValueError(f"providers of {where!r} need {', '.join(missing)}")
            family = uses.user_agent
            if family is not None and family not in AGENTS and family not in self.user_agents:
                raise ValueError(f"providers of {where!r}: no user agent family {family!r} "
                                 f"(bundled: {', '.join(sorted(AGENTS))}; or declare it)")

    @property
    def sessions(self) -> bool:
        """Whether a step of the site takes a session cookie from its pool: only then
        can another session cure a 401 (``statuses.rule_for``)."""
        return any(uses.cookie for uses in self.uses.values())

    def uses_for(self, task_name: str) -> Uses | None:
        """``site.platform.step`` -> the step's entry, else its platform's, else None."""
        _, platform, step = [*task_name.split("."), "", ""][:3]
        return self.uses.get(f"{platform}.{step}") or self.uses.get(platform)


@dataclass(frozen=True)
class StepResources:
    """What one task's requests need: its site, the site's declaration, the step's uses."""

    site: str
    declared: SiteProviders
    uses: Uses
