"""Log records leave with URL passwords and secret query values masked."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest

from utils.logs import RedactSecrets, redact_handlers

SECRET = "hunter2"


@pytest.fixture
def logged() -> Iterator[tuple[logging.Logger, io.StringIO]]:
    """A logger whose one handler writes formatted records, redacted, to a buffer."""
    out = io.StringIO()
    logger = logging.getLogger("tests.utils.test_logs")
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    redact_handlers(logger)
    yield logger, out
    logger.removeHandler(handler)


def test_arguments_of_a_message_are_masked(logged: tuple[logging.Logger, io.StringIO]) -> None:
    logger, out = logged
    logger.warning("state plane %s unreachable (%s)", f"redis://:{SECRET}@r:6379/0", 3)
    assert out.getvalue() == "WARNING state plane redis://:***@r:6379/0 unreachable (3)\n"


def test_a_traceback_whose_cause_quotes_a_secret_is_masked(
        logged: tuple[logging.Logger, io.StringIO]) -> None:
    logger, out = logged
    try:
        try:
            raise OSError(f"cannot reach http://crawler:{SECRET}@10.0.0.7:3128")
        except OSError as cause:
            raise RuntimeError("proxy refresh failed") from cause
    except RuntimeError:
        logger.exception("refresh of https://h/feed?api_key=%s failed", SECRET)
    text = out.getvalue()
    assert SECRET not in text
    assert "http://crawler:***@10.0.0.7:3128" in text and "api_key=***" in text
    assert "Traceback" in text and "RuntimeError: proxy refresh failed" in text


def test_a_line_without_secrets_is_left_alone(logged: tuple[logging.Logger, io.StringIO]) -> None:
    logger, out = logged
    logger.info("unit %s done in %.1f s", "u-1", 0.25)
    assert out.getvalue() == "INFO unit u-1 done in 0.2 s\n"


def test_the_filter_is_put_on_each_handler_once(
        logged: tuple[logging.Logger, io.StringIO]) -> None:
    logger, _ = logged
    redact_handlers(logger)
    handler = logger.handlers[-1]
    assert sum(isinstance(f, RedactSecrets) for f in handler.filters) == 1
