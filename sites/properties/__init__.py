"""The properties benchmark site (``bench/properties/``): static index and detail pages.

Served by nginx from a generated directory for the throughput benchmark, or by the
latency server for the latency-bound test; ``PROPERTIES_BASE_URL`` says where.
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class PropertiesSite(BaseSettings):
    """Site knobs, like Scrapy's ``custom_settings``: where the site lives."""

    model_config = SettingsConfigDict(env_prefix="PROPERTIES_", extra="ignore")

    base_url: str = Field("http://127.0.0.1:28080",
                          description="Base URL of the site's pages (a path prefix is allowed).")


@lru_cache(maxsize=1)
def base_url() -> str:
    """Read once per process: step functions call it for every request."""
    return PropertiesSite().base_url.rstrip("/")
