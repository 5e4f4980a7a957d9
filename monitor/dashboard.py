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
from functools import partial
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

CORE_KEYS = frozenset({"taken_at", "stopped", "jobs", "workers", "queues", "consumers"})
WIDE = 100  # narrower than this, the jobs table drops its bar and averages


class Dashboard:
    """Draws snapshots; remembers each job's last finished count to show a live rate."""

    def __init__(self, watcher: Watcher | None = None) -> None:
        self.watcher = watcher
        self._last: dict[str, tuple[float, int]] = {}

    def render(self, snap: dict[str, Any], width: int = WIDE) -> Group:
        """The snapshot at ``width`` columns: narrower than ``WIDE``, the jobs table keeps
        each job's full id, state and counts and leaves out the bar and the averages."""
        rates = self._rates(snap)
        if self.watcher is not None:
            self.watcher.observe(snap["jobs"])
        queues = queues_table(snap["queues"], snap.get("consumers"))
        parts: list[RenderableType] = [
            header(snap, rates), jobs_table(snap["jobs"], rates, width),
            Columns([queues, workers_table(snap["workers"])]) if width >= WIDE else
            Group(queues, workers_table(snap["workers"])),
        ]
        reasons = reasons_table(snap["jobs"])
        if reasons is not None:
            parts.append(reasons)
        drawn = {"sites": sites_table, "throttle": throttle_table}
        parts += [drawn.get(name, partial(section_table, name))(rows)
                  for name, rows in snap.items() if name not in CORE_KEYS]
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


def jobs_table(views: list[dict[str, Any]], rates: dict[str, float | None],
               width: int = WIDE) -> Table:
    """One row per job; at 80 columns the id (never cut), state, units finished of known,
    failed, pending, items and pages/s."""
    wide = width >= WIDE
    names = ("job", "state", "progress", "units", "failed", "pending", "items", "pages/s",
             "avg/s", "elapsed") if wide else (
             "job", "state", "units", "failed", "pending", "items", "pages/s")
    table = Table(title="jobs", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for name in names:
        table.add_column(name, justify="left" if name in ("job", "state", "progress")
                         else "right", no_wrap=name != "state",
                         overflow="fold", min_width=16 if name == "job" else None)
    for v in views:
        t, p = v["totals"], v["progress"]
        state = _state(v["state"] if wide else v["state"].replace("_", " "))
        cells = {"job": v["job_id"], "state": state,
                 "progress": progress_bar(v, 16, counts=False),
                 "units": f"{p['finished']}/{p['known']}", "failed": str(t["failed"]),
                 "pending": str(v["pending"]), "items": str(t["items"]),
                 "pages/s": rate(rates.get(v["job_id"])),
                 "avg/s": rate(v["throughput"]["average"]), "elapsed": f"{v['elapsed_s']:.0f}s"}
        table.add_row(*(cells[name] for name in names))
    return table


def _state(state: str) -> Text:
    colour = {"running": "cyan", "paused": "magenta", "finished": "green",
              "finished_with_failures": "red", "finished with failures": "red",
              "cancelled": "yellow"}.get(state, "red")
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


def queues_table(depths: dict[str, int], consumers: dict[str, list[str]] | None = None
                 ) -> Table:
    """Ready messages per queue, and how many live workers consume it (the roster): a
    queue that holds messages and that no worker consumes says the command to run."""
    table = Table(title="queues", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("queue")
    table.add_column("ready", justify="right")
    if consumers is not None:
        table.add_column("workers", overflow="fold")
    for queue, depth in sorted(depths.items()):
        if consumers is None:
            table.add_row(queue, str(depth))
            continue
        who = consumers.get(queue, [])
        table.add_row(queue, str(depth), str(len(who)) if who else Text(
            "none: ./control.sh start worker" if depth else "none", style="red" if depth
            else "dim"))
    return table


def workers_table(alive: dict[str, dict[str, Any]]) -> Table:
    table = Table(title="workers", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for name in ("worker", "concurrency", "processes", "tasks"):
        table.add_column(name, justify="left" if name == "worker" else "right")
    for name, info in sorted(alive.items()):
        table.add_row(name, str(info["concurrency"]), str(info["processes"]),
                      str(info["tasks_done"]))
    if not alive:
        table.add_row("(none answering)", "", "", "")
    return table


def sites_table(rows: dict[str, dict[str, Any]]) -> RenderableType:
    """Each politeness bucket (a site, or a host of a generic crawl): its declared rate,
    the rate it gets now, requests in flight of its cap, and what makes it wait."""
    if not rows:
        return Text("sites: no data yet", style="dim")
    table = Table(title="sites", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for name in ("site", "limit", "now", "in flight", "cooldown", "next slot", "429s"):
        table.add_column(name, justify="left" if name == "site" else "right",
                         overflow="fold")
    for site, row in sorted(rows.items()):
        cap = row.get("max_concurrency")
        table.add_row(site, per_s(row.get("rate_per_s")), per_s(row.get("rate_estimate_per_s")),
                      f"{row.get('leases_held', 0)}/{cap}" if cap else
                      str(row.get("leases_held", 0)),
                      seconds(row.get("cooldown_remaining_s")),
                      seconds(row.get("next_slot_in_s")), str(row.get("penalties", 0)))
    return table


def throttle_table(rows: dict[str, dict[str, Any]]) -> RenderableType:
    """Each site's (or host's) adaptive throttle: the rate it allows now, the server's rate
    it learnt, requests in flight it allows, latency, and the signs that slowed it."""
    if not rows:
        return Text("throttle: no data yet", style="dim")
    table = Table(title="throttle", title_justify="left", box=box.SIMPLE_HEAD,
                  pad_edge=False)
    for name in ("site", "phase", "rate", "ceiling", "window", "latency", "429s", "5xx"):
        table.add_column(name, justify="left" if name in ("site", "phase") else "right",
                         overflow="fold")
    for site, row in sorted(rows.items()):
        table.add_row(site, str(row.get("phase") or "-"), per_s(row.get("rate_per_s")),
                      per_s(row.get("ceiling_per_s")), str(row.get("window", "-")),
                      seconds(row.get("latency_s")), str(row.get("rate_limited", 0)),
                      str(row.get("server_errors", 0)))
    return table


def per_s(value: float | None) -> str:
    """A rate in human units: ``4.0/s``, ``0.5/s``; ``-`` for none."""
    return "-" if value is None else f"{value:.1f}/s" if value >= 0.1 else f"{value:.2f}/s"


def seconds(value: float | None) -> str:
    """A duration in human units: ``-``, ``120 ms``, ``3.2 s``, ``4 min``."""
    if not value:
        return "-"
    if value < 1:
        return f"{value * 1000:.0f} ms"
    return f"{value:.1f} s" if value < 120 else f"{value / 60:.0f} min"


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
    console.print(dashboard.render(snap, width))
    return console.export_text()


def live(take: Callable[[], dict[str, Any]], dashboard: Dashboard, console: Console,
         interval: float, until: Callable[[], bool] = lambda: False) -> None:
    """Redraw every ``interval`` seconds until ``until()`` (or Ctrl-C); a broker or Redis
    outage shows as a line instead of ending the view."""
    with Live(Text("taking the first snapshot..."), console=console,
              refresh_per_second=4) as view:
        while not until():
            try:
                view.update(dashboard.render(take(), console.width))
            except (RedisError, OperationalError, OSError) as exc:
                view.update(Text(f"{time.strftime('%H:%M:%S')} cannot read the cluster: {exc}",
                                 style="red"))
            time.sleep(interval)
