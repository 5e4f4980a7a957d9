"""This process's runtime on the cluster: built on first use from the environment,
sending through Celery.

A launch from a shell (``chains.cluster``), the command line and every worker process use
it. It is rebuilt in a forked child, so a prefork pool never shares a socket with its
parent; ``reset`` forgets it (after a fork, or when settings changed).

A command (a shell, ``crawlchain``, the job API) says within ``STATE_COMMAND_WAIT_S``
(5 s) that the state Redis or the broker does not answer (``ClusterUnreachable``); a
worker or beat (``serve``) waits ``STATE_CONNECT_WAIT_S`` for a broker host that starts
after it.
"""

from __future__ import annotations

import os

from chains.broker.app import INTERRUPTS, make_app
from chains.broker.dispatch import CeleryDispatch
from chains.runtime.context import Runtime
from chains.runtime.registry import site_names
from config import get_settings

_built: tuple[int, Runtime] | None = None
_serving = False


def serve() -> None:
    """This process is a worker or beat: wait for the state Redis as a starting worker does."""
    global _serving
    _serving = True


def current() -> Runtime:
    """This process's runtime: clients from ``config``, messages through Celery."""
    global _built
    if _built is None or _built[0] != os.getpid():
        settings = get_settings()
        dispatch = CeleryDispatch(make_app(settings, site_names()))
        wait = settings.state.connect_wait_s if _serving else settings.state.command_wait_s
        runtime = Runtime.from_settings(settings, dispatch, INTERRUPTS, wait_s=wait)
        if not _serving:
            dispatch.check_reachable(wait)
        _built = (os.getpid(), runtime)
    return _built[1]


def reset() -> None:
    """Forget this process's runtime."""
    global _built
    _built = None
