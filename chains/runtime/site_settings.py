"""A site's knobs, fixed per launch: the base of every site's settings model."""

from __future__ import annotations

from pydantic import field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from external_interface.clients import known_client


class SiteSettings(BaseSettings):
    """A site's knobs; subclass it with fields and defaults. ``base_url`` is where the
    site lives: URL templates read it as ``{base_url}``."""

    model_config = SettingsConfigDict(extra="ignore")

    base_url: str = ""
    http_cache: bool = False  # the job's fetches go through the development cache
    client: str = ""  # the job's default fetch client ("": the site's); a step's own wins

    @field_validator("client")
    @classmethod
    def _known_client(cls, value: str) -> str:
        return known_client(value, "site setting client") if value else value

    @field_validator("base_url")
    @classmethod
    def _no_trailing_slash(cls, value: str) -> str:
        """``{base_url}/path`` reads right whether the URL was given with a slash or not."""
        return value.rstrip("/")
