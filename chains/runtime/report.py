"""Job summaries for people: a per-step table, a live progress view while a job runs, and
the full report of ``Job.report()`` (times, throughput, failures grouped by reason)."""

from __future__ import annotations

import time
from datetime import datetime
from typing import TYPE_CHECKING, Any

from rich.console import Console, Group
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from chains.runtime.ledger import TERMINAL
from utils.urls import redact_text

if TYPE_CHECKING:
    from chains.runtime.job import Job

COLUMNS = ("spawned", "done", "failed", "skipped", "gone", "retried", "items", "new", "changed",
           "unchanged")


def summary_table(status: dict[str, Any]) -> Table:
    """One row per step, then the totals."""
    table = Table(title=f"job {status['job_id']}: {status['state']} "
                        f"in {status['elapsed_s']:.1f}s", title_justify="left")
    table.add_column("step")
    for name in COLUMNS:
        table.add_column(name, justify="right")
    for step, counts in status["steps"].items():
        table.add_row(step, *(str(counts.get(c, 0)) for c in COLUMNS))
    table.add_row("total", *(str(status["totals"].get(c, 0)) for c in COLUMNS), style="bold")
    return table


def progress(status: dict[str, Any]) -> Group:
    """A bar of finished over known units: the frontier grows as the fan-out unfolds."""
    totals = status["totals"]
    finished = totals["done"] + totals["failed"] + totals["skipped"]
    known = max(totals["spawned"], 1)
    line = Text(f"{finished}/{known} units  {totals['items']} items  "
                f"{status['pending']} pending  {status['elapsed_s']:.1f}s")
    return Group(ProgressBar(total=known, completed=finished, width=60), line,
                 summary_table(status))


def failures_table(status: dict[str, Any]) -> Table | None:
    if not status["failures"]:
        return None
    table = Table(title="failed units", title_justify="left")
    for name in ("step", "unit_id", "reason"):
        table.add_column(name)
    for f in status["failures"]:
        table.add_row(f["step"], f["unit_id"], redact_text(f["reason"]))
    return table


def print_summary(status: dict[str, Any], console: Console | None = None) -> None:
    console = console or Console()
    console.print(summary_table(status))
    print_failures(status, console)


def print_failures(status: dict[str, Any], console: Console) -> None:
    table = failures_table(status)
    if table is not None:
        console.print(table)


def watch(job: Job, timeout: float, console: Console, refresh_s: float = 0.5) -> dict[str, Any]:
    """Redraw the job's progress until it ends or ``timeout`` passes; returns the last status."""
    deadline = time.monotonic() + timeout
    status = job.status()
    with Live(progress(status), console=console, refresh_per_second=4, transient=False) as live:
        while status["state"] not in TERMINAL and time.monotonic() < deadline:
            time.sleep(refresh_s)
            status = job.status()
            live.update(progress(status))
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
    table = Table(title="failures by step and error", title_justify="left")
    for name in ("count", "step", "error", "reason", "examples"):
        table.add_column(name, justify="right" if name == "count" else "left")
    for group in view["failure_groups"]:
        examples = "\n".join(e.get("url") or f"{e['unit_id']} {e['params']}"
                             for e in group["examples"])
        table.add_row(str(group["count"]), group["step"], group["error"],
                      redact_text(group["reason"]), redact_text(examples))
    return table


def job_report(view: dict[str, Any]) -> Group:
    """Everything ``Job.report()`` prints, as one renderable."""
    parts: list[Any] = [headline(view), progress_bar(view), summary_table(view)]
    table = failure_groups_table(view)
    if table is not None:
        parts.append(table)
    return Group(*parts)


def print_report(view: dict[str, Any], console: Console | None = None) -> None:
    (console or Console()).print(job_report(view))
