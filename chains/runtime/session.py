"""This process's runtime, built on first use from the environment, sending through Celery.

A launch from a shell (``chain.launch(...)``), the command line and every worker
process use it. It is rebuilt in a forked child, so a prefork pool never shares a
socket with its parent; ``reset`` forgets it (after a fork, or when settings changed).
"""

from __future__ import annotations

import os

from chains.broker.app import INTERRUPTS, make_app
from chains.broker.dispatch import CeleryDispatch
from chains.runtime.context import Runtime
from chains.runtime.registry import site_names
from config import get_settings

_built: tuple[int, Runtime] | None = None


def current() -> Runtime:
    """This process's runtime: clients from ``config``, messages through Celery."""
    global _built
    if _built is None or _built[0] != os.getpid():
        settings = get_settings()
        dispatch = CeleryDispatch(make_app(settings, site_names()))
        _built = (os.getpid(), Runtime.from_settings(settings, dispatch, INTERRUPTS))
    return _built[1]


def reset() -> None:
    """Forget this process's runtime."""
    global _built
    _built = None
