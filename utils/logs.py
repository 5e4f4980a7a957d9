"""Log records with URL passwords, user tokens and secret query values masked.

Errors raised on purpose are masked when built (``exceptions.CrawlError``), but a
log line can also quote a library's exception, a setting or a traceback whose
causes were raised elsewhere. ``RedactSecrets`` masks the finished text of each
record (message, traceback, stack) with ``utils.urls.redact_text`` before any
handler writes it; ``redact_handlers`` puts it on every handler of a logger,
which is where it must sit to see records that propagate from child loggers.
"""

from __future__ import annotations

import logging

from utils.urls import redact_text

_TRACEBACKS = logging.Formatter()


class RedactSecrets(logging.Filter):
    """Masks credentials in a record's message, exception text and stack info."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = redact_text(message)
        if masked != message:
            record.msg, record.args = masked, None
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
