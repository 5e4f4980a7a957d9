"""The handle a launch returns: ``job.status()``, ``job.overview()``, ``job.report()``, and
the verbs ``pause``, ``resume``, ``cancel`` and ``retry_failed`` (``job_control``).

``status`` is the ledger's summary: per-step counts (each step's outcomes, done,
failed, skipped, gone and cancelled, add up to its ``spawned`` once the job ends), the
failed and the gone units with their URLs and reasons, skips by reason; ``overview``
adds what an operator asks first ("is it done, what failed, why is it slow"): times,
progress of the growing fan-out, throughput now and on average, failures grouped by
step and error class. The live dashboard and ``python -m monitor --once --json`` show the same dict;
``history`` lists recent jobs (``crawlchain jobs``). Both views show a failed unit's
params with their secrets masked (``utils.urls.redact_data``); the ledger keeps them
as given, for the unit to run again.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from chains.runtime.job_control import JobControl, JobStateError
from chains.runtime.ledger import OUTCOMES, RUNNING, STEP_FIELDS, TERMINAL, Failure, Ledger
from chains.runtime.metrics import Metrics
from chains.runtime.report import print_report
from utils.urls import redact_data

if TYPE_CHECKING:
    from rich.console import Console

    from chains.runtime.dispatch import Dispatch

PACE_WINDOW_S = 30.0  # "throughput now" is measured over this many seconds
EXIT_CODES = {"finished": 0, "finished_with_failures": 3, "cancelled": 4}
"""What ``crawlchain launch``, ``retry`` and ``wait`` exit with, by the job's final state;
a job that did not end in time (running or paused) exits 1."""


class JobTimeout(TimeoutError):
    """``wait`` ran out of time before the job reached a terminal state."""


class Job:
    """A running or ended job, read from the ledger on every call."""

    def __init__(self, job_id: str, ledger: Ledger, dispatch: Dispatch | None = None) -> None:
        self.job_id = job_id
        self.ledger = ledger
        self._dispatch = dispatch

    def __repr__(self) -> str:
        return f"Job({self.job_id!r}, state={self.ledger.state(self.job_id)!r})"

    def status(self, failures: int = 20) -> dict[str, Any]:
        """The job summary: state, per-step counts, totals, elapsed seconds, failures."""
        return self._status(self.ledger.failures(self.job_id), failures)

    def _status(self, failed: list[Failure], failures: int) -> dict[str, Any]:
        meta = self.ledger.meta(self.job_id)
        steps = {
            name: {field: counts.get(field, 0) for field in STEP_FIELDS}
            for name, counts in sorted(self.ledger.counts(self.job_id).items())
        }
        totals = {field: sum(s[field] for s in steps.values()) for field in STEP_FIELDS}
        created = float(meta.get("created_at", time.time()))
        finished_at = float(meta["finished_at"]) if "finished_at" in meta else None
        end = finished_at if finished_at is not None else time.time()
        return {
            "job_id": self.job_id,
            "state": meta.get("state", "unknown"),
            "pending": self.ledger.pending(self.job_id),
            "steps": steps,
            "totals": totals,
            "created_at": created,
            "finished_at": finished_at,
            "elapsed_s": round(end - created, 3),
            "failure_groups": failure_groups(failed),
            "drop_reasons": self.ledger.drops(self.job_id),
            "skip_reasons": self.ledger.skips(self.job_id),
            "gone_units": [g.__dict__ for g in self.ledger.gone_units(self.job_id)[:failures]],
            "failures": [
                {"unit_id": f.unit_id, "step": f.step, "reason": f.reason, "error": f.error,
                 "url": f.url, "params": redact_data(f.params), "attempts": f.attempts,
                 "first_at": f.first_at, "failed_at": f.failed_at}
                for f in failed[:failures]
            ],
        }

    def overview(self, examples: int = 3, groups: int = 10) -> dict[str, Any]:
        """``status`` plus progress, throughput and failures grouped by reason.

        ``progress.known`` is the frontier the ledger knows so far: a fan-out job's
        total grows as parents register children, so the fraction can step back.
        """
        failed = self.ledger.failures(self.job_id)
        status = self._status(failed, failures=0)
        totals = status["totals"]
        finished = sum(totals[outcome] for outcome in OUTCOMES)
        known = totals["spawned"]
        now = None
        if status["state"] == RUNNING:
            now = Metrics(self.ledger.redis).pace(self.job_id, PACE_WINDOW_S,
                                                  since=status["created_at"])
        elapsed = max(status["elapsed_s"], 1e-9)
        status.pop("failures")
        return {
            **status,
            "progress": {"finished": finished, "known": known,
                         "fraction": round(finished / known, 4) if known else 0.0},
            "throughput": {"average": round(finished / elapsed, 3),
                           "now": None if now is None else round(now, 3),
                           "window_s": PACE_WINDOW_S},
            "failure_groups": failure_groups(failed, examples, groups),
        }

    def exit_code(self) -> int:
        """0 finished, 3 finished with failures, 4 cancelled, 1 not ended (``EXIT_CODES``)."""
        return EXIT_CODES.get(self.ledger.state(self.job_id) or "", 1)

    def wait(self, timeout: float = 300.0, poll_s: float = 0.2) -> dict[str, Any]:
        """Block until the job is finished (with or without failures) or cancelled; raise
        ``JobTimeout`` past ``timeout``. A paused job waits for its resume."""
        deadline = time.monotonic() + timeout
        while (state := self.ledger.state(self.job_id)) not in TERMINAL:
            if time.monotonic() > deadline:
                raise JobTimeout(f"job {self.job_id} still {state} after {timeout}s")
            time.sleep(poll_s)
        return self.status()

    # -- verbs (``job_control``) ----------------------------------------------------
    def control(self) -> JobControl:
        """The verbs, through the dispatch this handle was given (a handle made only to
        read the ledger has none)."""
        if self._dispatch is None:
            raise JobStateError(f"job {self.job_id}: this handle reads the ledger only; take "
                                "it from chains.cluster.job(job_id) to pause, resume, cancel "
                                "or retry")
        return JobControl(self.ledger, self._dispatch)

    def pause(self) -> None:
        """No unit of the job starts from now on, on any worker; those in flight finish."""
        self.control().pause(self.job_id)

    def resume(self) -> int:
        """Run the paused job on; returns how many parked units were sent again."""
        return self.control().resume(self.job_id)

    def cancel(self) -> int:
        """End the job; its open units are recorded as cancelled (returns how many)."""
        return self.control().cancel(self.job_id)

    def retry_failed(self, step: str | None = None, error: str | None = None) -> int:
        """Run the failed units again in this job (only ``step``'s, or only those that
        failed with the error class ``error``); returns how many were sent."""
        return self.control().retry_failed(self.job_id, step, error)

    def report(self, console: Console | None = None) -> None:
        """Print the overview (for a Python shell): times, counts, throughput, failures."""
        print_report(self.overview(), console)


def failure_groups(failed: list[Failure], examples: int = 3,
                   limit: int = 10) -> list[dict[str, Any]]:
    """Failures grouped by step and error class, largest group first, each with its count,
    its most common reason and a few example URLs (masked) and units."""
    grouped: dict[tuple[str, str], list[Failure]] = {}
    for failure in failed:
        grouped.setdefault((failure.step, failure.error), []).append(failure)
    ordered = sorted(grouped.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    return [
        {"step": step, "error": error, "count": len(members),
         "reason": max({f.reason for f in members}, key=[f.reason for f in members].count),
         "urls": [f.url for f in members[:examples] if f.url],
         "examples": [{"unit_id": f.unit_id, "url": f.url, "params": redact_data(f.params),
                       "attempts": f.attempts} for f in members[:examples]]}
        for (step, error), members in ordered[:limit]
    ]


def history(ledger: Ledger, limit: int = 20) -> list[dict[str, Any]]:
    """The newest jobs, newest first: id, chain, state, unit counts, started, elapsed."""
    rows = []
    for job_id in ledger.job_ids(limit):
        meta = ledger.meta(job_id)
        steps = ledger.counts(job_id).values()
        created = float(meta.get("created_at", 0.0))
        end = float(meta["finished_at"]) if "finished_at" in meta else time.time()
        rows.append({
            "job_id": job_id, "chain": json.loads(meta.get("chain", "{}")).get("name", "?"),
            "state": meta.get("state", "unknown"),
            **{field: sum(s[field] for s in steps)
               for field in ("spawned", "done", "failed", "skipped", "gone", "items")},
            "pending": ledger.pending(job_id), "created_at": created,
            "elapsed_s": round(end - created, 3)})
    return rows
