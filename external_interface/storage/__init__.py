"""Item storage: one Protocol, backends chosen by ``STORAGE_URL``.

Every backend upserts by ``(collection, key)``: a unit executed twice leaves one
record. Writes are synchronous and durable when ``upsert`` returns, so the base
task acks a message only after its items are safe.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, ClassVar, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict


class Item(BaseModel):
    """An Output model: names its collection and the fields that make its key."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    collection: ClassVar[str]
    key_fields: ClassVar[tuple[str, ...]]

    def item_key(self) -> str:
        """The natural key, stable across runs: the key fields joined by ``|``."""
        return "|".join(str(getattr(self, name)) for name in self.key_fields)


@runtime_checkable
class ItemStore(Protocol):
    """Where items go. Implementations must be safe to call from one thread at a time."""

    def upsert(self, job_id: str, items: Sequence[Item]) -> int:
        """Insert or update each item by ``(collection, key)``; durable on return.

        Keeps first-seen and last-seen times. Returns how many items were written.
        Raises ``StorageUnavailable`` when the store cannot take the write now.
        """
        ...

    def count(self, collection: str) -> int:
        """How many distinct keys the collection holds."""
        ...

    def collections(self) -> list[str]:
        """Names of the collections that hold items, sorted."""
        ...

    def read(self, collection: str, *, job_id: str | None = None,
             since: float | None = None) -> Iterator[dict[str, Any]]:
        """The collection's records, one per key, sorted by key, streamed.

        Each is ``key``, ``data``, ``job_id``, ``first_seen``, ``last_seen`` (epoch
        seconds). ``job_id`` keeps the records that job wrote last; ``since`` those last
        seen at or after it. Memory stays bounded whatever the collection's size (a
        sink that answers reads with one JSON document excepted), and a write may land
        while a read is under way without breaking either.
        """
        ...

    def close(self) -> None:
        """Release connections and files."""
        ...


def store_from_url(url: str) -> ItemStore:
    """Build the backend named by the URL's scheme; drivers are imported only when chosen.

    ``sqlite:///path.db`` (default), ``jsonl:///directory``, ``http(s)://sink/endpoint``,
    ``mongodb://host/database`` (needs the ``mongo`` extra),
    ``postgresql://host/database?schema=crawlchain`` (needs the ``postgres`` extra).
    """
    scheme = url.split(":", 1)[0].lower()
    if scheme == "sqlite":
        from external_interface.storage.sqlite import SQLiteStore

        return SQLiteStore.from_url(url)
    if scheme == "jsonl":
        from external_interface.storage.jsonl import JsonlStore

        return JsonlStore.from_url(url)
    if scheme in ("http", "https"):
        from external_interface.storage.http_sink import HttpSinkStore

        return HttpSinkStore.from_url(url)
    if scheme in ("mongodb", "mongodb+srv"):
        from external_interface.storage.mongo import MongoStore

        return MongoStore.from_url(url)
    if scheme in ("postgresql", "postgres"):
        from external_interface.storage.postgres import PostgresStore

        return PostgresStore.from_url(url)
    raise ValueError(
        f"STORAGE_URL: unknown scheme {scheme!r} in {url!r} "
        "(known: sqlite, jsonl, http, https, mongodb, mongodb+srv, postgresql)"
    )
