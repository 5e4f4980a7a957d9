"""Run one step on one live URL, with no worker and no broker, and show what it yields.

    crawlchain try forum.web.thread http://127.0.0.1:8765/forum/t/1017
    crawlchain try demo.h5.feed --params '{"page": 2}' --set base_url=http://127.0.0.1:8765

Like ``scrapy parse``: the request the step builds, the status, the items it would
store, and the units it would spawn through each chain that uses the step. A URL is
the step's ``url`` param; other inputs come as ``--params`` JSON. Nothing is stored and
nothing is sent. Exit code 0 when the page parsed, 1 when it did not.
"""

from __future__ import annotations

import argparse
import json
from typing import Any


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("step", help="the step's name, site.platform.step")
    parser.add_argument("url", nargs="?", help="the URL to fetch (the step's url param)")
    parser.add_argument("--params", default="{}", help="the step's params, as JSON")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a site setting (base_url=...)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def run(args: argparse.Namespace) -> int:
    from chains.commands._params import parse_pairs
    from chains.runtime.trial import try_step

    params = json.loads(args.params)
    if args.url:
        params["url"] = args.url
    result = try_step(args.step, params, parse_pairs(args.set, "setting"))
    if args.json:
        print(json.dumps(result, default=str))
    else:
        show(result)
    return 0 if result["error"] is None else 1


def show(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.pretty import Pretty
    from rich.table import Table

    console = Console()
    request = result["request"]
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
