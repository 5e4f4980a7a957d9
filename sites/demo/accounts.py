"""The crawler's accounts on the demo site: secrets, read by each worker from its own
environment (``DEMO_ACCOUNTS``), never carried by a job."""

from __future__ import annotations

from functools import lru_cache

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class DemoAccounts(BaseSettings):
    """The crawler's accounts (name -> password): secrets, read by each worker."""

    model_config = SettingsConfigDict(env_prefix="DEMO_", extra="ignore")

    accounts: dict[str, str] = Field(
        default_factory=lambda: {"reader1": "pw-reader1-5a7c", "reader2": "pw-reader2-93de",
                                 "reader3": "pw-reader3-1f08"},
        description="The crawler's accounts on the site (name -> password), as JSON.")


@lru_cache(maxsize=1)
def accounts() -> dict[str, str]:
    """Read once per process."""
    return dict(DemoAccounts().accounts)


def account_for(turn: int) -> str:
    """The account a refill's ``turn`` logs in with: the accounts take turns."""
    names = sorted(accounts())
    return names[turn % len(names)]
