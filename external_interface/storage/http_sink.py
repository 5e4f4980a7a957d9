"""HTTP sink: POSTs each batch as JSON to a URL, with one idempotency key per batch.

For crawls whose items go to someone else's service (an ingestion API, the HTTP front
of a queue). The sink owns deduplication: the same job writing the same items always
sends the same ``Idempotency-Key``, so a batch re-sent after a timeout, or by a unit
re-run after its worker died, is recognised by the sink and stored once.

What a sink must accept::

    POST <url>
    Content-Type: application/json
    Idempotency-Key: <64 hex digits>

    {"idempotency_key": "<64 hex digits>",
     "items": [{"collection": ..., "key": ..., "data": {...}, "job_id": ..., "seen": <epoch s>}]}

Any 2xx means the batch is durable. A status the fetch's table
(``external_interface.statuses``) calls transient (408, 425, 429, 5xx but 501 and
505) and connection errors are retried with exponential backoff and jitter
(``Retry-After`` honoured up to the cap) within ``deadline_s``; then
``StorageUnavailable``, and the task retries the unit later. Any other status is
``ClientError``: the sink rejects the batch itself.

Credentials in the URL (``https://user:token@host/path``) go to the sink as Basic
auth and nowhere else: every message and error names the URL with them masked.

Reading is optional. A sink that also answers ``GET <url>?collection=<name>`` with
``{"records": [{"key", "data", "job_id", "first_seen", "last_seen"}, ...]}`` (one record
per key) supports ``count``, ``read`` and the export; a sink answering that GET with
404, 405 or 501 is write-only, and ``count``/``read`` raise ``TypeError``.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import requests

from exceptions import ClientError, StorageUnavailable, TransientError
from external_interface.statuses import parse_retry_after, rule_for
from external_interface.storage import Item
from utils.urls import redact_text, redact_url, secret_free

WRITE_ONLY_STATUSES = frozenset({404, 405, 501})
RETRYABLE_ERRORS = (
    requests.ConnectionError,
    requests.Timeout,
    requests.exceptions.ChunkedEncodingError,
)


class _Failure(NamedTuple):
    """Why one POST did not land, and the sink's advice on when to try again."""

    reason: str
    status: int | None = None
    retry_after: float | None = None


