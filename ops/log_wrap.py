"""Every line a process prints as one JSON log line: ``python -m ops.log_wrap wrap``.

With ``LOG_FORMAT=json``, ``control.sh`` pipes each process's output through it, so that
every line of its log file is JSON: a line a process prints outside logging (Celery's
banner and shutdown notice, a warning given before logging is set up, a crash's
traceback) becomes an object of its own (``"logger": "stdout"``), its secrets masked.
"""

from __future__ import annotations

import io
import json
import logging
import sys
from typing import TextIO

from utils.logs import JsonFormatter
from utils.urls import redact_text

RAW_LOGGER = "stdout"  # the logger named on a line a process printed outside logging


def as_json_line(text: str) -> str:
    """One printed line as one JSON log line: a JSON object passes as it is; any other
    text becomes ``{"time", "level": "INFO", "logger": "stdout", "message"}``, masked."""
    if text.startswith("{") and text.endswith("}"):
        try:
            if isinstance(json.loads(text), dict):
                return text
        except ValueError:
            pass
    record = logging.LogRecord(RAW_LOGGER, logging.INFO, "", 0, redact_text(text), None, None)
    return JsonFormatter().format(record)


def wrap_lines(source: TextIO, sink: TextIO) -> None:
    """Copy ``source`` to ``sink`` line by line, each as JSON (``as_json_line``), flushed
    as it comes so a log follower sees it at once; blank lines are dropped."""
    for line in source:
        text = line.rstrip("\r\n")
        if text.strip():
            sink.write(as_json_line(text) + "\n")
            sink.flush()


def main(argv: list[str]) -> int:
    """``wrap``: standard input to standard output, every line JSON (``wrap_lines``)."""
    if argv != ["wrap"]:
        print("usage: python -m ops.log_wrap wrap  (stdin -> stdout, every line JSON)",
              file=sys.stderr)
        return 2
    wrap_lines(io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"),
               io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", errors="replace"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
