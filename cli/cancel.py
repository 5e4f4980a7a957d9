"""Cancel a running or paused job: it ends now, its open units recorded as cancelled.

    crawlchain cancel JOB_ID

Messages still queued are acknowledged without work; a unit in flight finishes its
fetch but registers no children. What was stored stays stored.
"""

from __future__ import annotations

import argparse

from cli import _follow


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("job_id", help="the job's id (crawlchain jobs lists them)")


def run(args: argparse.Namespace) -> int:
    from chains.runtime.job_control import JobStateError

    job = _follow.handle(args.job_id)
    try:
        cancelled = job.cancel()
    except JobStateError as exc:
        raise SystemExit(str(exc)) from None
    print(f"job {job.job_id} cancelled; {cancelled} open units recorded as cancelled")
    return 0
