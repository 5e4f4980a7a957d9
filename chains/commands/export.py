"""Export stored items to a file: a collection or a job, as JSON lines, CSV, ...

Options are those of ``python -m external_interface.storage.export``
(``crawlchain export --help``).
"""

from __future__ import annotations

import argparse

PASSES_REST = True


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("options", nargs="*",
                        help="COLLECTION|JOB_ID [--format F] [--out FILE] [--job JOB_ID]")


def run(args: argparse.Namespace) -> int:
    from external_interface.storage.export import main

    return main([*args.options, *args.rest])
