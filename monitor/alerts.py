"""Alerts on jobs: no progress for too long, or too many units failing.

    python -m monitor.alerts [--stall-s 300] [--failure-rate 0.2] [--webhook URL]

``check`` is the rule, a pure function of one job's overview (``Job.overview()``),
what was seen of that job before, and the time: easy to test, and the same
for the alert loop below and the dashboard. The loop only reads the ledger, so
it can run anywhere, and a crashed worker cannot take its own alarm down with it.

* stall: the job is running, units are pending, and the number of finished
  units has not changed for ``stall_s``. It fires once per stall and re-arms
  when progress resumes.
* failure rate: failed over finished units of a running job reaches
  ``failure_rate`` once at least ``min_finished`` units finished. It fires once
  and re-arms when the rate falls back under the threshold.

Alerts go through a ``Notifier``: a log line by default, or a webhook that
receives each alert as a JSON POST (Slack-style relays, Alertmanager adapters).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal, Protocol

import redis

from utils.logs import configure
from utils.urls import redact_text, url_origin

log = logging.getLogger("crawlchain.alerts")

Kind = Literal["stall", "failure_rate"]


@dataclass(frozen=True)
class Rules:
    """When to alert; every threshold is per job."""

    stall_s: float = 300.0
    failure_rate: float = 0.2
    min_finished: int = 20


@dataclass(frozen=True)
class Alert:
    kind: Kind
    job_id: str
    message: str
    at: float
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Seen:
    """What ``check`` remembers of a job: its finished count, since when, what fired."""

    finished: int
    since: float
    fired: frozenset[Kind] = frozenset()


class Notifier(Protocol):
    def notify(self, alert: Alert) -> None:
        """Deliver one alert; must not raise for a delivery problem (log it instead)."""


class LogNotifier:
    """The default: one warning line per alert on the ``crawlchain.alerts`` logger."""

    def notify(self, alert: Alert) -> None:
        log.warning("ALERT %s job=%s %s", alert.kind, alert.job_id, alert.message)


class WebhookNotifier:
    """POSTs each alert as JSON to ``url``; a failed delivery is logged, never raised."""

    def __init__(self, url: str, timeout: float = 5.0) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError("webhook must be an http:// or https:// URL (not shown: its path "
                             "may be its secret)")
        self.url = url
        self.shown = url_origin(url)  # a webhook's path is often its secret (Slack's is)
        self.timeout = timeout

    def notify(self, alert: Alert) -> None:
        body = json.dumps(asdict(alert)).encode()
        request = urllib.request.Request(self.url, data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as reply:
                reply.read()
        except OSError as exc:
            log.error("alert %s for job %s not delivered to %s: %s", alert.kind, alert.job_id,
                      self.shown, redact_text(str(exc)))
        LogNotifier().notify(alert)


def notifier_for(webhook: str | None) -> Notifier:
    return WebhookNotifier(webhook) if webhook else LogNotifier()


def check(view: dict[str, Any], seen: Seen | None, rules: Rules,
          now: float) -> tuple[list[Alert], Seen]:
    """The alerts ``view`` (one ``Job.overview()``) raises now, and what to remember."""
    finished = int(view["progress"]["finished"])
    if seen is None or finished != seen.finished:
        seen = Seen(finished, now, seen.fired - {"stall"} if seen else frozenset())
    if view["state"] != "running":
        return [], seen
    alerts: list[Alert] = []
    idle = now - seen.since
    if view["pending"] > 0 and idle >= rules.stall_s and "stall" not in seen.fired:
        alerts.append(Alert("stall", view["job_id"], f"no unit finished for {idle:.0f}s "
                            f"with {view['pending']} pending", now,
                            {"idle_s": round(idle, 3), "pending": view["pending"],
                             "finished": finished}))
    failed = int(view["totals"]["failed"])
    ratio = failed / finished if finished else 0.0
    fired = seen.fired
    if finished < rules.min_finished or ratio < rules.failure_rate:
        fired = fired - {"failure_rate"}
    elif "failure_rate" not in fired:
        alerts.append(Alert("failure_rate", view["job_id"],
                            f"{failed}/{finished} units failed ({ratio:.0%})", now,
                            {"failed": failed, "finished": finished,
                             "ratio": round(ratio, 4)}))
    return alerts, replace(seen, fired=fired | {a.kind for a in alerts})


class Watcher:
    """Applies ``check`` to every job it is shown and notifies what fires."""

    def __init__(self, rules: Rules, notifier: Notifier,
                 clock: Callable[[], float] = time.time) -> None:
        self.rules = rules
        self.notifier = notifier
        self.clock = clock
        self.seen: dict[str, Seen] = {}
        self.recent: list[Alert] = []  # what fired lately, newest last (the dashboard shows it)

    def observe(self, views: list[dict[str, Any]]) -> list[Alert]:
        now = self.clock()
        fired: list[Alert] = []
        for view in views:
            alerts, self.seen[view["job_id"]] = check(view, self.seen.get(view["job_id"]),
                                                      self.rules, now)
            fired += alerts
        self.seen = {v["job_id"]: self.seen[v["job_id"]] for v in views}  # forget the rest
        for alert in fired:
            self.notifier.notify(alert)
        self.recent = (self.recent + fired)[-20:]
        return fired


def run(read_jobs: Callable[[], list[dict[str, Any]]], watcher: Watcher, interval: float,
        stop: threading.Event | None = None) -> None:
    """Check every ``interval`` seconds until ``stop`` is set (forever without one)."""
    stop = stop or threading.Event()
    while not stop.is_set():
        try:
            watcher.observe(read_jobs())
        except (redis.RedisError, OSError) as exc:  # keep watching once the state plane is back
            log.error("cannot read the jobs: %s", exc)
        stop.wait(interval)


def rules_arguments(parser: argparse.ArgumentParser) -> None:
    """The alert options, shared with ``python -m monitor``."""
    defaults = Rules()
    parser.add_argument("--stall-s", type=float, default=defaults.stall_s,
                        help="alert when a running job finishes no unit for this long")
    parser.add_argument("--failure-rate", type=float, default=defaults.failure_rate,
                        help="alert when failed/finished units reach this ratio")
    parser.add_argument("--min-finished", type=int, default=defaults.min_finished,
                        help="judge the failure rate only past this many finished units")
    parser.add_argument("--webhook", default=None, help="POST alerts as JSON to this URL")


def rules_from(args: argparse.Namespace) -> Rules:
    return Rules(args.stall_s, args.failure_rate, args.min_finished)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m monitor.alerts", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    rules_arguments(parser)
    parser.add_argument("--interval", type=float, default=5.0, help="seconds between checks")
    parser.add_argument("--jobs", type=int, default=20, help="how many newest jobs to watch")
    args = parser.parse_args(argv)
    configure()  # LOG_LEVEL, LOG_FORMAT; secrets masked

    from chains.runtime.context import state_redis
    from config import get_settings
    from monitor.snapshot import jobs

    client = state_redis(get_settings().state.redis_url)
    watcher = Watcher(rules_from(args), notifier_for(args.webhook))
    log.info("watching the %d newest jobs every %.1fs", args.jobs, args.interval)
    with contextlib.suppress(KeyboardInterrupt):
        run(lambda: jobs(client, args.jobs), watcher, args.interval)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
