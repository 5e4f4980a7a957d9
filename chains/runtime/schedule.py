"""Periodic chains: celery beat launches them; each step's recrawl policy decides what is
fetched again, so a schedule every hour fetches the volatile pages and what has aged.

A chain file may declare ``SCHEDULES = [Schedule(chain="demo", every_s=3600)]``;
``CHAIN_SCHEDULES`` (JSON, the same fields) replaces them for a deployment. Run
exactly one beat per cluster (``./control.sh start beat`` on one host): two beats
would launch every chain twice. A schedule with ``when_low="cookie:demo"`` launches
its chain only when that pool runs low: a refill on a timer, on top of the refills
the tasks launch on demand.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

LAUNCH_TASK = "crawlchain.launch_chain"


class Schedule(BaseModel):
    """Launch ``chain`` with ``params`` every ``every_s`` seconds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    chain: str
    every_s: float = Field(gt=0)
    params: dict[str, Any] = Field(default_factory=dict)
    queue: str = Field("crawlchain", description="Where the launch message goes.")
    when_low: str | None = Field(
        None, pattern=r"^(cookie|device):[\w-]+$",
        description="Launch only when this pool (kind:site) has too few members ready.")


def beat_schedule(schedules: list[Schedule]) -> dict[str, dict[str, Any]]:
    """Celery's ``beat_schedule`` for the schedules: one entry each, named after them."""
    return {
        f"{s.chain}-every-{s.every_s:g}s-{i}": {
            "task": LAUNCH_TASK,
            "schedule": timedelta(seconds=s.every_s),
            "args": [s.chain, s.params],
            "kwargs": {"when_low": s.when_low} if s.when_low else {},
            "options": {"queue": s.queue, "expires": s.every_s},
        }
        for i, s in enumerate(schedules)
    }
