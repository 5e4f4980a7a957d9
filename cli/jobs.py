"""List recent jobs: id, chain, state, unit counts, started, elapsed.

    crawlchain jobs [--limit N] [--json]

Works with the cluster stopped too: the embedded Redis's files are read from a
throwaway copy (the monitor does the same).
"""

from __future__ import annotations

import argparse
import json
import sys


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--limit", type=int, default=20, help="how many of the newest jobs")
    parser.add_argument("--json", action="store_true", help="print them as one JSON array")


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from chains.runtime.job import history
    from chains.runtime.ledger import Ledger
    from chains.runtime.report import when
    from config import get_settings
    from ops.state import StateUnavailable, state_for_reading

    try:
        with state_for_reading(get_settings().state.redis_url) as (client, stopped):
            rows = history(Ledger(client), args.limit)
    except StateUnavailable as exc:
        raise SystemExit(str(exc)) from None
    if stopped:
        print(f"jobs: {stopped}", file=sys.stderr)
    if args.json:
        print(json.dumps(rows))
        return 0
    table = Table(title="jobs, newest first", title_justify="left")
    columns = ("job_id", "chain", "state", "done", "failed", "skipped", "gone", "items",
               "pending", "started", "elapsed")
    for name in columns:
        table.add_column(name, justify="left" if name in (*columns[:3], "started") else "right")
    for row in rows:
        table.add_row(*(str(row[c]) for c in columns[:-2]), when(row["created_at"]),
                      f"{row['elapsed_s']:.1f}s")
    Console().print(table if rows else "no jobs yet")
    return 0
