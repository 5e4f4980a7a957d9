"""The HTTP cache on local disk: one file per entry, written atomically.

A file is one JSON line (url, status, headers, encoding, elapsed, stored_at)
then the body bytes, under ``<dir>/<key[:2]>/<key>``. A write goes to a unique
temporary file in the same directory and is renamed over the entry
(``os.replace`` is atomic on POSIX), so any number of processes may write and
read the same entry: a reader opens the old file or the new one, never a mix.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from pathlib import Path

from external_interface.http import Response
from external_interface.http_cache import CachedResponse

FORMAT = 1


class FilesystemCache:
    """``CacheStorage`` in a directory (created on first write, not before)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def path(self, key: str) -> Path:
        if len(key) < 3 or not all(c in "0123456789abcdef" for c in key):
            raise ValueError(f"cache key {key!r} must be a hex fingerprint")
        return self.directory / key[:2] / key

    def get(self, key: str) -> CachedResponse | None:
        path = self.path(key)
        try:
            with path.open("rb") as file:
                head = json.loads(file.readline())
                body = file.read()
        except FileNotFoundError:
            return None
        except (OSError, ValueError):  # unreadable or another format: as if absent
            return None
        if head.get("format") != FORMAT:
            return None
        response = Response(head["url"], head["status"], head["headers"], body,
                            head["encoding"], head["elapsed_s"])
        return CachedResponse(response, head["stored_at"])

    def put(self, key: str, response: Response, stored_at: float) -> None:
        target = self.path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        head = {"format": FORMAT, "url": response.url, "status": response.status,
                "headers": dict(response.headers), "encoding": response.encoding,
                "elapsed_s": response.elapsed_s, "stored_at": stored_at}
        temporary = target.with_name(f".{key}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        try:
            with temporary.open("wb") as file:
                file.write(json.dumps(head).encode() + b"\n")
                file.write(response.body)
            os.replace(temporary, target)
        finally:
            with contextlib.suppress(FileNotFoundError):
                temporary.unlink()

    def delete(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path(key).unlink()
