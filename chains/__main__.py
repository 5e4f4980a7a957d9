"""``python -m chains launch NAME [key=value ...] [--watch] [--json] [--timeout S]``.

Launches a chain declared under ``chains/`` and, with ``--watch``, shows live
progress until the job ends. ``--json`` prints the final summary as one JSON
object on the last line. Exit code 0 when the job finished, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rich.console import Console

from chains.job import TERMINAL, JobTimeout
from chains.registry import get_chain
from monitor.report import print_failures, print_summary, watch


def parse_value(text: str) -> Any:
    """``3`` -> 3, ``true`` -> True, anything else stays a string."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_params(pairs: list[str]) -> dict[str, Any]:
    params = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"bad param {pair!r}: expected key=value")
        params[key] = parse_value(value)
    return params


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m chains", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    launch = sub.add_parser("launch", help="launch a chain")
    launch.add_argument("name")
    launch.add_argument("params", nargs="*", help="key=value launch params")
    launch.add_argument("--watch", action="store_true", help="show progress until it ends")
    launch.add_argument("--json", action="store_true", help="print the summary as JSON last")
    launch.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args(argv)

    job = get_chain(args.name).launch(**parse_params(args.params))
    console = Console(stderr=args.json)
    console.print(f"launched job {job.job_id} ({args.name})")
    if not (args.watch or args.json):
        return 0
    status = watch(job, args.timeout, console) if args.watch else _wait(job, args.timeout)
    if status["state"] not in TERMINAL:
        console.print(f"[red]job {job.job_id} did not end within {args.timeout}s[/red]")
    if args.watch:
        print_failures(status, console)  # the live view already shows the table
    else:
        print_summary(status, console)
    if args.json:
        print(json.dumps(status))
    return 0 if status["state"] == "finished" else 1


def _wait(job: Any, timeout: float) -> dict[str, Any]:
    try:
        return dict(job.wait(timeout=timeout))
    except JobTimeout:
        return dict(job.status())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
