"""Logging a cluster owner can tune: LOG_LEVEL and LOG_FORMAT=text|json."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from utils.logs import (
    RedactSecrets,
    configure,
    format_from_env,
    level_from_env,
    log_fetch,
    log_job,
    redact_handlers,
    reformat_handlers,
)


@pytest.fixture(autouse=True)
def root_restored() -> Iterator[None]:
    """Each test configures the root logger; put pytest's handlers back afterwards."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def test_json_lines_each_parse_and_keep_the_extra_fields() -> None:
    out = io.StringIO()
    configure("DEBUG", "json", out)
    log = logging.getLogger("crawlchain.fetch")
    log.debug("fetch", extra={"site": "demo", "step": "h5.feed", "status": 200, "ms": 41})
    try:
        raise ValueError("bad page")
    except ValueError:
        log.exception("parse failed", extra={"url": "http://127.0.0.1/x"})
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert first["message"] == "fetch" and first["level"] == "DEBUG"
    assert first["logger"] == "crawlchain.fetch" and first["time"].endswith("Z")
    assert (first["site"], first["step"], first["status"], first["ms"]) == (
        "demo", "h5.feed", 200, 41)
    assert second["url"] == "http://127.0.0.1/x" and "ValueError: bad page" in second["exc"]


def test_text_lines_carry_the_extra_fields_as_key_value() -> None:
    out = io.StringIO()
    configure("INFO", "text", out)
    logging.getLogger("job").info("job finished", extra={"job_id": "j1", "units": 243})
    line = out.getvalue().strip()
    assert line.endswith("INFO job: job finished job_id=j1 units=243")


def test_the_level_filters_lines_below_it() -> None:
    out = io.StringIO()
    configure("WARNING", "json", out)
    logging.getLogger("x").info("quiet")
    logging.getLogger("x").warning("loud")
    assert [json.loads(line)["message"] for line in out.getvalue().splitlines()] == ["loud"]


def test_the_environment_chooses_level_and_format_and_says_what_is_wrong() -> None:
    assert level_from_env({}) == "INFO" and format_from_env({}) == "text"
    assert level_from_env({"LOG_LEVEL": "debug"}) == "DEBUG"
    assert format_from_env({"LOG_FORMAT": "JSON"}) == "json"
    with pytest.raises(ValueError, match="LOG_LEVEL='LOUD': expected one of DEBUG"):
        level_from_env({"LOG_LEVEL": "LOUD"})
    with pytest.raises(ValueError, match="LOG_FORMAT='xml': expected text or json"):
        format_from_env({"LOG_FORMAT": "xml"})


def test_handlers_a_framework_set_up_are_reformatted(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a Celery worker gets from ``after_setup_logger.connect(reformat_handlers)``."""
    monkeypatch.setenv("LOG_FORMAT", "json")
    monkeypatch.setenv("LOG_LEVEL", "DEBUG")
    out = io.StringIO()
    logger = logging.getLogger("celery-like")
    logger.propagate = False
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("[%(asctime)s: %(levelname)s] %(message)s"))
    logger.addHandler(handler)
    reformat_handlers(logger=logger, loglevel=20, logfile=None, format="", colorize=False)
    logger.debug("Task received", extra={"task": "demo.h5.feed"})
    assert json.loads(out.getvalue()) | {"time": ""} == {
        "time": "", "level": "DEBUG", "logger": "celery-like", "message": "Task received",
        "task": "demo.h5.feed"}
    logger.removeHandler(handler)


def test_a_fetch_line_has_the_fields_a_site_is_debugged_with_and_no_secret() -> None:
    out = io.StringIO()
    configure("DEBUG", "json", out)
    log_fetch(logging.getLogger("crawlchain.fetch"), site="demo", step="h5.feed",
              url="http://127.0.0.1:8765/h5/feed?page=2&token=s3cret", status=200,
              nbytes=5120, seconds=0.0412, proxy="exit-2", job_id="j1")
    [line] = [json.loads(text) for text in out.getvalue().splitlines()]
    assert line["message"] == "fetch 200 http://127.0.0.1:8765/h5/feed?page=2&token=***"
    assert {k: line[k] for k in ("site", "step", "status", "bytes", "ms", "proxy")} == {
        "site": "demo", "step": "h5.feed", "status": 200, "bytes": 5120, "ms": 41.2,
        "proxy": "exit-2"}
    assert "s3cret" not in out.getvalue()


def test_fetch_lines_are_not_written_above_debug_and_job_lines_are() -> None:
    out = io.StringIO()
    configure("INFO", "text", out)
    log = logging.getLogger("crawlchain")
    log_fetch(log, site="demo", step="h5.feed", url="http://x/", status=200, nbytes=1,
              seconds=0.1)
    log_job(log, "finished", "j1", chain="demo", units=243)
    assert out.getvalue().strip().endswith(
        "INFO crawlchain: job j1 finished job_id=j1 event=finished chain=demo units=243")


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


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_extra_fields_are_masked_in_either_format(fmt: str) -> None:
    out = io.StringIO()
    configure("INFO", fmt, out)
    logging.getLogger("celery.app.trace").info("Task demo.web.page succeeded", extra={
        "data": {"name": "demo.web.page", "args": f"[{{'url': 'https://h/p?token={SECRET}'}}]"},
        "proxy": f"http://crawler:{SECRET}@10.0.0.7:3128", "status": 200})
    text = out.getvalue()
    assert SECRET not in text and text.count("***") == 2
    assert "http://crawler:***@10.0.0.7:3128" in text and "token=***" in text


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
