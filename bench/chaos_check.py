"""What a chaos run left, checked from the ledger, the store and the server's log.

* lost: item keys the sites' data implies (``sandbox.world.expected_keys``, the forum's
  ``expected``) that the store does not hold;
* duplicate items: records stored more than once, plus items the first crawls counted
  beyond those the demo world holds;
* unaccounted: units of any job not done, skipped, gone or failed, plus failures the
  run does not explain: a listed forum thread that answers 404 or 410 is explained,
  "its worker died N times" is when the nemesis killed at least N workers or pool
  children; anything else (a retry budget spent in an outage, a raise) is not: the
  faults are all transient, so no unit should fail for them;
* leaks, once every job finished and the cluster settled: a unit's start, payload,
  carrier or raise record left in a finished job's ledger, a politeness lease still
  held, a lock or claim with no expiry, a message left unacked or queued on the broker;
* the server's log: every forum URL a crawl needs answered 200 at least once, and how
  many pages were fetched more than once (redeliveries: at least once, not an error).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import redis

from chains.runtime.context import Runtime
from chains.runtime.ledger import FINISHED, FINISHED_WITH_FAILURES
from external_interface import keys
from sandbox.forum.expected import ForumExpected
from sandbox.server import SandboxServer, url_key
from sandbox.world import World, expected_keys

JOB_LEFTOVERS = ("deliveries", "open", "carry", "raised", "parked")
SETTLE_S = 45.0  # leases and broker messages of the last units expire or drain by then


@dataclass
class Job:
    """A job the run launched: what it crawls, and whether it is a first crawl."""

    job_id: str
    chain: str
    first: bool


@dataclass
class Verdict:
    units: int = 0
    lost: int = 0
    duplicate_items: int = 0
    unaccounted: int = 0
    leaks: int = 0
    details: list[str] = field(default_factory=list)
    executions: int = 0
    duplicate_executions: int = 0


def finished(rt: Runtime, jobs: list[Job]) -> bool:
    try:
        return all(rt.ledger.state(j.job_id) in (FINISHED, FINISHED_WITH_FAILURES)
                   for j in jobs)
    except redis.RedisError:
        return False


def check(rt: Runtime, jobs: list[Job], world: World, forum: ForumExpected,
          sandbox: SandboxServer, kills: int, broker: redis.Redis) -> Verdict:
    verdict = Verdict()
    for job in jobs:
        _account(rt, job, forum, kills, verdict)
    _store(rt, jobs, world, forum, verdict)
    _leaks(rt, jobs, broker, verdict)
    _server_log(sandbox, forum, verdict)
    return verdict


def _account(rt: Runtime, job: Job, forum: ForumExpected, kills: int,
             verdict: Verdict) -> None:
    counts = rt.ledger.counts(job.job_id)
    spawned = sum(s["spawned"] for s in counts.values())
    ended = sum(s["done"] + s["skipped"] + s["gone"] + s["failed"] for s in counts.values())
    verdict.units += spawned
    state = rt.ledger.state(job.job_id)
    if spawned != ended or state not in (FINISHED, FINISHED_WITH_FAILURES):
        verdict.unaccounted += max(spawned - ended, 1)
        verdict.details.append(f"job {job.chain} {job.job_id}: {state}, {spawned} units, "
                               f"{ended} ended")
    for failure in rt.ledger.failures(job.job_id):
        if not _true(failure.url, failure.reason, forum, kills):
            verdict.unaccounted += 1
            verdict.details.append(f"job {job.chain}: {failure.step} {failure.params} failed: "
                                   f"{failure.reason}")


def _true(url: str, reason: str, forum: ForumExpected, kills: int) -> bool:
    """Whether a failure's reason is what happened."""
    if urlsplit(url).path in forum.failures:
        return True
    prefix = "PermanentError: poison unit: its worker died "
    if reason.startswith(prefix):
        return int(reason[len(prefix):].split()[0]) <= kills
    return False


