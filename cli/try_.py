"""Run one step on one live URL, with no worker and no broker, and show what it yields.

    crawlchain try forum.web.thread http://127.0.0.1:8765/forum/t/1017
    crawlchain try demo.h5.feed --params '{"page": 2}' --set base_url=http://127.0.0.1:8765

Like ``scrapy parse``: the request the step builds, exactly as a worker sends it (the
site's settings, default headers and resource providers: the cluster's pools when its
Redis answers), the status, the items it would store, and the units it would spawn
through each chain that uses the step. A URL is
the step's ``url`` param; other inputs come as ``--params`` JSON. Nothing is stored and
nothing is sent. Exit code 0 when the page parsed, 1 when it did not (the line says
why: a status, a ban, no cookie in the pool, the parser's error), 2 when the step or
its params are wrong.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from external_interface.providers.bundle import Providers


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("step", help="the step's name, site.platform.step")
    parser.add_argument("url", nargs="?", help="the URL to fetch (the step's url param)")
    parser.add_argument("--params", default="{}", help="the step's params, as JSON")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a site setting (base_url=...)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def run(args: argparse.Namespace) -> int:
    from chains.runtime.registry import step
    from chains.runtime.trial import try_step
    from cli._params import parse_pairs

    step(args.step)  # a misspelt step is named before anything else
    try:
        params = json.loads(args.params)
    except ValueError as exc:
        raise SystemExit(f"--params {args.params!r} is not JSON ({exc}): write it as "
                         """--params '{"page": 2}'""") from None
    if not isinstance(params, dict):
        raise SystemExit(f"--params {args.params!r}: expected a JSON object of the step's "
                         """params, like '{"page": 2}'""")
    if args.url:
        params["url"] = args.url
    step(args.step).params(params)  # bad params are the command line's: exit 2
    result = try_step(args.step, params, parse_pairs(args.set, "setting"), cluster_providers())
    if args.json:
        print(json.dumps(result, default=str))
    else:
        show(result)
    return 0 if result["error"] is None else 1


def cluster_providers() -> Providers | None:
    """The cluster's resource pools when its state Redis answers at once (a worker's
    cookies, devices and proxies); None otherwise: ``try`` then builds its own."""
    import redis

    from chains.runtime.context import state_redis
    from config import get_settings
    from external_interface.providers.bundle import Providers

    settings = get_settings()
    probe = redis.Redis.from_url(settings.state.redis_url, socket_connect_timeout=0.5,
                                 socket_timeout=0.5)
    try:
        probe.ping()
    except (redis.RedisError, OSError):
        return None
    finally:
        probe.close()
    return Providers.from_settings(settings, state_redis(settings.state.redis_url))


def show(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.pretty import Pretty
    from rich.table import Table

    console = Console()
    request = result["request"]
    if request is not None:
        console.print(f"[bold]{request['method']} {request['url']}[/bold]")
    if result["status"] is not None:
        console.print(f"status {result['status']}, {result['bytes']} bytes, "
                      f"{result['elapsed_s']:.3f} s")
    if result["error"] is not None:
        console.print(f"[red]{result['error']}[/red]")
        return
    for collection, items in result["items"].items():
        table = Table(title=f"{len(items)} {collection}")
        for name in items[0]:
            table.add_column(name, overflow="fold")
        for item in items:
            table.add_row(*(str(v) for v in item.values()))
        console.print(table)
    if result["next_page"] is not None:
        console.print("next page:", Pretty(result["next_page"]))
    for chain, spawned in result["spawns"].items():
        for step, units in spawned.items():
            console.print(f"[bold]{chain}[/bold] -> {step}: {len(units)} units")
            for unit in units[:5]:
                console.print("   ", Pretty(unit))
