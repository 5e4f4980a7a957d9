"""MongoDB item store: one Mongo collection per item collection, one document per key.

For multi-host runs. A batch is one unordered ``bulk_write`` of upserts per collection,
so one bad document does not stop the others, and the failed ones are retried by
their index in the batch. The item key is the document's ``_id``: the ``_id`` index is
the unique index on the key, so two workers upserting one key converge on one
document, and no second index is needed. Documents read::

    {"_id": key, "data": {...}, "job_id": ..., "first_seen": date, "last_seen": date}

``first_seen`` is set on insert only (``$setOnInsert``), ``last_seen`` on every write.
Writes are journaled (``j=True``) unless the URL sets its own write concern, so a batch
is durable when ``upsert`` returns.

pymongo is optional (``pip install 'crawlchain[mongo]'``): it is imported when a store
is built, never when this module is imported. Build the store after the worker
forks (pymongo clients are not fork-safe).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from types import ModuleType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from exceptions import StorageUnavailable
from external_interface.storage import Item
from utils.urls import secret_free

if TYPE_CHECKING:
    from pymongo import MongoClient, UpdateOne
    from pymongo.errors import BulkWriteError
    from pymongo.write_concern import WriteConcern

DEFAULT_DATABASE = "crawlchain"
PARTIAL_RETRIES = 3


def import_pymongo() -> ModuleType:
    """pymongo, or an ImportError that says how to install it."""
    try:
        import pymongo
    except ImportError as exc:
        raise ImportError(
            "STORAGE_URL is a mongodb:// URL but pymongo is not installed: "
            "pip install 'crawlchain[mongo]' (or: pip install pymongo)"
        ) from exc
    return pymongo


class MongoStore:
    """Items in a MongoDB database; safe for many worker processes on many hosts."""

    def __init__(self, client: MongoClient[dict[str, Any]], database: str) -> None:
        pymongo = import_pymongo()
        self._client = client
        self._db = client.get_database(database, write_concern=_durable(pymongo, client))
        self._transient: tuple[type[Exception], ...] = (
            pymongo.errors.ConnectionFailure,  # includes server selection timeouts
            pymongo.errors.ExecutionTimeout,
            pymongo.errors.WriteConcernError,
        )
        self._bulk_write_error: type[BulkWriteError] = pymongo.errors.BulkWriteError
        self._update_one: type[UpdateOne] = pymongo.UpdateOne

    @classmethod
    def from_url(cls, url: str, *, server_selection_timeout_ms: int = 5000) -> MongoStore:
        """``mongodb://host/database?options`` (database defaults to ``crawlchain``).

        A short server selection timeout unless the URL sets one: a write to an
        unreachable server must fail fast with ``StorageUnavailable``, not hold a worker.
        """
        pymongo = import_pymongo()
        options: dict[str, Any] = {"tz_aware": True, "connect": False}
        if "serverselectiontimeoutms" not in urlsplit(url).query.lower():
            options["serverSelectionTimeoutMS"] = server_selection_timeout_ms
        client: MongoClient[dict[str, Any]] = pymongo.MongoClient(url, **options)
        return cls(client, client.get_default_database(default=DEFAULT_DATABASE).name)

    def upsert(self, job_id: str, items: Sequence[Item]) -> int:
        """One unordered bulk write per collection; durable (journaled) on return."""
        now = datetime.now(UTC)
        batches: dict[str, list[UpdateOne]] = {}
        for item in items:
            batches.setdefault(item.collection, []).append(self._update(job_id, item, now))
        try:
            for collection, requests in batches.items():
                self._bulk_write(collection, requests)
        except self._transient as exc:
            raise _unavailable(exc) from (exc if secret_free(exc) else None)
        return len(items)

    def count(self, collection: str) -> int:
        try:
            return int(self._db[collection].count_documents({}))
        except self._transient as exc:
            raise _unavailable(exc) from (exc if secret_free(exc) else None)

    def collections(self) -> list[str]:
        try:
            return sorted(self._db.list_collection_names())
        except self._transient as exc:
            raise _unavailable(exc) from (exc if secret_free(exc) else None)

    def read(self, collection: str, *, job_id: str | None = None,
             since: float | None = None) -> Iterator[dict[str, Any]]:
        """One record per key, sorted by key, from a server-side cursor (streamed)."""
        query: dict[str, Any] = {}
        if job_id is not None:
            query["job_id"] = job_id
        if since is not None:
            query["last_seen"] = {"$gte": datetime.fromtimestamp(since, UTC)}
        try:
            for doc in self._db[collection].find(query, sort=[("_id", 1)]):
                yield _record(doc)
        except self._transient as exc:
            raise _unavailable(exc) from (exc if secret_free(exc) else None)

    def close(self) -> None:
        self._client.close()

    def drop_database(self) -> None:
        """Delete every collection of this store's database (tests and benchmarks)."""
        self._client.drop_database(self._db.name)

    def _update(self, job_id: str, item: Item, now: datetime) -> UpdateOne:
        return self._update_one(
            {"_id": item.item_key()},
            {
                "$set": {"data": item.model_dump(mode="json"), "job_id": job_id, "last_seen": now},
                "$setOnInsert": {"first_seen": now},
            },
            upsert=True,
        )

    def _bulk_write(self, collection: str, requests: list[UpdateOne]) -> None:
        """Write all; retry the writes that failed, by their index, a few times.

        Concurrent upserts of one new key can fail with a duplicate key error on one
        side; the retry then finds the document and updates it.
        """
        pending = requests
        for _ in range(PARTIAL_RETRIES + 1):
            errors = self._write_errors(collection, pending)
            if not errors:
                return
            pending = [pending[error["index"]] for error in errors]
        raise StorageUnavailable(
            f"mongodb {collection}: {len(pending)} writes still failing after "
            f"{PARTIAL_RETRIES} retries, first: code {errors[0].get('code')}: "
            f"{errors[0].get('errmsg')}"
        )

    def _write_errors(self, collection: str, requests: list[UpdateOne]) -> list[dict[str, Any]]:
        """One unordered bulk write: the failed writes (with their ``index``), if any."""
        try:
            self._db[collection].bulk_write(requests, ordered=False)
        except self._bulk_write_error as exc:
            concern = exc.details.get("writeConcernErrors")
            if concern:  # applied, but not acknowledged as durable: rewrite it all later
                raise StorageUnavailable(
                    f"mongodb {collection}: write concern not met: {concern[0]}"
                ) from exc
            errors: list[dict[str, Any]] = exc.details["writeErrors"]
            return errors
        return []


def _durable(pymongo: ModuleType, client: MongoClient[dict[str, Any]]) -> WriteConcern:
    """Journaled writes, unless the URL chose a write concern of its own."""
    if client.write_concern.is_server_default:
        durable: WriteConcern = pymongo.WriteConcern(j=True)
        return durable
    return client.write_concern


def _record(doc: dict[str, Any]) -> dict[str, Any]:
    """A document in the shape every store reads: times as epoch seconds."""
    return {
        "key": doc["_id"],
        "data": doc["data"],
        "job_id": doc["job_id"],
        "first_seen": _epoch(doc["first_seen"]),
        "last_seen": _epoch(doc["last_seen"]),
    }


def _epoch(moment: datetime) -> float:
    """BSON dates come back naive (UTC) unless the client is ``tz_aware``."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _unavailable(exc: Exception) -> StorageUnavailable:
    """The driver's error as ``StorageUnavailable``, its text masked (a URI's password)."""
    return StorageUnavailable(f"mongodb: {type(exc).__name__}: {exc}")
