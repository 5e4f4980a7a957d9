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
from exceptions import ClusterUnreachable

WARM_WAIT_S = 1.0  # a pool child's start must stay well within Celery's 4 s for it
_built: tuple[int, Runtime] | None = None
_serving = False


def serve() -> None:
    """This process is a worker or beat: wait for the state Redis as a starting worker does."""
    global _serving
    _serving = True


def current() -> Runtime:
    """This process's runtime: clients from ``config``, messages through Celery."""
    if _built is None or _built[0] != os.getpid():
        settings = get_settings()
        wait = settings.state.connect_wait_s if _serving else settings.state.command_wait_s
        _build(wait, check_broker=not _serving)
    assert _built is not None
    return _built[1]


def warm(wait_s: float = WARM_WAIT_S) -> bool:
    """Build this process's runtime now, at a worker's (or pool child's) start, not on its
    first message: its Celery app, the Redis clients, the item store and the fetch clients
    are ready before the first unit, whose latency and CPU are then the crawl's alone.
    Within ``wait_s``: a state Redis that does not answer yet leaves the build to the
    first message (which waits ``STATE_CONNECT_WAIT_S``); False then."""
    if _built is not None and _built[0] == os.getpid():
        return True
    try:
        _build(wait_s, check_broker=False)
    except ClusterUnreachable:
        return False
    return True


def _build(wait_s: float, check_broker: bool) -> None:
    global _built
    settings = get_settings()
    dispatch = CeleryDispatch(make_app(settings, site_names()))
    runtime = Runtime.from_settings(settings, dispatch, INTERRUPTS, wait_s=wait_s)
    if check_broker:
        dispatch.check_reachable(wait_s)
    _built = (os.getpid(), runtime)


def reset() -> None:
    """Forget this process's runtime."""
    global _built
    _built = None
