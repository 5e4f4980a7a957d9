"""The demo site: the sandbox's social news site (``python -m sandbox``)."""

from __future__ import annotations

from functools import lru_cache

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from external_interface.politeness import Politeness

# The sandbox is local, so the demo is capped on concurrency only; a real site gets a
# rate too, e.g. Politeness(rate_per_s=5, burst=2, max_concurrency=4).
POLITENESS = Politeness(max_concurrency=32)


class DemoSite(BaseSettings):
    """Site knobs, like Scrapy's ``custom_settings``: where the site lives."""

    model_config = SettingsConfigDict(env_prefix="DEMO_", extra="ignore")

    base_url: str = Field("http://127.0.0.1:8765", description="The sandbox's base URL.")


@lru_cache(maxsize=1)
def base_url() -> str:
    """Read once per process: step functions call it for every request."""
    return DemoSite().base_url.rstrip("/")
