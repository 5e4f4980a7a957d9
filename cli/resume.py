"""Resume a paused job and follow it to its end (or --detach); exit codes as for launch.

    crawlchain resume JOB_ID [--detach] [--json]
"""

from __future__ import annotations

import argparse

from cli import _follow


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("job_id", help="the job's id (crawlchain jobs lists them)")
    _follow.arguments(parser)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from chains.runtime.job_control import JobStateError

    job = _follow.handle(args.job_id)
    try:
        sent = job.resume()
    except JobStateError as exc:
        raise SystemExit(str(exc)) from None
    Console(stderr=args.json).print(f"job {job.job_id} resumed: {sent} parked units sent again")
    return _follow.follow(job, args)
