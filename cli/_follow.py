"""Following a job to its end, as ``launch``, ``retry``, ``resume`` and ``wait`` do.

They wait by default: a live view on a terminal, the summary at the end, and the exit
code of the job's final state (``Job.EXIT_CODES``: 0 finished, 3 finished with
failures, 4 cancelled, 1 not ended in time). ``--detach`` returns at once; Ctrl-C
stops following, never the job.
"""

from __future__ import annotations

import argparse
import json
import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chains.runtime.job import Job


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--detach", action="store_true",
                        help="return at once (exit 0): the job runs on; `crawlchain wait "
                        "JOB_ID` follows it later")
    parser.add_argument("--watch", action="store_true",
                        help="draw the live progress view even when not on a terminal")
    parser.add_argument("--json", action="store_true",
                        help="print the final summary as one JSON object on the last line")
    parser.add_argument("--timeout", type=float, default=None,
                        help="stop waiting after this many seconds (exit 1); default: none")


def follow(job: Job, args: argparse.Namespace) -> int:
    """Wait for ``job`` as the arguments say; print its summary; return the exit code."""
    from rich.console import Console

    from chains.runtime.job import EXIT_CODES, JobTimeout
    from chains.runtime.ledger import TERMINAL
    from chains.runtime.report import print_failures, print_summary, watch

    if args.detach:
        return 0
    console = Console(stderr=args.json)
    timeout = math.inf if args.timeout is None else args.timeout
    try:
        if args.watch or (console.is_terminal and not args.json):
            status = watch(job.status, timeout, console)
            print_failures(status, console)  # the live view already shows the table
        else:
            try:
                status = job.wait(timeout=timeout)
            except JobTimeout:
                status = job.status()
            print_summary(status, console)
    except KeyboardInterrupt:
        console.print(f"stopped following; job {job.job_id} runs on "
                      f"(crawlchain wait {job.job_id} follows it again)")
        return 130
    if status["state"] not in TERMINAL:
        console.print(f"[red]job {job.job_id} is still {status['state']} after "
                      f"{args.timeout}s[/red]; crawlchain wait {job.job_id} follows it")
    if args.json:
        print(json.dumps(status))
    return EXIT_CODES.get(status["state"], 1)


def handle(job_id: str) -> Job:
    """The handle of an existing job, on this host's cluster (``STATE_REDIS_URL``); exits
    with a one-line reason when the state Redis does not answer or the job is unknown."""
    import redis

    from chains.cluster import job
    from config import get_settings
    from utils.urls import redact_url

    url = get_settings().state.redis_url
    client = redis.Redis.from_url(url, socket_connect_timeout=2)
    try:
        client.ping()
    except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
        raise SystemExit(f"the state Redis at {redact_url(url)} does not answer ({exc}): "
                         "start the cluster (./control.sh start) or set STATE_REDIS_URL") from None
    finally:
        client.close()
    try:
        return job(job_id)
    except KeyError as exc:
        raise SystemExit(str(exc.args[0])) from None