def batch_key(job_id: str, items: Sequence[Item]) -> str:
    """The batch's idempotency key: a hash of the job id and the sorted items.

    Times are left out and the items are sorted, so a unit that runs again and yields
    the same items in any order sends the same key.
    """
    entries = sorted((i.collection, i.item_key(), i.model_dump_json()) for i in items)
    payload = json.dumps([job_id, entries], separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()


class HttpSinkStore:
    """Items POSTed to an HTTP endpoint in batches; reads only if the sink offers them."""

    def __init__(
        self,
        url: str,
        *,
        session: requests.Session | None = None,
        attempts: int = 4,
        backoff_s: float = 0.25,
        backoff_max_s: float = 4.0,
        deadline_s: float = 30.0,
        timeout: tuple[float, float] = (3.05, 10.0),
    ) -> None:
        self.url = url
        self.shown = redact_url(url)  # what messages name: user:token@ masked
        self.attempts = attempts
        self.backoff_s = backoff_s
        self.backoff_max_s = backoff_max_s
        self.deadline_s = deadline_s
        self.timeout = timeout
        self._session = session or requests.Session()

    @classmethod
    def from_url(cls, url: str) -> HttpSinkStore:
        """``http://host/path`` or ``https://user:token@host/path``: the POST endpoint."""
        return cls(url)

    def upsert(self, job_id: str, items: Sequence[Item]) -> int:
        """POST the batch; retried within ``deadline_s``, then ``StorageUnavailable``."""
        if not items:
            return 0
        key = batch_key(job_id, items)
        now = time.time()
        body = json.dumps(
            {"idempotency_key": key, "items": [_entry(job_id, i, now) for i in items]}
        )
        headers = {"Content-Type": "application/json", "Idempotency-Key": key}
        self._post_with_retries(body.encode(), headers)
        return len(items)

    def count(self, collection: str) -> int:
        return len(self._records(collection))

    def collections(self) -> list[str]:
        """The sink protocol reads by collection name only; it has no listing."""
        raise TypeError(f"http sink {self.shown}: cannot list collections; name one to export")

    def read(self, collection: str, *, job_id: str | None = None,
             since: float | None = None) -> Iterator[dict[str, Any]]:
        """The sink answers with one document: held whole, then filtered here."""
        return iter([r for r in self._records(collection)
                     if (job_id is None or r["job_id"] == job_id)
                     and (since is None or r["last_seen"] >= since)])

    def close(self) -> None:
        self._session.close()

    def _post_with_retries(self, body: bytes, headers: dict[str, str]) -> None:
        """Bounded in time and attempts: long outages are the task's retry's business."""
        deadline = time.monotonic() + self.deadline_s
        failure = self._post_once(body, headers)
        tries = 1
        while failure is not None and tries < self.attempts:
            delay = self._delay(tries, failure.retry_after)
            if time.monotonic() + delay >= deadline:
                break
            time.sleep(delay)
            failure = self._post_once(body, headers)
            tries += 1
        if failure is not None:
            raise StorageUnavailable(
                f"http sink {self.shown}: {failure.reason} (gave up after {tries} attempts)",
                url=self.shown,
                status=failure.status,
            )

    def _post_once(self, body: bytes, headers: dict[str, str]) -> _Failure | None:
        """One POST: ``None`` if it landed, the failure if it is worth retrying."""
        try:
            response = self._session.post(
                self.url, data=body, headers=headers, timeout=self.timeout
            )
        except RETRYABLE_ERRORS as exc:
            return _Failure(redact_text(f"{type(exc).__name__}: {exc}"))
        status = response.status_code
        if response.ok:
            return None
        rule = rule_for(status)
        if rule is not None and issubclass(rule.error, TransientError):
            retry_after = parse_retry_after(response.headers.get("Retry-After"))
            return _Failure(f"HTTP {status}", status, retry_after)
        raise ClientError(
            f"http sink {self.shown} rejected the batch: HTTP {status} {response.text[:200]}",
            url=self.shown,
            status=status,
        )

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        """Exponential backoff with jitter, at least the sink's ``Retry-After``; capped."""
        backoff = self.backoff_s * 2 ** (attempt - 1) * random.uniform(0.5, 1.0)
        return float(min(self.backoff_max_s, max(backoff, retry_after or 0.0)))

    def _records(self, collection: str) -> list[dict[str, Any]]:
        """The optional read endpoint; see the module docstring for its contract."""
        try:
            response = self._session.get(
                self.url, params={"collection": collection}, timeout=self.timeout
            )
        except RETRYABLE_ERRORS as exc:
            raise StorageUnavailable(f"http sink {self.shown}: {type(exc).__name__}: {exc}",
                                     url=self.shown) from (exc if secret_free(exc) else None)
        if response.status_code in WRITE_ONLY_STATUSES:
            raise TypeError(
                f"http sink {self.shown} is write-only (GET answered {response.status_code}): "
                "read the items where the sink stores them"
            )
        if not response.ok:
            raise StorageUnavailable(
                f"http sink {self.shown}: GET answered HTTP {response.status_code}",
                url=self.shown,
                status=response.status_code,
            )
        records: list[dict[str, Any]] = response.json()["records"]
        return records


def _entry(job_id: str, item: Item, now: float) -> dict[str, Any]:
    """One item as the sink receives it."""
    return {
        "collection": item.collection,
        "key": item.item_key(),
        "data": item.model_dump(mode="json"),
        "job_id": job_id,
        "seen": now,
    }

