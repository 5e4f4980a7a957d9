"""The cluster at a glance: a live dashboard, or one snapshot with --once / --json.

Options are those of ``python -m monitor`` (``crawlchain monitor --help``).
"""

from __future__ import annotations

import argparse

PASSES_REST = True


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("options", nargs="*",
                        help="--once, --json, --interval S, --jobs N, alert rules "
                        "(crawlchain monitor --help)")


def run(args: argparse.Namespace) -> int:
    from cli._errors import OneLineParser
    from monitor.__main__ import main

    return main(args.rest, OneLineParser)
