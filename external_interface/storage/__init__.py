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
    """A stored record: names its collection and the fields that make its key.

        class Post(Item, collection="posts", key="id"):
            id: str
            title: str
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    collection: ClassVar[str]
    key_fields: ClassVar[tuple[str, ...]]

    def __init_subclass__(cls, *, collection: str | None = None,
                          key: str | tuple[str, ...] | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if collection is not None:
            cls.collection = collection
        if key is not None:
            cls.key_fields = (key,) if isinstance(key, str) else tuple(key)

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
