"""Launch a declared chain and follow it to its end (or --detach).

    crawlchain launch demo page=1
    crawlchain launch forum --set base_url=http://127.0.0.1:9000/forum --json
    crawlchain launch crawl --start https://docs.example.org/ --max-depth 2 --watch

``key=value`` pairs are the start step's params; ``--set key=value`` sets a site's
setting for this job only (``base_url``, or any field of the site's settings).
``--http-cache`` sends this job's fetches through the development cache (responses
on local disk, replayed on the next run without the network). The generic crawl
(``crawl``) takes its own options instead of params (``chains/crawl.py``): ``--start``
(repeatable), ``--allow-domain``, ``--max-depth``, ``--allow``, ``--deny``,
``--max-pages``, ``--sitemap``, ``--no-sitemaps``. Exit code: 0 finished, 3 finished
with failures, 4 cancelled, 1 not ended within --timeout (or stopped following), 2 a
bad command line.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from chains.commands import _follow

if TYPE_CHECKING:
    from chains.runtime.job import Job

CRAWL_OPTIONS = ("start", "allow_domain", "allow", "deny", "sitemap", "max_depth", "max_pages",
                 "no_sitemaps")


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", help="the chain's name (chains/<site>.py)")
    parser.add_argument("params", nargs="*", help="key=value params of the start step")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a site setting for this job (repeatable)")
    parser.add_argument("--http-cache", action="store_true",
                        help="fetch through the development cache (this job only)")
    _follow.arguments(parser)
    crawl = parser.add_argument_group("the generic crawl (launch crawl ...)")
    crawl.add_argument("--start", action="append", default=[], metavar="URL",
                       help="a start URL (repeatable; at least one)")
    crawl.add_argument("--allow-domain", action="append", default=[], metavar="DOMAIN",
                       help="a registrable domain to stay on (repeatable; default: the "
                            "start URLs')")
    crawl.add_argument("--max-depth", type=int, metavar="N",
                       help="links followed from a start page or a sitemap (default 3)")
    crawl.add_argument("--allow", action="append", default=[], metavar="REGEX",
                       help="follow only links matching one of these (repeatable)")
    crawl.add_argument("--deny", action="append", default=[], metavar="REGEX",
                       help="never follow links matching one of these (repeatable)")
    crawl.add_argument("--max-pages", type=int, metavar="N",
                       help="fetch at most N pages, then end the job")
    crawl.add_argument("--sitemap", action="append", default=[], metavar="URL",
                       help="a sitemap to read besides robots.txt's (repeatable)")
    crawl.add_argument("--no-sitemaps", action="store_true",
                       help="do not read the sitemaps robots.txt names")


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    try:
        job = _launch(args)
    except ValueError as exc:
        raise SystemExit(f"crawlchain launch {args.name}: {exc}") from None
    Console(stderr=args.json).print(f"launched job {job.job_id} ({args.name})")
    return _follow.follow(job, args)


def _launch(args: argparse.Namespace) -> Job:
    """The job: the generic crawl from its options, any other chain from its params."""
    from chains.commands._params import parse_pairs
    from chains.runtime.model import get_chain

    given = [name for name in CRAWL_OPTIONS if getattr(args, name) not in (None, [], False)]
    if args.name == "crawl":
        if args.params or args.set:
            raise ValueError("the generic crawl takes --start, --allow-domain, --max-depth, "
                             "--allow, --deny, --max-pages and --sitemap, not key=value pairs")
        from chains.crawl import DEFAULT_DEPTH, launch_crawl

        return launch_crawl(args.start, args.allow_domain,
                            DEFAULT_DEPTH if args.max_depth is None else args.max_depth,
                            args.allow, args.deny, args.max_pages, args.sitemap,
                            not args.no_sitemaps, args.http_cache)
    if given:
        options = ", ".join("--" + name.replace("_", "-") for name in given)
        raise ValueError(f"{options}: options of the generic crawl (launch crawl), not of "
                         f"{args.name!r}")
    chain = get_chain(args.name)
    extra = {"http_cache": True} if args.http_cache else {}
    return chain.launch(**parse_pairs(args.params), **parse_pairs(args.set, "setting"), **extra)
