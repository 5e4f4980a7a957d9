"""Launch a declared chain; with --watch, show its progress until it ends.

    crawlchain launch demo page=1 --watch
    crawlchain launch forum --set base_url=http://127.0.0.1:9000/forum --json

``key=value`` pairs are the start step's params; ``--set key=value`` sets a site's
setting for this job only (``base_url``, or any field of the site's settings).
``--json`` prints the final summary as one JSON object on the last line. Exit code:
0 when the job finished, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
from typing import Any


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", help="the chain's name (chains/<site>.py)")
    parser.add_argument("params", nargs="*", help="key=value params of the start step")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a site setting for this job (repeatable)")
    parser.add_argument("--watch", action="store_true", help="show progress until it ends")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON last")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds to wait with --watch or --json")


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from chains.commands._params import parse_pairs
    from chains.runtime.job import TERMINAL, Job, JobTimeout
    from chains.runtime.model import get_chain
    from chains.runtime.report import print_failures, print_summary, watch

    chain = get_chain(args.name)
    job = chain.launch(**parse_pairs(args.params), **parse_pairs(args.set, "setting"))
    console = Console(stderr=args.json)
    console.print(f"launched job {job.job_id} ({args.name})")
    if not (args.watch or args.json):
        return 0

    def wait(handle: Job, timeout: float) -> dict[str, Any]:
        try:
            return dict(handle.wait(timeout=timeout))
        except JobTimeout:
            return dict(handle.status())

    status = watch(job, args.timeout, console) if args.watch else wait(job, args.timeout)
    if status["state"] not in TERMINAL:
        console.print(f"[red]job {job.job_id} did not end within {args.timeout}s[/red]")
    if args.watch:
        print_failures(status, console)  # the live view already shows the table
    else:
        print_summary(status, console)
    if args.json:
        print(json.dumps(status))
    return 0 if status["state"] == "finished" else 1
