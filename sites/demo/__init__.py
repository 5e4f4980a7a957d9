"""The demo site: the sandbox's social news site (``python -m sandbox``).

It defends itself (``sandbox.defences``): signed h5 API calls, logged-in user pages
(login behind a captcha), registered app devices, user agents per platform, rate
limits and bans per exit address. ``PROVIDERS`` says what each platform and step
needs to get through; ``RESOURCES_DISABLED_SITES=["demo"]`` turns it all off.
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from exceptions import SessionExpired
from external_interface.politeness import Politeness
from external_interface.providers import BanRule, Refill, SiteProviders, Uses
from sites.demo.captcha import DemoCaptchaSolver
from sites.demo.signer import SIGNER

# The sandbox is local, so the demo is capped on concurrency only; a real site gets a
# rate too, e.g. Politeness(rate_per_s=5, burst=2, max_concurrency=4).
POLITENESS = Politeness(max_concurrency=32)

MOBILE = "mobile"
APP = "demo-app"

PROVIDERS = SiteProviders(
    uses={
        "h5": Uses(user_agent=MOBILE, proxy=True, sign=True),  # the signed JSON API
        "h5.user_info": Uses(user_agent=MOBILE, proxy=True, cookie=True),  # logged-in pages
        "h5.captcha": Uses(user_agent=MOBILE, proxy=True),
        "h5.login": Uses(user_agent=MOBILE, proxy=True, captcha=True, feeds="cookie"),
        "app": Uses(user_agent=APP, proxy=True, device=True),
        "app.register_device": Uses(user_agent=APP, proxy=True, feeds="device"),
        "common": Uses(user_agent=MOBILE, proxy=True),
    },
    signer=SIGNER,
    solver=DemoCaptchaSolver(),
    user_agents={APP: ("DemoApp/3.2.1 (iPhone; iOS 17.4; Scale/3.00)",
                       "DemoApp/3.2.1 (Android 14; Pixel 8; okhttp/4.12)")},
    bans=(
        BanRule(b"Verify you are human", "proxy"),  # the interstitial, served with a 200
        BanRule(b'"device quota exceeded"', "device"),
        BanRule(b'"unregistered device"', "device"),
        BanRule(b'"session expired"', "cookie", SessionExpired),
    ),
    refills={"cookie": Refill(chain="demo-login", size=2),
             "device": Refill(chain="demo-device", size=1)},
    per_exit=Politeness(rate_per_s=30, burst=5),  # the sandbox allows 50/s per address
)


class DemoSite(BaseSettings):
    """Site knobs, like Scrapy's ``custom_settings``: where the site lives."""

    model_config = SettingsConfigDict(env_prefix="DEMO_", extra="ignore")

    base_url: str = Field("http://127.0.0.1:8765", description="The sandbox's base URL.")
    accounts: dict[str, str] = Field(
        default_factory=lambda: {"reader1": "pw-reader1-5a7c", "reader2": "pw-reader2-93de",
                                 "reader3": "pw-reader3-1f08"},
        description="The crawler's accounts on the site (name -> password), as JSON.")


@lru_cache(maxsize=1)
def base_url() -> str:
    """Read once per process: step functions call it for every request."""
    return DemoSite().base_url.rstrip("/")


@lru_cache(maxsize=1)
def accounts() -> dict[str, str]:
    """Read once per process, like ``base_url``."""
    return dict(DemoSite().accounts)


def account_for(turn: int) -> str:
    """The account a refill's ``turn`` logs in with: the accounts take turns."""
    names = sorted(accounts())
    return names[turn % len(names)]
