"""Every printed line as one JSON log line (``python -m ops.log_wrap wrap``), secrets masked."""

from __future__ import annotations

import json
import subprocess
import sys

SECRET = "hunter2"


def wrapped(text: str) -> list[str]:
    """``text`` through ``python -m ops.log_wrap wrap``, as ``control.sh`` pipes a process's
    output into its log file when ``LOG_FORMAT=json``."""
    done = subprocess.run([sys.executable, "-m", "ops.log_wrap", "wrap"], input=text.encode(),
                          capture_output=True, timeout=30, check=True)
    return done.stdout.decode().splitlines()


def test_wrapped_output_is_json_on_every_line_with_logged_lines_kept_as_they_are() -> None:
    logged = json.dumps({"time": "t", "level": "DEBUG", "logger": "x", "message": "fetch 200"})
    printed = ("-------------- default@vm v5.7.0 (collider)\n\n"
               f"{logged}\n{{not json}}\nworker: Warm shutdown (MainProcess)\n")
    lines = [json.loads(line) for line in wrapped(printed)]  # every line parses
    assert lines[1] == json.loads(logged)
    assert [(e["logger"], e["level"], e["message"]) for e in lines if e is not lines[1]] == [
        ("stdout", "INFO", "-------------- default@vm v5.7.0 (collider)"),
        ("stdout", "INFO", "{not json}"),
        ("stdout", "INFO", "worker: Warm shutdown (MainProcess)")]  # the blank line dropped


def test_a_printed_line_is_masked_before_it_reaches_the_log() -> None:
    [line] = wrapped(f"Traceback: cannot reach amqp://crawl:{SECRET}@rabbit.lan:5672//\n")
    assert json.loads(line)["message"] == "Traceback: cannot reach amqp://crawl:***@rabbit.lan:5672//"


def test_wrap_names_its_usage_when_called_wrongly() -> None:
    done = subprocess.run([sys.executable, "-m", "ops.log_wrap"], capture_output=True,
                          text=True, timeout=30, check=False)
    assert done.returncode == 2 and "usage: python -m ops.log_wrap wrap" in done.stderr
