"""Metric points, counted in Redis hashes so that every host's numbers add up in one place.

The base task counts from its unit loop (never site code): each message's points
are added up in a ``Tally`` and written in one pipelined round trip of ``HINCRBY``s
when its batch closes. Nothing is buffered past a message, and there is no
per-process registry that a Prometheus server would have to scrape host by host.
The exporter (``monitor.exporter``) reads the hashes back.

Labels are few and bounded, as in Prometheus practice: the task name
``site.platform.step`` (split into three labels on export) plus one of an event,
an error class, a status code or a histogram bucket. Never a URL or an id.

Hash fields are ``<task>|<label>`` in one hash per family (``keys.metrics``); a
batch's ``started`` is counted with its outcomes, so a batch whose worker died shows
in the job ledger's deliveries and in ``retried``, not here:

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
from bisect import bisect_left
from collections import Counter
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
LIFE_BUCKET_S = 60  # resolution of a job's throughput over its whole life (never pruned)

_SAFE_LABEL = re.compile(r"[^A-Za-z0-9_.]")


def bucket_label(le: float) -> str:
    """The ``le`` label of a bucket bound, as Prometheus prints it."""
    return repr(float(le))


def _bucket_of(seconds: float, buckets: tuple[float, ...]) -> str:
    """The label of the first bucket ``seconds`` fits in (``le`` >= it), else ``+Inf``."""
    return _LABELS[buckets][bisect_left(buckets, seconds)]


_LABELS = {buckets: (*(bucket_label(le) for le in buckets), "+Inf")
           for buckets in HISTOGRAMS.values()}  # per histogram: its labels, then +Inf


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


class Tally:
    """Metric points added up in memory, then written in one round trip.

    The base task keeps one per message and writes it when the batch closes: a few
    ``HINCRBY``s per batch instead of a few per unit. Each method returns the tally,
    so that a single point reads ``Tally(task).fetched(200, 512, 0.1)``.
    """

    def __init__(self, task_name: str) -> None:
        self.task = task_name
        self.counts: Counter[tuple[Family, str]] = Counter()
        self.sums: dict[tuple[Family, str], float] = {}
        self.finished = 0  # units that ended, for the job's pace
        self._fields: dict[str, str] = {"": task_name}  # label -> hash field, built once

    def _add(self, family: Family, label: str = "", n: int = 1) -> None:
        if n:
            name = self._fields.get(label)
            if name is None:
                name = self._fields[label] = f"{self.task}{SEP}{label}"
            self.counts[(family, name)] += n

    def started(self, n: int = 1) -> Tally:
        """``n`` units began an attempt (a redelivered unit counts again)."""
        self._add("units", "started", n)
        return self

    def units_finished(self, outcomes: Mapping[str, int],
                       errors: Mapping[str, int] | None = None) -> Tally:
        """Outcomes ``{"done": 8, "failed": 2}``; failures by error class ``{"NotFound": 2}``."""
        for outcome, n in outcomes.items():
            self._add("units", outcome, n)
        for error_class, n in (errors or {}).items():
            self._add("errors", safe_label(error_class), n)
        self.finished += sum(outcomes.values())
        return self

    def retried(self, n: int, rotated: int = 0) -> Tally:
        """``n`` units scheduled for a retry, ``rotated`` of them after a burnt resource."""
        self._add("units", "retried", n)
        self._add("units", "rotated", rotated)
        return self

    def fetched(self, status: int, nbytes: int, seconds: float) -> Tally:
        """One fetch ended: its status (0 when no response came), body size and duration."""
        self._add("status", str(int(status)))
        self._add("bytes", n=int(nbytes))
        return self._observe("fetch_s", seconds)

    def parsed(self, seconds: float) -> Tally:
        return self._observe("parse_s", seconds)

    def stored(self, n: int) -> Tally:
        self._add("items", n=int(n))
        return self

    def _observe(self, family: Family, seconds: float) -> Tally:
        self._add(family, _bucket_of(seconds, HISTOGRAMS[family]))
        self._add(family, "count")
        name = (family, f"{self.task}{SEP}sum")
        self.sums[name] = self.sums.get(name, 0.0) + float(seconds)
        return self

    def write(self, pipe: Any, job_id: str | None = None,
              clock: Callable[[], float] = time.time) -> None:
        """Queue the tally's commands on ``pipe``; with ``job_id`` the job's pace too."""
        for (family, name), n in self.counts.items():
            pipe.hincrby(keys.metrics(family), name, n)
        for (family, name), total in self.sums.items():
            pipe.hincrbyfloat(keys.metrics(family), name, total)
        if job_id is not None and self.finished:
            _pace(pipe, job_id, self.finished, clock())


class Metrics:
    """Cluster-wide counters in the state Redis; cheap enough to build per call."""

    def __init__(self, client: redis.Redis, clock: Callable[[], float] = time.time) -> None:
        self.redis = client
        self.clock = clock

    # -- writing: one round trip each ------------------------------------------
    def send(self, tally: Tally, job_id: str | None = None) -> None:
        """Write a tally (and the job's pace, given ``job_id``) in one round trip."""
        pipe = self.redis.pipeline(transaction=False)
        tally.write(pipe, job_id, self.clock)
        pipe.execute()

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

    def life(self, job_id: str, start: float, end: float) -> tuple[int, list[tuple[int, int]]]:
        """Units the job finished per bucket from ``start`` to ``end`` (epoch seconds, its
        life), as (bucket width, [(bucket start, count)]) with every bucket listed, zeros
        too: the 5-second buckets while the life fits in the ones kept, else the minutes."""
        fine = end - start <= PACE_BUCKET_S * PACE_KEEP_BUCKETS
        width, key = ((PACE_BUCKET_S, keys.job_pace(job_id)) if fine
                      else (LIFE_BUCKET_S, keys.job_life(job_id)))
        counts = {int(_text(b)): int(n) for b, n in self.redis.hgetall(key).items()}
        first, last = int(start // width), int(end // width)
        return width, [(b * width, counts.get(b, 0)) for b in range(first, last + 1)]


def _pace(pipe: Any, job_id: str, n: int, now: float) -> None:
    """Count ``n`` finishes in the current bucket; prune a minute of buckets past the kept
    window, so the hash stays at about ``PACE_KEEP_BUCKETS`` fields."""
    key = keys.job_pace(job_id)
    bucket = int(now // PACE_BUCKET_S)
    pipe.hincrby(key, str(bucket), n)
    old = bucket - PACE_KEEP_BUCKETS
    pipe.hdel(key, *(str(b) for b in range(old - 12, old)))
    pipe.expire(key, PACE_TTL_S)
    life = keys.job_life(job_id)
    pipe.hincrby(life, str(int(now // LIFE_BUCKET_S)), n)
    pipe.expire(life, PACE_TTL_S)


def _split(raw_field: Any) -> tuple[str, str]:
    task, _, label = _text(raw_field).partition(SEP)
    return task, label


def _text(raw: Any) -> str:
    return raw.decode() if isinstance(raw, bytes) else str(raw)


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
