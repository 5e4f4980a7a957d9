"""What the API takes and answers, as pydantic models: the OpenAPI schema is built from them."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class CrawlOptions(BaseModel):
    """The generic crawl's options (``crawlchain launch crawl --start ...``)."""

    model_config = ConfigDict(extra="forbid")

    start: list[str] = Field(description="Start URLs (at least one).")
    allow_domain: list[str] = Field(
        default_factory=list, description="Registrable domains to stay on; default: the "
        "start URLs'.")
    max_depth: int | None = Field(None, ge=0, description="Links followed from a start page "
                                  "(default 3).")
    allow: list[str] = Field(default_factory=list, description="Follow only links matching "
                             "one of these regular expressions.")
    deny: list[str] = Field(default_factory=list, description="Never follow links matching "
                            "one of these.")
    max_pages: int | None = Field(None, ge=1, description="Fetch at most this many pages.")
    sitemap: list[str] = Field(default_factory=list, description="Sitemaps to read besides "
                               "robots.txt's.")
    no_sitemaps: bool = Field(False, description="Do not read the sitemaps robots.txt names.")


class LaunchRequest(BaseModel):
    """A job to launch: a declared chain, its start params and this job's site settings."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"chain": "forum", "settings": {"base_url": "http://127.0.0.1:8765/forum"}},
        {"chain": "demo", "params": {"page": 1}}]})

    chain: str = Field(description="The chain's name (GET /api/chains lists them).")
    params: dict[str, Any] = Field(
        default_factory=dict, description="The start step's params (its input model: GET "
        "/api/chains/{name}).")
    settings: dict[str, Any] = Field(
        default_factory=dict, description="Site settings for this job only, by name "
        "(base_url, ...), as `crawlchain launch --set` takes them.")
    http_cache: bool = Field(False, description="Fetch through the development cache.")
    crawl: CrawlOptions | None = Field(None, description="The generic crawl's options (chain "
                                       "'crawl' only).")


class Launched(BaseModel):
    job_id: str
    chain: str
    state: str


class RetryRequest(BaseModel):
    """Which failed units to run again: all, one step's, or one error class's."""

    model_config = ConfigDict(extra="forbid")

    step: str | None = Field(None, description="Only the failed units of this step.")
    error: str | None = Field(None, description="Only the units that failed with this error "
                              "class (NotFound, ...).")


class VerbDone(BaseModel):
    """A verb's outcome: the job's state after it, and how many units it touched (sent
    again by resume and retry, recorded cancelled by cancel, 0 for pause)."""

    job_id: str
    state: str
    units: int


class ChainView(BaseModel):
    name: str
    start: str
    steps: dict[str, dict[str, Any]]
    links: list[dict[str, Any]]
    start_input: dict[str, Any] = Field(description="JSON schema of the start params.")
