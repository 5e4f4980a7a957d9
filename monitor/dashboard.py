"""The live terminal dashboard: snapshots drawn with rich, refreshed in place.

``Dashboard.render(snapshot)`` is a plain function of the snapshot (plus the
previous one, for rates), so tests render it to text with a recording console;
``live`` only adds the refresh loop. Pages per second come from the workers'
pace counters when the base task reports them, otherwise from the change in
finished units between two refreshes.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from kombu.exceptions import OperationalError
from redis import RedisError
from rich import box
from rich.columns import Columns
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

from chains.runtime.report import progress_bar, rate
from monitor.alerts import Alert, Watcher
from utils.urls import redact_text

CORE_KEYS = frozenset({"taken_at", "jobs", "workers", "queues"})


class Dashboard:
    """Draws snapshots; remembers each job's last finished count to show a live rate."""

    def __init__(self, watcher: Watcher | None = None) -> None:
        self.watcher = watcher
        self._last: dict[str, tuple[float, int]] = {}

    def render(self, snap: dict[str, Any]) -> Group:
        rates = self._rates(snap)
        if self.watcher is not None:
            self.watcher.observe(snap["jobs"])
        parts: list[RenderableType] = [
            header(snap, rates), jobs_table(snap["jobs"], rates),
            Columns([queues_table(snap["queues"]), workers_table(snap["workers"])]),
        ]
        reasons = reasons_table(snap["jobs"])
        if reasons is not None:
            parts.append(reasons)
        parts += [section_table(name, rows) for name, rows in snap.items()
                  if name not in CORE_KEYS]
        if self.watcher is not None and self.watcher.recent:
            parts.append(alerts_table(self.watcher.recent))
        return Group(*parts)

    def _rates(self, snap: dict[str, Any]) -> dict[str, float | None]:
        """Per job: the pace the workers counted, else the change since the last render."""
        rates: dict[str, float | None] = {}
        now = snap["taken_at"]
        for view in snap["jobs"]:
            job_id, finished = view["job_id"], view["progress"]["finished"]
            rates[job_id] = view["throughput"]["now"]
            if view["state"] != "running":
                rates[job_id] = 0.0
            elif rates[job_id] is None and job_id in self._last:
                then, before = self._last[job_id]
                rates[job_id] = (finished - before) / max(now - then, 1e-9)
            self._last[job_id] = (now, finished)
        return rates


def header(snap: dict[str, Any], rates: dict[str, float | None]) -> Text:
    alive = snap["workers"]
    slots = sum(w["concurrency"] or 0 for w in alive.values())
    running = sum(1 for v in snap["jobs"] if v["state"] == "running")
    total = sum(r for r in rates.values() if r)
    stamp = datetime.fromtimestamp(snap["taken_at"]).strftime("%H:%M:%S")
    return Text(f"crawlchain  {stamp}  jobs running {running}  pages/s {total:.1f}  "
                f"workers {len(alive)} ({slots} slots)  "
                f"queued {sum(snap['queues'].values())}", style="bold")


def jobs_table(views: list[dict[str, Any]], rates: dict[str, float | None]) -> Table:
    table = Table(title="jobs", title_justify="left", box=box.SIMPLE_HEAD)
    for name in ("job", "state", "progress", "units", "failed", "pending", "items", "pages/s",
                 "avg/s", "elapsed"):
        table.add_column(name, justify="left" if name in ("job", "state", "progress")
                         else "right", no_wrap=name in ("job", "progress"))
    for v in views:
        t, p = v["totals"], v["progress"]
        table.add_row(v["job_id"], _state(v["state"]), progress_bar(v, 16, counts=False),
                      f"{p['finished']}/{p['known']}", str(t["failed"]), str(v["pending"]),
                      str(t["items"]),
                      rate(rates.get(v["job_id"])), rate(v["throughput"]["average"]),
                      f"{v['elapsed_s']:.0f}s")
    return table


def _state(state: str) -> Text:
    colour = {"running": "cyan", "paused": "magenta", "finished": "green",
              "finished_with_failures": "red", "cancelled": "yellow"}.get(state, "red")
    return Text(state, style=colour)


def reasons_table(views: list[dict[str, Any]], per_job: int = 3) -> Table | None:
    """The biggest failure reasons of each job, with one example unit."""
    rows = [(v["job_id"], g) for v in views for g in v["failure_groups"][:per_job]]
    if not rows:
        return None
    table = Table(title="error reasons", title_justify="left")
    for name in ("job", "count", "step", "reason", "example"):
        table.add_column(name, justify="right" if name == "count" else "left")
    for job_id, group in rows:
        example = group["examples"][0] if group["examples"] else {}
        table.add_row(job_id, str(group["count"]), group["step"], redact_text(group["reason"]),
                      redact_text(example.get("url") or str(example.get("params", ""))))
    return table


def queues_table(depths: dict[str, int]) -> Table:
    table = Table(title="queues", title_justify="left")
    table.add_column("queue")
    table.add_column("ready", justify="right")
    for queue, depth in sorted(depths.items()):
        table.add_row(queue, str(depth))
    return table


def workers_table(alive: dict[str, dict[str, Any]]) -> Table:
    table = Table(title="workers", title_justify="left")
    for name in ("worker", "concurrency", "processes", "tasks"):
        table.add_column(name, justify="left" if name == "worker" else "right")
    for name, info in sorted(alive.items()):
        table.add_row(name, str(info["concurrency"]), str(info["processes"]),
                      str(info["tasks_done"]))
    if not alive:
        table.add_row("(none answering)", "", "", "")
    return table


def section_table(name: str, rows: dict[str, dict[str, Any]]) -> RenderableType:
    """A section another module fills (sites' politeness, pools): one row per entry."""
    if not rows:
        return Text(f"{name}: no data yet", style="dim")
    fields = sorted({f for row in rows.values() for f in row})
    table = Table(title=name, title_justify="left")
    table.add_column(name.rstrip("s") or name)
    for f in fields:
        table.add_column(f, justify="right")
    for key, row in sorted(rows.items()):
        table.add_row(key, *(str(row.get(f, "")) for f in fields))
    return table


def alerts_table(alerts: list[Alert]) -> Table:
    table = Table(title="alerts", title_justify="left", style="red")
    for name in ("time", "kind", "job", "message"):
        table.add_column(name)
    for a in reversed(alerts[-5:]):
        table.add_row(datetime.fromtimestamp(a.at).strftime("%H:%M:%S"), a.kind, a.job_id,
                      a.message)
    return table


def render_text(dashboard: Dashboard, snap: dict[str, Any], width: int = 160) -> str:
    """The dashboard as plain text (``--once`` without ``--json``, tests, logs)."""
    console = Console(record=True, width=width, file=io.StringIO())
    console.print(dashboard.render(snap))
    return console.export_text()


def live(take: Callable[[], dict[str, Any]], dashboard: Dashboard, console: Console,
         interval: float, until: Callable[[], bool] = lambda: False) -> None:
    """Redraw every ``interval`` seconds until ``until()`` (or Ctrl-C); a broker or Redis
    outage shows as a line instead of ending the view."""
    with Live(Text("taking the first snapshot..."), console=console,
              refresh_per_second=4) as view:
        while not until():
            try:
                view.update(dashboard.render(take()))
            except (RedisError, OperationalError, OSError) as exc:
                view.update(Text(f"{time.strftime('%H:%M:%S')} cannot read the cluster: {exc}",
                                 style="red"))
            time.sleep(interval)
