"""Export stored items to a file: a collection or a job, as JSON lines, CSV, ...

    crawlchain export shop_items --format csv --out shop.csv
    crawlchain export JOB_ID --out job.jsonl          # every item one job stored
    crawlchain export JOB_ID --gone --format csv      # the job's gone units: step, URL, why
    crawlchain export JOB_ID --failed                 # its failed units, the same way

Items are written as the parser made them (``--envelope``: each with its key, job and
times); ``crawlchain export --help`` says the rest. Output to a pipe that closes early
(``| head``) stops quietly.
"""

from __future__ import annotations

import argparse
import sys

PASSES_REST = True
UNIT_FORMATS = ("jsonl", "csv", "json")


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("options", nargs="*",
                        help="COLLECTION|JOB_ID [--format F] [--out FILE] [--job JOB_ID] "
                        "[--since WHEN] [--fields A,B] [--envelope] [--gone|--failed] "
                        "(crawlchain export --help)")


def run(args: argparse.Namespace) -> int:
    from cli._errors import OneLineParser
    from external_interface.storage.export import main

    if {"--gone", "--failed"} & set(args.rest):
        return export_units(args.rest)
    return main(args.rest, OneLineParser)


def export_units(argv: list[str]) -> int:
    """The gone or failed units of a job, one record each."""
    from cli import _follow
    from cli._errors import OneLineParser
    from external_interface.storage.export_formats import write_json, write_jsonl

    parser = OneLineParser(prog="crawlchain export JOB_ID --gone|--failed")
    parser.add_argument("job_id")
    which_units = parser.add_mutually_exclusive_group(required=True)
    which_units.add_argument("--gone", action="store_true")
    which_units.add_argument("--failed", action="store_true")
    parser.add_argument("--format", choices=UNIT_FORMATS, default="jsonl")
    parser.add_argument("--out", help="file to write (default: stdout)")
    given = parser.parse_args(argv)
    which = "gone" if given.gone else "failed"
    job = _follow.handle(given.job_id)
    if given.gone:
        rows = [g.__dict__ for g in job.ledger.gone_units(job.job_id)]
    else:
        rows = [{"unit_id": f.unit_id, "step": f.step, "url": f.url, "error": f.error,
                 "reason": f.reason} for f in job.ledger.failures(job.job_id)]
    out = open(given.out, "w", newline="", encoding="utf-8") if given.out else sys.stdout  # noqa: SIM115
    try:
        if given.format == "csv":
            import csv

            writer = csv.DictWriter(out, fieldnames=list(rows[0]) if rows else ["unit_id"])
            writer.writeheader()
            writer.writerows(rows)
        else:
            (write_jsonl if given.format == "jsonl" else write_json)(iter(rows), out)
    finally:
        if given.out:
            out.close()
    print(f"exported {len(rows)} {which} units of job {job.job_id} to {given.out or 'stdout'}",
          file=sys.stderr)
    return 0
