"""``python -m monitor [--once] [--json] [--interval S]``: the cluster at a glance.

Without ``--once``: a live dashboard (jobs with progress bars, pages/s, error
reasons, queue depths, workers, sites, pools, alerts) redrawn every ``--interval``
seconds until Ctrl-C. ``--once`` draws it once as text. ``--json`` (with or
without ``--once``) prints one snapshot as a JSON object on the last line, for
scripts. The alert options (``--stall-s``, ``--failure-rate``, ``--webhook``)
make the live view raise alerts too."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from typing import TYPE_CHECKING

from rich.console import Console

from monitor.alerts import Watcher, notifier_for, rules_arguments, rules_from
from monitor.dashboard import Dashboard, live, render_text
from monitor.snapshot import snapshot

if TYPE_CHECKING:
    from redis import Redis

    from config import Settings


def parse(argv: list[str],
          parser_class: type[argparse.ArgumentParser] = argparse.ArgumentParser
          ) -> argparse.Namespace:
    parser = parser_class(prog="crawlchain monitor", description=__doc__,
                          formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--once", action="store_true", help="one snapshot, then exit")
    parser.add_argument("--json", action="store_true", help="print one snapshot as JSON")
    parser.add_argument("--interval", type=float, default=2.0, help="seconds between redraws")
    parser.add_argument("--jobs", type=int, default=20, help="how many newest jobs to show")
    parser.add_argument("--inspect-timeout", type=float, default=1.0,
                        help="seconds to wait for workers to answer")
    parser.add_argument("--queue", action="append", default=[],
                        help="also show this queue (found automatically on Redis)")
    rules_arguments(parser)
    return parser.parse_args(argv)


def main(argv: list[str],
         parser_class: type[argparse.ArgumentParser] = argparse.ArgumentParser) -> int:
    args = parse(argv, parser_class)
    from config import get_settings
    from ops.state import StateUnavailable, state_for_reading

    settings = get_settings()
    try:
        with state_for_reading(settings.state.redis_url) as (client, stopped):
            return show(args, settings, client, stopped)
    except StateUnavailable as exc:
        raise SystemExit(str(exc)) from None


def show(args: argparse.Namespace, settings: Settings, client: Redis,
         stopped: str | None) -> int:
    """Draw or print the snapshot; with the cluster ``stopped``, its jobs only."""
    from worker import make_app

    app = None if stopped else make_app(settings)
    if stopped:
        print(f"monitor: {stopped}", file=sys.stderr)

    def take() -> dict[str, object]:
        return snapshot(client, app, job_limit=args.jobs, inspect_timeout=args.inspect_timeout,
                        queues=args.queue, stopped=stopped)

    if args.json:
        print(json.dumps(take(), default=str))
    elif args.once or stopped:
        console = Console()
        print(render_text(Dashboard(), take(), console.width if console.is_terminal else 160))
    else:
        watcher = Watcher(rules_from(args), notifier_for(args.webhook))
        with contextlib.suppress(KeyboardInterrupt):
            live(take, Dashboard(watcher), Console(), args.interval)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
