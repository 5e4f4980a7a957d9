"""Logging a cluster owner can tune: ``LOG_LEVEL`` and ``LOG_FORMAT=text|json``.

Every process ``control.sh`` starts reads the same two variables: Celery's worker and
beat take the level as ``--loglevel``, and the project's own entry points call
``configure()`` first thing. ``json`` writes one JSON object per line, for a log
pipeline; ``text`` is the usual ``time level logger: message``. Either way the fields a
caller passes as ``extra`` are kept (JSON keys, or ``key=value`` after the text)::

    log.debug("fetch", extra={"site": "demo", "step": "h5.feed", "status": 200, "ms": 41})

The runtime logs each fetch with ``log_fetch`` (DEBUG) and each job's start and end
with ``log_job`` (INFO), so every line of a kind carries the same fields.

With ``LOG_FORMAT=json``, ``control.sh`` pipes each process's output through
``python -m ops.log_wrap`` (every printed line as JSON).

A Celery process configures its own handlers; ``reformat_handlers`` (connected to
Celery's ``after_setup_logger`` signal) gives them this module's formatter and level.

Secrets never reach a line: errors raised on purpose are masked when built
(``exceptions.CrawlError``), and ``RedactSecrets``, on every handler ``configure`` and
``reformat_handlers`` touch (``redact_handlers`` for any other), masks the finished
text of each record (message, ``extra`` fields, traceback, stack) with
``utils.urls.redact_text``: a line can quote a library's exception or a traceback
raised elsewhere.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from typing import Any, TextIO

from utils.urls import redact_data, redact_text, redact_url

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
FORMATS = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_TRACEBACKS = logging.Formatter()
# what every LogRecord carries; anything else on a record came from ``extra``
_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {
    "message", "asctime", "taskName"}


def extras(record: logging.LogRecord) -> dict[str, Any]:
    """The fields a caller added with ``extra=...``, in the order given."""
    return {k: v for k, v in record.__dict__.items() if k not in _STANDARD and
            not k.startswith("_")}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ``time`` (UTC, ISO 8601), ``level``, ``logger``,
    ``message``, the ``extra`` fields, and ``exc`` (the traceback) when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        moment = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        entry: dict[str, Any] = {
            "time": f"{moment}.{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            **extras(record),
        }
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    """``time level logger: message key=value ...``."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        fields = " ".join(f"{k}={v}" for k, v in extras(record).items())
        if not fields:
            return line
        head, newline, tail = line.partition("\n")  # fields stay on the message's line
        return f"{head} {fields}{newline}{tail}"


def level_from_env(environ: dict[str, str] | None = None) -> str:
    """``LOG_LEVEL`` (default ``INFO``), checked."""
    value = (environ if environ is not None else os.environ).get("LOG_LEVEL", "INFO")
    level = value.strip().upper() or "INFO"
    if level not in LEVELS:
        raise ValueError(f"LOG_LEVEL={value!r}: expected one of {', '.join(LEVELS)}")
    return level


def format_from_env(environ: dict[str, str] | None = None) -> str:
    """``LOG_FORMAT`` (default ``text``), checked."""
    value = (environ if environ is not None else os.environ).get("LOG_FORMAT", "text")
    chosen = value.strip().lower() or "text"
    if chosen not in FORMATS:
        raise ValueError(f"LOG_FORMAT={value!r}: expected text or json")
    return chosen


def formatter(fmt: str | None = None) -> logging.Formatter:
    """The formatter ``LOG_FORMAT`` (or ``fmt``) names."""
    return JsonFormatter() if (fmt or format_from_env()) == "json" else TextFormatter()


def configure(level: str | None = None, fmt: str | None = None,
              stream: TextIO | None = None) -> None:
    """The root logger: one handler on ``stream`` (stderr), the level and the format from
    the arguments or ``LOG_LEVEL`` / ``LOG_FORMAT``. Called again, it replaces its handler."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(formatter(fmt))
    root = logging.getLogger()
    for old in root.handlers[:]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level or level_from_env())
    redact_handlers(root)


def reformat_handlers(logger: logging.Logger | None = None, **_: Any) -> None:
    """Give a configured logger's handlers this module's formatter and ``LOG_LEVEL``.

    Signature of Celery's ``after_setup_logger`` / ``after_setup_task_logger`` receivers,
    so a worker connects it as it is: ``after_setup_logger.connect(reformat_handlers)``.
    """
    target = logger or logging.getLogger()
    chosen = formatter()
    for handler in target.handlers:
        handler.setFormatter(chosen)
    target.setLevel(level_from_env())
    redact_handlers(target)


def log_fetch(log: logging.Logger, *, site: str, step: str, url: str, status: int,
              nbytes: int, seconds: float, proxy: str | None = None,
              job_id: str | None = None) -> None:
    """One DEBUG line per fetch: site, step, the URL redacted, status (0: no response),
    body bytes, milliseconds and the proxy's id (none: direct). Free when DEBUG is off."""
    if not log.isEnabledFor(logging.DEBUG):
        return
    shown = redact_url(url)
    log.debug("fetch %s %s", status, shown, extra={
        "site": site, "step": step, "url": shown, "status": status, "bytes": nbytes,
        "ms": round(seconds * 1000, 1), "proxy": proxy, "job_id": job_id})


def log_job(log: logging.Logger, event: str, job_id: str, **fields: Any) -> None:
    """One INFO line for a job's ``started`` or ``finished`` (chain, totals...)."""
    log.info("job %s %s", job_id, event, extra={"job_id": job_id, "event": event, **fields})


class RedactSecrets(logging.Filter):
    """Masks credentials in a record's message, its ``extra`` fields (Celery puts a
    task's ``data`` there), exception text and stack info."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = redact_text(message)
        if masked != message:
            record.msg, record.args = masked, None
        for key, value in extras(record).items():
            shown = redact_data(value)
            if shown != value:
                setattr(record, key, shown)
        if record.exc_info and not record.exc_text:  # formatters reuse exc_text
            record.exc_text = _TRACEBACKS.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact_text(record.exc_text)
        if record.stack_info:
            record.stack_info = redact_text(record.stack_info)
        return True


def redact_handlers(logger: logging.Logger | None = None) -> None:
    """Put one ``RedactSecrets`` on every handler of ``logger`` (the root by default)."""
    for handler in (logger or logging.getLogger()).handlers:
        if not any(isinstance(f, RedactSecrets) for f in handler.filters):
            handler.addFilter(RedactSecrets())
