"""Recrawl-aware dedup: was this key crawled, when, and has its content changed?

The base task asks ``store.seen(key)`` and ``policy.decide(seen, now)`` before a
fetch, calls ``store.changed(key, content_hash(...))`` to count an unchanged
page, and ``store.mark(key, content_hash)`` only after the items are saved: a
unit that fails after its fetch is never marked, so its retry fetches again.

Keys are fingerprints from ``utils.fingerprint``. Times are whole seconds since
the Unix epoch. A store may keep both at reduced precision; ``Seen`` says what
came back.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Literal, NamedTuple, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

Decision = Literal["fetch", "skip"]


class Seen(NamedTuple):
    """What a store remembers of a key.

    Only the last-seen time is kept, not the first: the 8-byte budget per entry
    leaves no room for a second timestamp (see ``redis_buckets``), and the item
    store already keeps first-seen per item.
    """

    last_seen: int
    """When the key was last marked, seconds since the epoch, rounded down."""
    content_hash: int
    """The stored bits of the content hash (a store may keep only the low bits)."""


@runtime_checkable
class DedupStore(Protocol):
    """A key -> (last-seen time, content hash) map sized for billions of keys.

    Answers may err only towards "fetch": a key can be forgotten (and crawled
    again) but a never-marked key is reported seen only with the small false
    duplicate probability the backend documents. Raises ``redis.RedisError``
    when the server is unreachable.
    """

    def seen(self, key: bytes) -> Seen | None:
        """What was marked for ``key``, or None. One read: atomic."""
        ...

    def seen_many(self, keys: Sequence[bytes]) -> list[Seen | None]:
        """``seen`` for each key, in order, in few round trips (pipelined or scripted).

        Each answer is atomic; whether the whole batch is depends on the backend.
        """
        ...

    def mark(self, key: bytes, content_hash: int, when: int | None = None) -> None:
        """Record ``key`` as crawled at ``when`` (default now) with this content. Atomic."""
        ...

    def mark_many(self, entries: Iterable[tuple[bytes, int]], when: int | None = None) -> None:
        """``mark`` for each ``(key, content_hash)`` in few round trips; each mark is atomic."""
        ...

    def changed(self, key: bytes, content_hash: int) -> bool:
        """True unless ``key`` was marked with this same content hash. One read."""
        ...


class RecrawlPolicy(BaseModel):
    """When a chain step fetches a key again: after ``ttl_s``, or always if ``volatile``.

    Volatile pages (feeds, first pages of lists) change under the same URL, so
    dedup would hide new content; they are fetched every time. Which unit is a
    first or last page is the caller's to say (``first_page_volatile``,
    ``last_page_volatile``): ``decide`` sees only the stored answer and the time.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    ttl_s: int = Field(default=86_400, ge=0, description="Skip a key seen this recently.")
    volatile: bool = Field(default=False, description="Fetch always, whatever was seen.")
    first_page_volatile: bool = Field(
        default=False, description="Treat the first page of a paged list as volatile."
    )
    last_page_volatile: bool = Field(
        default=False, description="Treat the last page of a paged list as volatile (where "
        "new rows land): a page that had no next page when it was last fetched."
    )

    def decide(self, seen: Seen | None, now: int) -> Decision:
        """``skip`` only for a non-volatile key last seen less than ``ttl_s`` ago."""
        if self.volatile or seen is None:
            return "fetch"
        return "skip" if now - seen.last_seen < self.ttl_s else "fetch"


def content_hash(data: bytes | str) -> int:
    """A 64-bit hash of a page's meaningful content; stores keep its low bits."""
    raw = data.encode() if isinstance(data, str) else data
    return int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "big")
