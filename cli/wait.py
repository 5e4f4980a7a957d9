"""Follow a job until it ends; exit with its outcome's code (as launch does).

    crawlchain wait JOB_ID [--json] [--timeout S]
"""

from __future__ import annotations

import argparse

from cli import _follow


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("job_id", help="the job's id (crawlchain jobs lists them)")
    _follow.arguments(parser)


def run(args: argparse.Namespace) -> int:
    return _follow.follow(_follow.handle(args.job_id), args)
