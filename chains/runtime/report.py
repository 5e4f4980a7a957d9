"""Job summaries for people: a per-step table, a live progress view while a job runs, and
the full report of ``Job.report()`` (times, throughput, failures grouped by reason)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from rich import box
from rich.console import Console, Group
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from chains.runtime.ledger import OUTCOMES, TERMINAL
from utils.urls import redact_text

COLUMNS = ("spawned", "done", "failed", "skipped", "gone", "retried", "items", "new", "changed",
           "unchanged")
ALWAYS = ("spawned", "done", "failed", "skipped", "items")  # the rest: shown when not all 0
WIDE = 100  # at this width and more every column shows, zero or not


def summary_table(status: dict[str, Any], width: int = WIDE) -> Table:
    """One row per step, then the totals. Narrower than ``WIDE``, a column that is 0 on
    every row is left out (a first crawl has no ``changed``), so the table fits 80
    columns without cutting a figure."""
    table = Table(title=f"job {status['job_id']}: {status['state']} "
                        f"in {status['elapsed_s']:.1f}s", title_justify="left",
                  box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("step", overflow="fold")
    shown = [c for c in COLUMNS if width >= WIDE or c in ALWAYS
             or status["totals"].get(c, 0)]
    if status["totals"].get("rendered"):  # a job with browser pages: how each page went
        shown += ["rendered", "http"]
    for name in shown:
        table.add_column(name, justify="right", no_wrap=True)
    for step, counts in status["steps"].items():
        table.add_row(step, *(str(_count(counts, c)) for c in shown))
    table.add_row("total", *(str(_count(status["totals"], c)) for c in shown), style="bold")
    return table


def _count(counts: dict[str, Any], column: str) -> int:
    """A step's figure for ``column``; ``http``: its pages not rendered in the browser."""
    if column == "http":
        return int(counts.get("requests", 0)) - int(counts.get("rendered", 0))
    return int(counts.get(column, 0))


def progress(status: dict[str, Any], width: int = WIDE) -> Group:
    """A bar of finished over known units: the frontier grows as the fan-out unfolds."""
    totals = status["totals"]
    finished = sum(totals.get(outcome, 0) for outcome in OUTCOMES)
    known = max(totals["spawned"], 1)
    line = Text(f"{finished}/{known} units  {totals['items']} items  "
                f"{status['pending']} pending  {status['elapsed_s']:.1f}s")
    return Group(ProgressBar(total=known, completed=finished, width=min(60, width - 2)), line,
                 summary_table(status, width))


def failures_table(status: dict[str, Any]) -> Table | None:
    """The failed units: step, URL (whole, wrapped: it can be copied) and reason."""
    return _units_table("failed units", [(f["step"], f.get("url") or f["unit_id"],
                                          f["reason"]) for f in status["failures"]])


def gone_table(status: dict[str, Any]) -> Table | None:
    """The units an earlier crawl stored that this one found gone: step, URL, why."""
    return _units_table("gone units", [(g["step"], g["url"] or g["unit_id"], g["reason"])
                                       for g in status.get("gone_units", [])])


def _units_table(title: str, rows: list[tuple[str, str, str]]) -> Table | None:
    if not rows:
        return None
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("step", no_wrap=True)
    table.add_column("url", overflow="fold", ratio=3)
    table.add_column("reason", overflow="fold", ratio=2)
    for step, url, reason in rows:
        table.add_row(step, redact_text(url), redact_text(reason))
    return table


def print_summary(status: dict[str, Any], console: Console | None = None) -> None:
    console = console or Console()
    console.print(summary_table(status, console.width))
    print_failures(status, console)


def print_failures(status: dict[str, Any], console: Console) -> None:
    """The failed and the gone units, each with its URL and reason."""
    for table in (failures_table(status), gone_table(status)):
        if table is not None:
            console.print(table)


def watch(status_of: Callable[[], dict[str, Any]], timeout: float, console: Console,
          refresh_s: float = 0.5) -> dict[str, Any]:
    """Redraw a job's progress (``status_of``: its ``Job.status``) until it ends or
    ``timeout`` passes; returns the last status."""
    deadline = time.monotonic() + timeout
    status = status_of()
    width = console.width
    with Live(progress(status, width), console=console, refresh_per_second=4,
              transient=False) as live:
        while status["state"] not in TERMINAL and time.monotonic() < deadline:
            time.sleep(refresh_s)
            status = status_of()
            live.update(progress(status, width))
    return status


# -- the full report (``Job.report()``, the dashboard) ------------------------
def when(epoch: float | None) -> str:
    """Local wall-clock time of an epoch, or a dash."""
    return "-" if epoch is None else datetime.fromtimestamp(epoch).strftime("%Y-%m-%d %H:%M:%S")


def rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}/s"


def headline(view: dict[str, Any]) -> Text:
    """State, times, done/failed/pending, items, throughput now and on average."""
    totals, speed = view["totals"], view["throughput"]
    return Text(
        f"job {view['job_id']}  {view['state']}  ({view['elapsed_s']:.1f}s)\n"
        f"started {when(view['created_at'])}  ended {when(view['finished_at'])}\n"
        f"done {totals['done']}  failed {totals['failed']}  skipped {totals['skipped']}  "
        f"gone {totals['gone']}  "
        f"pending {view['pending']}  items {totals['items']}\n"
        f"throughput now {rate(speed['now'])}  average {rate(speed['average'])}"
    )


FILLED, EMPTY = "█", "░"


def progress_bar(view: dict[str, Any], width: int = 40, counts: bool = True) -> Text:
    """Finished over known units as block characters, readable in plain text and logs too."""
    prog = view["progress"]
    filled = round(width * min(prog["fraction"], 1.0))
    bar = Text(FILLED * filled, style="green")
    bar.append(EMPTY * (width - filled), style="grey50")
    if counts:
        bar.append(f" {prog['finished']}/{prog['known']} units")
    bar.append(f" ({100 * prog['fraction']:.1f}%)" if counts else
               f" {100 * prog['fraction']:3.0f}%")
    return bar


def failure_groups_table(view: dict[str, Any]) -> Table | None:
    """Failures by step and error class, largest first, with a few example URLs."""
    if not view["failure_groups"]:
        return None
    table = Table(title="failures by step and error", title_justify="left",
                  box=box.SIMPLE_HEAD, pad_edge=False)
    for name in ("count", "step", "error", "reason", "examples"):
        table.add_column(name, justify="right" if name == "count" else "left",
                         overflow="fold", no_wrap=name in ("count", "step"))
    for group in view["failure_groups"]:
        examples = "\n".join(e.get("url") or f"{e['unit_id']} {e['params']}"
                             for e in group["examples"])
        table.add_row(str(group["count"]), group["step"], group["error"],
                      redact_text(group["reason"]), redact_text(examples))
    return table


def job_report(view: dict[str, Any], width: int = WIDE) -> Group:
    """Everything ``Job.report()`` prints, as one renderable."""
    parts: list[Any] = [headline(view), progress_bar(view), summary_table(view, width)]
    table = failure_groups_table(view)
    if table is not None:
        parts.append(table)
    return Group(*parts)


def print_report(view: dict[str, Any], console: Console | None = None) -> None:
    console = console or Console()
    console.print(job_report(view, console.width))
