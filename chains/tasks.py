"""The task celery beat sends: launch a chain by name on a worker."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from chains.registry import get_chain
from chains.schedule import LAUNCH_TASK


@shared_task(name=LAUNCH_TASK, ignore_result=True)
def launch_chain(name: str, params: dict[str, Any]) -> str:
    """Launch a registered chain; returns the job id (logged by the worker)."""
    return get_chain(name).launch(**params).job_id
