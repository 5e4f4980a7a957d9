"""Alerts: a stalled job and a failing job are reported once, through a notifier."""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from monitor.alerts import Alert, Rules, Seen, Watcher, WebhookNotifier, check
from sandbox.cluster import running_cluster
from tests.monitor.conftest import WORLD, demo, start_module, stop, wait_until, workers_ready

RULES = Rules(stall_s=2.0, failure_rate=0.5, min_finished=4)


def view(finished: int, failed: int = 0, pending: int = 5, state: str = "running",
         job_id: str = "j1") -> dict[str, Any]:
    """The parts of ``Job.overview()`` the rules read."""
    return {"job_id": job_id, "state": state, "pending": pending,
            "progress": {"finished": finished}, "totals": {"failed": failed}}


def run_checks(*steps: tuple[dict[str, Any], float]) -> list[list[str]]:
    seen: Seen | None = None
    fired: list[list[str]] = []
    for v, now in steps:
        alerts, seen = check(v, seen, RULES, now)
        fired.append([a.kind for a in alerts])
    return fired


def test_stall_fires_once_after_the_threshold_without_progress() -> None:
    assert run_checks((view(10), 0.0), (view(10), 1.9), (view(10), 2.0), (view(10), 9.0)) == [
        [], [], ["stall"], []]


def test_progress_resets_the_stall_clock_and_rearms_the_alert() -> None:
    assert run_checks((view(10), 0.0), (view(11), 1.5), (view(11), 3.0), (view(11), 3.6),
                      (view(12), 4.0), (view(12), 6.1)) == [[], [], [], ["stall"], [],
                                                           ["stall"]]


def test_no_stall_when_nothing_is_pending_or_the_job_ended() -> None:
    assert run_checks((view(10, pending=0), 0.0), (view(10, pending=0), 5.0)) == [[], []]
    assert run_checks((view(10, state="finished"), 0.0),
                      (view(10, state="finished"), 5.0)) == [[], []]


def test_failure_rate_fires_past_the_threshold_once_enough_units_finished() -> None:
    assert run_checks((view(3, failed=3), 0.0), (view(4, failed=2), 0.1),
                      (view(6, failed=4), 0.2)) == [[], ["failure_rate"], []]


def test_failure_rate_rearms_when_the_rate_falls_back() -> None:
    assert run_checks((view(4, failed=2), 0.0), (view(10, failed=2), 0.1),
                      (view(12, failed=8), 0.2)) == [["failure_rate"], [], ["failure_rate"]]


class Collect:
    """A notifier that keeps what it is given (a real one: for tests and embedding)."""

    def __init__(self) -> None:
        self.alerts: list[Alert] = []

    def notify(self, alert: Alert) -> None:
        self.alerts.append(alert)


def test_watcher_checks_every_job_and_notifies_what_fires() -> None:
    now = [0.0]
    notifier = Collect()
    watcher = Watcher(RULES, notifier, clock=lambda: now[0])
    watcher.observe([view(5, job_id="a"), view(5, failed=4, job_id="b")])
    now[0] = 3.0
    watcher.observe([view(5, job_id="a"), view(9, failed=4, job_id="b")])
    assert [(a.kind, a.job_id) for a in notifier.alerts] == [("failure_rate", "b"),
                                                             ("stall", "a")]
    assert watcher.recent == notifier.alerts


class Hook(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.received.append((time.monotonic(), json.loads(body)))
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


class Receiver(ThreadingHTTPServer):
    """A webhook endpoint on loopback that records every POSTed alert."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Hook)
        self.received: list[tuple[float, dict[str, Any]]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/hook"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_webhook_posts_the_alert_as_json(receiver: Receiver) -> None:
    WebhookNotifier(receiver.url).notify(Alert("stall", "j1", "no unit finished", 1.0,
                                               {"idle_s": 3}))
    [(_, body)] = receiver.received
    assert body == {"kind": "stall", "job_id": "j1", "message": "no unit finished", "at": 1.0,
                    "details": {"idle_s": 3}}


def test_webhook_that_is_down_does_not_break_the_loop() -> None:
    WebhookNotifier("http://127.0.0.1:9/nothing-listens", timeout=1).notify(
        Alert("stall", "j1", "m", 1.0))


def test_a_webhook_that_fails_is_logged_without_its_secret_path(
        caplog: pytest.LogCaptureFixture) -> None:
    hook = "http://127.0.0.1:9/services/T000/B000/hunter2secret?token=hunter2secret"
    WebhookNotifier(hook, timeout=1).notify(Alert("stall", "j1", "m", 1.0))
    assert "not delivered to http://127.0.0.1:9:" in caplog.text
    assert "hunter2secret" not in caplog.text


def test_a_webhook_that_is_no_url_is_refused_without_quoting_it() -> None:
    with pytest.raises(ValueError, match="http") as caught:
        WebhookNotifier("hooks.example/services/T000/B000/hunter2secret")
    assert "hunter2secret" not in str(caught.value)


@pytest.mark.integration
def test_stopping_the_workers_mid_job_fires_the_stall_alert_in_time(
        tmp_path: Path, receiver: Receiver) -> None:
    with running_cluster(tmp_path, WORLD, workers=1) as cluster:
        workers_ready(cluster)
        alerts = start_module(cluster, "monitor.alerts", "--stall-s", "2", "--interval", "0.25",
                              "--webhook", receiver.url)
        try:
            job = cluster.launch(demo, page=1)
            wait_until(lambda: job.status()["totals"]["done"] >= 100, 60, "100 units done")
            cluster.kill_worker(cluster.workers[0], signal.SIGKILL)
            killed = time.monotonic()
            assert job.status()["state"] == "running"
            wait_until(lambda: receiver.received, 10, "a stall alert")
        finally:
            stop(alerts)
    [(at, alert)] = receiver.received
    assert (alert["kind"], alert["job_id"]) == ("stall", job.job_id)
    assert killed < at <= killed + 2.0 + 0.25 + 1.5  # threshold + one check interval + slack
    assert alert["details"]["pending"] > 0
