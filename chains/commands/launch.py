"""Launch a declared chain and follow it to its end (or --detach).

    crawlchain launch demo page=1
    crawlchain launch forum --set base_url=http://127.0.0.1:9000/forum --json

``key=value`` pairs are the start step's params; ``--set key=value`` sets a site's
setting for this job only (``base_url``, or any field of the site's settings).
Exit code: 0 finished, 3 finished with failures, 4 cancelled, 1 not ended within
--timeout (or stopped following), 2 a bad command line.
"""

from __future__ import annotations

import argparse

from chains.commands import _follow


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", help="the chain's name (chains/<site>.py)")
    parser.add_argument("params", nargs="*", help="key=value params of the start step")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a site setting for this job (repeatable)")
    _follow.arguments(parser)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from chains.commands._params import parse_pairs
    from chains.runtime.model import get_chain

    chain = get_chain(args.name)
    job = chain.launch(**parse_pairs(args.params), **parse_pairs(args.set, "setting"))
    Console(stderr=args.json).print(f"launched job {job.job_id} ({args.name})")
    return _follow.follow(job, args)
