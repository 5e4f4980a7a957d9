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
``--max-pages``, ``--sitemap``, ``--no-sitemaps``, ``--rule``. Exit code: 0 finished, 3 finished
with failures, 4 cancelled, 1 not ended within --timeout (or stopped following), 2
refused before anything was queued (a bad command line, an unknown param or setting, a
start URL off the allowed domains, no worker on the chain's queues: the line says which
and how to fix it; with --detach a launch without a worker goes ahead and warns).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from cli import _follow

if TYPE_CHECKING:
    from chains.runtime.job import Job
    from chains.runtime.model import Chain, Rule
    from chains.runtime.preflight import WorkerPolicy

CRAWL_OPTIONS = ("start", "allow_domain", "allow", "deny", "sitemap", "max_depth", "max_pages",
                 "no_sitemaps", "rule")


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
    crawl.add_argument("--rule", action="append", default=[], metavar="REGEX=STEP",
                       help="pages whose URL matches REGEX are parsed by STEP too, its items "
                            "stored beside the page records (repeatable)")


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    try:
        job = _launch(args)
    except ValueError as exc:
        from exceptions import UserError

        if isinstance(exc, UserError):
            raise
        raise SystemExit(f"crawlchain launch {args.name}: {exc}") from None
    Console(stderr=args.json).print(f"launched job {job.job_id} ({args.name})")
    return _follow.follow(job, args)


def _launch(args: argparse.Namespace) -> Job:
    """The job: the generic crawl from its options, any other chain from its params;
    ``--detach`` launches when no worker consumes the chain's queues yet, and warns."""
    from chains.cluster import launch
    from chains.runtime.registry import chain as get_chain
    from cli._params import parse_pairs

    workers: WorkerPolicy | None = "warn" if args.detach else None
    given = [name for name in CRAWL_OPTIONS if getattr(args, name) not in (None, [], False)]
    if args.name == "crawl":
        if args.params or args.set:
            raise ValueError("the generic crawl takes --start, --allow-domain, --max-depth, "
                             "--allow, --deny, --max-pages and --sitemap, not key=value pairs")
        from chains.cluster import launch_crawl
        from chains.crawl import DEFAULT_DEPTH

        return launch_crawl(args.start, args.allow_domain,
                            DEFAULT_DEPTH if args.max_depth is None else args.max_depth,
                            args.allow, args.deny, args.max_pages, args.sitemap,
                            not args.no_sitemaps, args.http_cache,
                            [_rule(text) for text in args.rule], workers=workers)
    if given:
        options = ", ".join("--" + name.replace("_", "-") for name in given)
        raise ValueError(f"{options}: options of the generic crawl (launch crawl), not of "
                         f"{args.name!r}")
    chain = get_chain(args.name)
    params: dict[str, Any] = parse_pairs(args.params)
    settings = site_settings(chain, parse_pairs(args.set, "setting"))
    if args.http_cache:
        params["http_cache"] = True
    return launch(chain, settings=settings, workers=workers, **params)


def site_settings(chain: Chain, pairs: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``--set key=value`` for every site of the chain that has the setting; a key no
    site of it has is refused, the nearest setting named."""
    from chains.runtime.preflight import LaunchRefused, chain_sites, setting_names
    from chains.runtime.registry import site
    from utils.names import did_you_mean, listed

    out: dict[str, dict[str, Any]] = {}
    for key, value in pairs.items():
        owners = [s for s in chain_sites(chain) if key in site(s).settings.model_fields]
        if not owners:
            known = setting_names(chain)
            raise LaunchRefused(f"--set {key}: no site of chain {chain.name!r} has that "
                                f"setting{did_you_mean(key, known)} (settings: "
                                f"{listed(known)})", f"settings.{key}")
        for name in owners:
            out.setdefault(name, {})[key] = value
    return out


def _rule(text: str) -> Rule:
    """``--rule REGEX=STEP``: pages matching REGEX are parsed by STEP too."""
    from chains.runtime.model import Rule

    pattern, sep, step = text.rpartition("=")
    if not sep or not pattern or not step:
        raise ValueError(f"--rule {text!r}: write --rule 'REGEX=site.platform.step'")
    return Rule(pattern, step)
