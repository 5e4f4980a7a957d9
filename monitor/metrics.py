"""Metric points, counted in Redis hashes so that every host's numbers add up in one place.

The base task calls these from its unit loop (never site code). Each call is one
pipelined round trip of ``HINCRBY``s: no local buffering to lose when a worker is
killed, and no per-process registry that a Prometheus server would have to scrape
host by host. The exporter (``monitor.exporter``) reads the hashes back.

Labels are few and bounded, as in Prometheus practice: the task name
``site.platform.step`` (split into three labels on export) plus one of an event,
an error class, a status code or a histogram bucket. Never a URL or an id.

Hash fields are ``<task>|<label>`` in one hash per family (``keys.metrics``):

    units    <task>|started|done|skipped|failed|retried|rotated   counts
    errors   <task>|<ErrorClass>                                  units failed for good
    status   <task>|<http status>                                 responses (0 = none)
    bytes    <task>                                               body bytes fetched
    items    <task>                                               items stored
    fetch_s  <task>|<le> , <task>|sum , <task>|count               fetch duration histogram
    parse_s  (same)                                                parse duration histogram

Histogram bucket fields hold plain (not cumulative) counts; readers cumulate.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import redis

from external_interface import keys

Family = Literal["units", "errors", "status", "bytes", "items", "fetch_s", "parse_s"]
FAMILIES: tuple[Family, ...] = ("units", "errors", "status", "bytes", "items", "fetch_s",
                                "parse_s")
UNIT_EVENTS = ("started", "done", "skipped", "failed", "retried", "rotated")
FETCH_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
PARSE_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0)
HISTOGRAMS: dict[Family, tuple[float, ...]] = {"fetch_s": FETCH_BUCKETS,
                                               "parse_s": PARSE_BUCKETS}
SEP = "|"

PACE_BUCKET_S = 5  # resolution of a job's "throughput now"
PACE_KEEP_BUCKETS = 120  # ten minutes of buckets are kept; older ones are pruned on write
PACE_TTL_S = 86_400  # a job idle this long forgets its pace entirely

_SAFE_LABEL = re.compile(r"[^A-Za-z0-9_.]")


def bucket_label(le: float) -> str:
    """The ``le`` label of a bucket bound, as Prometheus prints it."""
    return repr(float(le))


def _bucket_of(seconds: float, buckets: tuple[float, ...]) -> str:
    for le in buckets:
        if seconds <= le:
            return bucket_label(le)
    return "+Inf"


def safe_label(value: str) -> str:
    """Error class names are code, but keep the label bounded and export-safe anyway."""
    return _SAFE_LABEL.sub("_", value)[:64] or "Unknown"


@dataclass
class MetricsData:
    """Every counter as read back: ``values[family][(task, label)] = number``.

    Single-field families (``bytes``, ``items``) use an empty label.
    """

    values: dict[str, dict[tuple[str, str], float]] = field(default_factory=dict)

    def get(self, family: str, task: str, label: str = "") -> float:
        return self.values.get(family, {}).get((task, label), 0.0)

    def total(self, family: str, label: str | None = None) -> float:
        """Summed over tasks (and over labels unless ``label`` is given)."""
        return sum(v for (_, lab), v in self.values.get(family, {}).items()
                   if label is None or lab == label)


class Metrics:
    """Cluster-wide counters in the state Redis; cheap enough to build per call."""

    def __init__(self, client: redis.Redis, clock: Callable[[], float] = time.time) -> None:
        self.redis = client
        self.clock = clock

    # -- writing: one round trip each ------------------------------------------
    def unit_started(self, task_name: str, n: int = 1) -> None:
        """``n`` units began an attempt (a redelivered unit counts again)."""
        self.redis.hincrby(keys.metrics("units"), f"{task_name}{SEP}started", n)

    def unit_finished(self, task_name: str, outcome: str, error_class: str | None = None,
                      job_id: str | None = None) -> None:
        """A unit ended ``done``, ``skipped`` or ``failed`` (for good, by ``error_class``).

        With ``job_id`` the job's pace is counted too (its "throughput now").
        """
        errors = {error_class or "Unknown": 1} if outcome == "failed" else {}
        self.units_finished(task_name, {outcome: 1}, errors, job_id)

    def units_finished(self, task_name: str, outcomes: Mapping[str, int],
                       errors: Mapping[str, int] | None = None,
                       job_id: str | None = None) -> None:
        """A batch ended: ``{"done": 8, "failed": 2}``, failures by error class
        ``{"NotFound": 2}``; counted in one round trip."""
        pipe = self.redis.pipeline(transaction=False)
        for outcome, n in outcomes.items():
            if n:
                pipe.hincrby(keys.metrics("units"), f"{task_name}{SEP}{outcome}", n)
        for error_class, n in (errors or {}).items():
            if n:
                pipe.hincrby(keys.metrics("errors"), f"{task_name}{SEP}{safe_label(error_class)}",
                             n)
        total = sum(outcomes.values())
        if job_id is not None and total:
            self._pace(pipe, job_id, total)
        pipe.execute()

    def retried(self, task_name: str, n: int, rotated: int = 0) -> None:
        """``n`` units scheduled for a retry, ``rotated`` of them after a burnt resource."""
        if not (n or rotated):
            return
        pipe = self.redis.pipeline(transaction=False)
        pipe.hincrby(keys.metrics("units"), f"{task_name}{SEP}retried", n)
        if rotated:
            pipe.hincrby(keys.metrics("units"), f"{task_name}{SEP}rotated", rotated)
        pipe.execute()

    def fetched(self, task_name: str, status: int, nbytes: int, seconds: float) -> None:
        """One fetch ended: its status (0 when no response came), body size and duration."""
        pipe = self.redis.pipeline(transaction=False)
        pipe.hincrby(keys.metrics("status"), f"{task_name}{SEP}{int(status)}", 1)
        if nbytes:
            pipe.hincrby(keys.metrics("bytes"), task_name, int(nbytes))
        self._observe(pipe, "fetch_s", task_name, seconds)
        pipe.execute()

    def parsed(self, task_name: str, seconds: float) -> None:
        pipe = self.redis.pipeline(transaction=False)
        self._observe(pipe, "parse_s", task_name, seconds)
        pipe.execute()

    def stored(self, task_name: str, n: int) -> None:
        if n:
            self.redis.hincrby(keys.metrics("items"), task_name, int(n))

    def _observe(self, pipe: Any, family: Family, task_name: str, seconds: float) -> None:
        key = keys.metrics(family)
        pipe.hincrby(key, f"{task_name}{SEP}{_bucket_of(seconds, HISTOGRAMS[family])}", 1)
        pipe.hincrbyfloat(key, f"{task_name}{SEP}sum", float(seconds))
        pipe.hincrby(key, f"{task_name}{SEP}count", 1)

    def _pace(self, pipe: Any, job_id: str, n: int) -> None:
        """Count ``n`` finishes in the current bucket; prune a minute of buckets past the kept
        window, so the hash stays at about ``PACE_KEEP_BUCKETS`` fields."""
        key = keys.job_pace(job_id)
        bucket = int(self.clock() // PACE_BUCKET_S)
        pipe.hincrby(key, str(bucket), n)
        old = bucket - PACE_KEEP_BUCKETS
        pipe.hdel(key, *(str(b) for b in range(old - 12, old)))
        pipe.expire(key, PACE_TTL_S)

    # -- reading ----------------------------------------------------------------
    def read(self) -> MetricsData:
        """Every family in one round trip."""
        pipe = self.redis.pipeline(transaction=False)
        for family in FAMILIES:
            pipe.hgetall(keys.metrics(family))
        data = MetricsData()
        for family, raw in zip(FAMILIES, pipe.execute(), strict=True):
            data.values[family] = {_split(k): float(v) for k, v in raw.items()}
        return data

    def pace(self, job_id: str, window_s: float = 30.0,
             since: float | None = None) -> float | None:
        """Units per second the job finished over the last ``window_s`` (or since ``since``,
        its start, when that is later); None if never counted.

        None (rather than 0) says the base task does not report pace, so a caller
        can fall back on its own sampling.
        """
        now = self.clock()
        first = int((now - window_s) // PACE_BUCKET_S)
        buckets = [str(b) for b in range(first, int(now // PACE_BUCKET_S) + 1)]
        pipe = self.redis.pipeline(transaction=False)
        pipe.exists(keys.job_pace(job_id))
        pipe.hmget(keys.job_pace(job_id), buckets)
        exists, counts = pipe.execute()
        if not exists:
            return None
        span = max(now - max(first * PACE_BUCKET_S, since or 0.0), 1e-3)
        return sum(int(c) for c in counts if c is not None) / span


def _split(raw_field: Any) -> tuple[str, str]:
    text = raw_field.decode() if isinstance(raw_field, bytes) else str(raw_field)
    task, _, label = text.partition(SEP)
    return task, label


def task_labels(task_name: str) -> dict[str, str]:
    """``demo.h5.feed`` -> site, platform, step; a shorter name leaves labels empty."""
    parts = [*task_name.split(".", 2), "", ""][:3]
    return dict(zip(("site", "platform", "step"), parts, strict=True))


def histogram(data: MetricsData, family: Family, task: str) -> list[tuple[str, float]]:
    """Cumulative ``(le, count)`` pairs of one task's histogram, ``+Inf`` last."""
    out, running = [], 0.0
    for le in HISTOGRAMS[family]:
        running += data.get(family, task, bucket_label(le))
        out.append((bucket_label(le), running))
    out.append(("+Inf", running + data.get(family, task, "+Inf")))
    return out


def histogram_tasks(data: MetricsData, family: Family) -> list[str]:
    return sorted({task for task, label in data.values.get(family, {}) if label == "count"})
