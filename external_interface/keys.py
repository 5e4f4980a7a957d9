"""Every Redis key pattern of the state plane, in one table.

A job's keys share the hash tag ``{job_id}`` so that Redis Cluster keeps them on
one slot: the ledger's Lua scripts touch several of them atomically.
"""

from __future__ import annotations

PREFIX = "cc"


def job(job_id: str, part: str) -> str:
    """A key of one job: ``meta``, ``units``, ``counts``, ``failed``, ``deliveries``."""
    return f"{PREFIX}:job:{{{job_id}}}:{part}"


def tree(chain: str) -> str:
    """What each unit of a chain spawned at its last fetch (hash: unit id -> children),
    kept across jobs so a recrawl that skips a fresh unit still reaches its children."""
    return f"{PREFIX}:tree:{{{chain}}}"


JOB_INDEX = f"{PREFIX}:jobs"  # sorted set: job id -> creation time
REVIVER_LOCK = f"{PREFIX}:reviver:lock"  # held by the one worker sweeping for lost units
WORKERS = f"{PREFIX}:workers"  # hash: worker name -> its queues and last heartbeat (JSON)


def dedup_bucket(namespace: str, bucket: int) -> str:
    """One bucket hash of the dedup store; the tag spreads buckets over a cluster."""
    return f"{PREFIX}:dedup:{{{namespace}:{bucket}}}"


# -- monitor (appended) -------------------------------------------------------
METRICS_TAG = "{metrics}"  # one slot for every cluster-wide counter hash


def metrics(family: str) -> str:
    """A cluster-wide counter hash of ``monitor.metrics``: ``units``, ``errors``, ``status``,
    ``bytes``, ``items``, ``fetch_s``, ``parse_s``; fields are ``site.platform.step|label``."""
    return f"{PREFIX}:metrics:{METRICS_TAG}:{family}"


def job_pace(job_id: str) -> str:
    """Units a job finished per 5-second bucket (hash: bucket -> count), for "throughput now"."""
    return job(job_id, "pace")


def job_life(job_id: str) -> str:
    """Units a job finished per minute over its whole life (hash: minute -> count), for the
    console's throughput chart."""
    return job(job_id, "life")


# -- politeness (appended) ----------------------------------------------------
def polite(bucket: str, part: str) -> str:
    """A key of one politeness bucket: ``tat``, ``leases``, ``cooldown``, ``state``, and
    ``throttle`` (the adaptive controller's hash, ``politeness.redis_throttle``).

    The hash tag ``{bucket}`` keeps a bucket's keys on one Redis Cluster slot, so
    one Lua script can read and write all of them atomically.
    """
    return f"{PREFIX}:polite:{{{bucket}}}:{part}"


POLITE_INDEX = f"{PREFIX}:polite:buckets"  # sorted set: bucket -> last time a worker used it
THROTTLE_INDEX = f"{PREFIX}:polite:throttled"  # sorted set: key -> last time it was observed


# -- resource pools (appended) ------------------------------------------------
def pool(kind: str, scope: str, part: str) -> str:
    """A key of one resource pool (``kind`` proxy, cookie or device; ``scope`` a site, or
    ``*`` for the cluster's one proxy pool): ``ready`` (sorted set: member -> when it may be
    leased again, µs), ``values`` (hash: member -> value), ``health`` (hash: member ->
    score), ``retired`` (sorted set: member -> when), ``refill`` (the lock of the one
    refill in flight), ``turn`` (counter: which account logs in next), ``refreshed`` (the
    lock of the last source refresh). The hash tag keeps a pool on one cluster slot."""
    return f"{PREFIX}:pool:{{{kind}:{scope}}}:{part}"


def user_agents(family: str) -> str:
    """The cluster's user agents of one family (list), for ``user_agent.RedisUserAgents``."""
    return f"{PREFIX}:ua:{family}"


# -- robots.txt (appended) ----------------------------------------------------
def robots(origin: str) -> str:
    """One origin's robots.txt record (hash: kind, status, times, note, zlib body), with a
    TTL; ``origin`` is ``scheme://host[:port]``."""
    return f"{PREFIX}:robots:{origin}"


def robots_claim(origin: str) -> str:
    """The claim of the one process fetching an origin's robots.txt now."""
    return f"{PREFIX}:robots:{origin}:claim"
