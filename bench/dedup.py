"""Benchmark the dedup store against a plain Redis SET of SHA-1 fingerprints.

    python -m bench.dedup --entries 10000000 --json [--redis-socket PATH]

Both stores get the same keys (SHA-1 digests of counters, as a crawler's
fingerprints are) in the same run: our store the raw digest, the peer the hex
digest, as scrapy-redis's ``RFPDupeFilter`` SADDs it. Memory is the growth of
``INFO memory`` ``used_memory`` across the marks; throughputs time only the
store calls, in batches of ``--batch``, not the key generation; the checks of
both stores alternate batch by batch.
``false_duplicate_rate`` checks ``--probes`` keys never inserted;
``forgotten_rate`` is the share of inserted keys (a spread sample) no longer
found because a full sub-bucket replaced them. Without ``--redis-socket`` the
bench runs its own server in a temporary directory with AOF off (it measures
memory, not disk) and stops it at the end. The last line is the JSON result.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import redis

from bench import report
from external_interface import keys
from external_interface.dedup.redis_buckets import RedisBucketStore
from ops.embedded_redis import scratch_server


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark once and print the figures."""
    args = parse_args(argv)
    with scratch_server(args.redis_socket, "bench-dedup-") as socket, \
            redis.Redis(unix_socket_path=socket) as client:
        result = run(client, args.entries, args.probes, args.batch)
    report(result, args.json)
    return 0


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(prog="python -m bench.dedup", description=__doc__)
    parser.add_argument("--entries", type=int, default=1_000_000, help="keys to mark")
    parser.add_argument("--probes", type=int, default=1_000_000, help="never-inserted keys")
    parser.add_argument("--batch", type=int, default=10_000, help="keys per store call")
    parser.add_argument("--redis-socket", help="use this server instead of starting one")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    return parser.parse_args(argv)


def run(client: redis.Redis, entries: int, probes: int, batch: int) -> dict[str, Any]:
    """Both stores on the same keys; our figures at the top level, the SET's under ``peer``."""
    run_id = uuid.uuid4().hex[:8]
    namespace, peer_key = f"bench-{run_id}", f"{keys.PREFIX}:bench:{run_id}:peer"
    try:
        store = RedisBucketStore.from_settings(client, namespace, entries)
        ours, peer = buckets_side(store), set_side(client, peer_key)
        for side in (ours, peer):
            mark_all(client, side, entries, batch)
        log("checking both, batch by batch in turn")
        check_all((ours, peer), sample(entries, probes), batch, "present")
        check_all((ours, peer), range(entries, entries + probes), batch, "absent")
    finally:
        drop(client, namespace, peer_key)
    return {
        "entries": entries,
        **ours.figures(),
        "layout": vars(store.layout),
        "peer": peer.figures(),
    }


@dataclass
class Side:
    """One store under test: how it makes keys from ids, marks and checks them; its tallies."""

    name: str
    make: Callable[[range], Sequence[Any]]
    mark: Callable[[Sequence[Any]], object]
    check: Callable[[Sequence[Any]], Sequence[object]]
    entries: int = 0
    grown: int = 0
    mark_s: float = 0.0
    asked: dict[str, int] = field(default_factory=lambda: {"present": 0, "absent": 0})
    found: dict[str, int] = field(default_factory=lambda: {"present": 0, "absent": 0})
    check_s: float = 0.0

    def figures(self) -> dict[str, Any]:
        """The JSON figures."""
        asked = self.asked["present"] + self.asked["absent"]
        return {
            "bytes_per_entry": round(self.grown / self.entries, 3),
            "mark_ops_per_s": round(self.entries / self.mark_s),
            "check_ops_per_s": round(asked / self.check_s),
            "false_duplicate_rate": self.found["absent"] / self.asked["absent"],
            "forgotten_rate": round(1 - self.found["present"] / self.asked["present"], 6),
        }


def buckets_side(store: RedisBucketStore) -> Side:
    """Our store, given raw SHA-1 digests."""
    return Side("buckets", digests, lambda ks: store.mark_many((k, 1) for k in ks), store.seen_many)


def set_side(client: redis.Redis, set_key: str) -> Side:
    """The scrapy-redis way: SADD and SISMEMBER of hex SHA-1 fingerprints."""
    return Side(
        "peer",
        hexdigests,
        lambda ks: pipelined(client, "SADD", set_key, ks),
        lambda ks: pipelined(client, "SISMEMBER", set_key, ks),
    )


def mark_all(client: redis.Redis, side: Side, entries: int, batch: int) -> None:
    """Mark ids ``0..entries``, timing only the store calls; memory is the server's growth."""
    log(f"{side.name}: marking {entries} keys")
    before = used_memory(client)
    for start in range(0, entries, batch):
        ks = side.make(range(start, min(entries, start + batch)))
        began = time.perf_counter()
        side.mark(ks)
        side.mark_s += time.perf_counter() - began
    side.grown, side.entries = used_memory(client) - before, entries


def check_all(sides: Sequence[Side], ids: range, batch: int, kind: str) -> None:
    """Check ``ids`` (``kind``: present or absent) on every side, alternating per batch.

    Alternating puts both stores under the same machine load: on a shared
    two-core box, load from other work shifts a one-after-the-other comparison.
    """
    for start in range(0, len(ids), batch):
        for side in sides:
            ks = side.make(ids[start : start + batch])
            began = time.perf_counter()
            answers = side.check(ks)
            side.check_s += time.perf_counter() - began
            side.asked[kind] += len(ks)
            side.found[kind] += sum(1 for answer in answers if answer)


def pipelined(client: redis.Redis, command: str, key: str, members: Sequence[str]) -> list[Any]:
    """One command per member, in one pipeline."""
    pipe = client.pipeline(transaction=False)
    for member in members:
        pipe.execute_command(command, key, member)  # type: ignore[no-untyped-call]
    return pipe.execute()


def sample(entries: int, probes: int) -> range:
    """Up to ``probes`` inserted ids spread over the whole insertion order."""
    return range(0, entries, max(1, entries // probes))


def digests(ids: range) -> list[bytes]:
    """SHA-1 fingerprints of counters: what our store is given."""
    return [hashlib.sha1(i.to_bytes(8, "big")).digest() for i in ids]


def hexdigests(ids: range) -> list[str]:
    """The same fingerprints as scrapy-redis stores them."""
    return [hashlib.sha1(i.to_bytes(8, "big")).hexdigest() for i in ids]


def used_memory(client: redis.Redis) -> int:
    """The server's allocator total, bytes."""
    return int(client.info("memory")["used_memory"])


def drop(client: redis.Redis, namespace: str, peer_key: str) -> None:
    """Delete what the run wrote, for a shared server."""
    client.unlink(peer_key)
    pattern = keys.dedup_bucket(namespace, 0).replace(":0}", ":*}")
    for chunk in _chunks(client.scan_iter(match=pattern, count=1000), 1000):
        client.unlink(*chunk)


def _chunks(items: Iterator[Any], size: int) -> Iterator[list[Any]]:
    """Lists of up to ``size`` items."""
    chunk: list[Any] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def log(message: str) -> None:
    """Progress on stderr, so stdout stays the result."""
    print(f"[bench.dedup {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
