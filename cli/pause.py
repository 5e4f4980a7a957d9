"""Pause a running job, cluster-wide: no unit of it starts from now on on any worker.

    crawlchain pause JOB_ID

Units already fetching finish; queued ones are parked as workers take them, so
nothing is lost. ``crawlchain resume JOB_ID`` goes on exactly where it stopped.
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
        job.pause()
    except JobStateError as exc:
        raise SystemExit(str(exc)) from None
    print(f"job {job.job_id} paused; crawlchain resume {job.job_id} runs it on")
    return 0
