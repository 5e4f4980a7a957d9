"""Run a job's failed units again, in the same job, and follow it to its end.

    crawlchain retry JOB_ID [--step STEP] [--error CLASS] [--detach] [--json]

Each failed unit (only those of --step, or only those that failed with the error
class --error, e.g. NotFound) moves back from failed to pending and runs again; its
children join the job. The job's counts stay exact: a unit that now succeeds counts
as done, not as failed. Exit codes as for launch.
"""

from __future__ import annotations

import argparse

from cli import _follow


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("job_id", help="the job's id (crawlchain jobs lists them)")
    parser.add_argument("--step", help="only the failed units of this step")
    parser.add_argument("--error", metavar="CLASS",
                        help="only the units that failed with this error class")
    _follow.arguments(parser)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from chains.runtime.job_control import JobStateError

    job = _follow.handle(args.job_id)
    try:
        sent = job.retry_failed(args.step, args.error)
    except JobStateError as exc:
        raise SystemExit(str(exc)) from None
    Console(stderr=args.json).print(f"job {job.job_id}: {sent} failed units sent again")
    return _follow.follow(job, args)
