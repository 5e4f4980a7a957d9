"""The task celery beat sends: launch a chain by name on a worker."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from chains.registry import get_chain
from chains.schedule import LAUNCH_TASK


@shared_task(name=LAUNCH_TASK, ignore_result=True)
def launch_chain(name: str, params: dict[str, Any], when_low: str | None = None) -> str:
    """Launch a registered chain; returns the job id (logged by the worker). With
    ``when_low`` ("cookie:demo"), only when that pool is low; "" when it was not."""
    if when_low is not None:
        from external_interface.providers.refill import pool_is_low
        from external_interface.resources import current

        kind, site = when_low.split(":", 1)
        if not pool_is_low(current().providers, kind, site):
            return ""
    return get_chain(name).launch(**params).job_id