def _store(rt: Runtime, jobs: list[Job], world: World, forum: ForumExpected,
           verdict: Verdict) -> None:
    want: dict[str, set[str]] = {c: set(k) for c, k in expected_keys(world).items()}
    for name, records in forum.records.items():
        want.setdefault(name, set()).update(str(key) for key in records)
    for collection, keys_wanted in sorted(want.items()):
        stored = Counter(str(r["key"]) for r in rt.store.read(collection))
        lost = keys_wanted - set(stored)
        strays = set(stored) - keys_wanted
        verdict.lost += len(lost)
        verdict.duplicate_items += sum(n - 1 for n in stored.values())
        if lost:
            verdict.details.append(f"lost {len(lost)} {collection}: {sorted(lost)[:5]}")
        if strays:
            verdict.unaccounted += len(strays)
            verdict.details.append(f"{len(strays)} {collection} stored that no site holds")
    demo_items = sum(len(k) for k in expected_keys(world).values())
    for job in jobs:
        if job.first and job.chain == "demo":
            counted = sum(s["items"] for s in rt.ledger.counts(job.job_id).values())
            if counted > demo_items:
                verdict.duplicate_items += counted - demo_items
                verdict.details.append(f"the demo crawl counted {counted} items of "
                                       f"{demo_items}")


def _leaks(rt: Runtime, jobs: list[Job], broker: redis.Redis, verdict: Verdict) -> None:
    deadline = time.monotonic() + SETTLE_S
    while True:
        found = _leftovers(rt, jobs, broker)
        if not found or time.monotonic() > deadline:
            break
        time.sleep(1.0)
    verdict.leaks = sum(found.values())
    verdict.details += [f"leak: {what} x{n}" for what, n in sorted(found.items())]


def _leftovers(rt: Runtime, jobs: list[Job], broker: redis.Redis) -> Counter[str]:
    found: Counter[str] = Counter()
    client = rt.redis
    for job in jobs:
        for part in JOB_LEFTOVERS:
            n = int(client.hlen(keys.job(job.job_id, part))) if part != "parked" else int(
                client.scard(keys.job(job.job_id, part)))
            if n:
                found[f"{job.chain} {part}"] += n
    for bucket in rt.limiter.buckets():
        held = int(rt.limiter.state(bucket).get("leases_held") or 0)
        if held:
            found[f"lease {bucket}"] += held
    for key in client.scan_iter(match="*lock*"):
        if client.ttl(key) == -1:
            found[f"lock without expiry {_text(key)}"] += 1
    for key in client.scan_iter(match="*:claim"):
        if client.ttl(key) == -1:
            found[f"claim without expiry {_text(key)}"] += 1
    unacked = int(broker.hlen("unacked"))
    if unacked:
        found["broker unacked"] += unacked
    for key in broker.scan_iter(_type="list"):
        name = _text(key)
        if not name.startswith("_kombu") and broker.llen(key):
            found[f"broker queue {name}"] += int(broker.llen(key))
    return found


def _server_log(sandbox: SandboxServer, forum: ForumExpected, verdict: Verdict) -> None:
    served = Counter(h.url for h in sandbox.hits() if h.status == 200 and h.delivered)
    verdict.executions = sum(served.values())
    verdict.duplicate_executions = sum(n - 1 for n in served.values() if n > 1)
    needed = [u for u in forum.urls if urlsplit(u).path not in forum.failures]
    unserved = [u for u in needed if _key(u) not in served]
    if unserved:
        verdict.unaccounted += len(unserved)
        verdict.details.append(f"{len(unserved)} forum pages never answered 200: "
                               f"{unserved[:3]}")


def _key(url: str) -> str:
    parts = urlsplit(url)
    return url_key(parts.path, dict(parse_qsl(parts.query)))


def _text(raw: Any) -> str:
    return raw.decode() if isinstance(raw, bytes) else str(raw)
