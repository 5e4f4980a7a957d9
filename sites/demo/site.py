"""The demo site's declaration: settings, politeness, and the providers its defences ask for.

The sandbox defends itself (``sandbox.defences``): signed h5 API calls, logged-in
user pages (login behind a captcha), registered app devices, user agents per
platform, rate limits and bans per exit address. ``PROVIDERS`` says what each
platform and step needs to get through; ``RESOURCES_DISABLED_SITES=["demo"]`` turns it
all off. The crawler's passwords stay on the workers (``accounts.py``), never in a job.
"""

from __future__ import annotations

from pydantic import Field

from chains.api import (
    BanRule,
    Politeness,
    Refill,
    SessionExpired,
    Site,
    SiteProviders,
    SiteSettings,
    Uses,
)
from sites.demo.captcha import DemoCaptchaSolver
from sites.demo.signer import SIGNER

MOBILE, APP = "mobile", "demo-app"

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


class DemoSettings(SiteSettings):
    base_url: str = Field("http://127.0.0.1:8765", description="The sandbox's base URL.")


# The sandbox is local, so the demo is capped on concurrency only; a real site gets a
# rate too, e.g. Politeness(rate_per_s=5, burst=2, max_concurrency=4).
SITE = Site("demo", settings=DemoSettings, politeness=Politeness(max_concurrency=32),
            providers=PROVIDERS)
