"""List the live workers and the queues each consumes (their heartbeats in Redis).

    crawlchain workers [--json]
    crawlchain workers --wait default@HOST [--pid PID] [--timeout 60]

A launch is refused when no live worker consumes a queue of its chain; this says which
do. ``--wait NAME`` returns once that worker consumes (``./control.sh start worker``
waits so), or exits 2 when it did not within ``--timeout`` seconds or its process
``--pid`` ended first (its log says why).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chains.runtime.roster import Roster


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print them as one JSON object")
    parser.add_argument("--wait", metavar="NAME", help="wait until this worker consumes "
                        "(its node name, name@host)")
    parser.add_argument("--pid", type=int, help="with --wait: the worker's pid; give up "
                        "when it ends, and skip a stale entry of an earlier process")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="with --wait: seconds to wait (default 60)")


def run(args: argparse.Namespace) -> int:
    from chains.runtime.context import state_redis, wait_for
    from chains.runtime.roster import Roster
    from config import get_settings

    state = get_settings().state
    wait_for(state.redis_url, state.command_wait_s)
    roster = Roster(state_redis(state.redis_url))
    if args.wait:
        return wait(roster, args.wait, args.pid, args.timeout)
    live = roster.live()
    if args.json:
        print(json.dumps({name: {"queues": list(s.queues), "pid": s.pid, "seen_at": s.at}
                          for name, s in sorted(live.items())}))
        return 0
    if not live:
        print("no live worker: ./control.sh start worker starts one")
    for name, seen in sorted(live.items()):
        print(f"{name}  pid {seen.pid}  queues {','.join(seen.queues)}")
    return 0


def wait(roster: Roster, name: str, pid: int | None, timeout: float) -> int:
    """Until ``name`` (of process ``pid``, when given) is live on the roster."""
    deadline = time.monotonic() + timeout
    while True:
        seen = roster.live().get(name)
        if seen is not None and (pid is None or seen.pid == pid):
            print(f"{name}: consuming {','.join(seen.queues)}")
            return 0
        if pid is not None and not alive(pid):
            raise SystemExit(f"worker {name} (pid {pid}) ended while starting: its log "
                             "says why (./control.sh logs)")
        if time.monotonic() > deadline:
            raise SystemExit(f"worker {name} is not consuming after {timeout:g} s: its log "
                             "says why (./control.sh logs)")
        time.sleep(0.2)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True
