"""Where proxies come from: a static list, a file, an HTTP endpoint (a vendor's API).

Every source answers the same question, "which proxies now?", and passes the same
contract (``tests/external_interface/proxy/test_contract.py``). A source is read
again every ``PROXY_REFRESH_S`` by one process of the cluster; what it lists is
added to the shared pool (a retired proxy stays retired).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import requests

from utils.urls import redact_url


class ProxySourceError(RuntimeError):
    """The source cannot say now (file missing, endpoint down, unreadable answer)."""


@runtime_checkable
class ProxySource(Protocol):
    def proxies(self) -> list[str]:
        """Proxy URLs (``http://user:pw@host:port``), de-duplicated, in the source's order.
        Raises ``ProxySourceError`` when the source cannot be read."""
        ...

    def describe(self) -> str:
        """What the source is, for logs, with credentials masked."""
        ...


def parse_lines(text: str) -> list[str]:
    """One proxy a line; blank lines and ``#`` comments skipped; duplicates dropped."""
    lines = (line.split("#", 1)[0].strip() for line in text.splitlines())
    return list(dict.fromkeys(line for line in lines if line))


class StaticSource:
    """A fixed list, from configuration (``PROXY_LIST``)."""

    def __init__(self, urls: Sequence[str]) -> None:
        self.urls = list(dict.fromkeys(urls))

    def proxies(self) -> list[str]:
        return list(self.urls)

    def describe(self) -> str:
        return f"static list of {len(self.urls)}"


class FileSource:
    """A text file, one proxy a line (``PROXY_FILE``), read again on every refresh."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def proxies(self) -> list[str]:
        try:
            return parse_lines(self.path.read_text())
        except OSError as exc:
            raise ProxySourceError(f"cannot read {self.path}: {exc}") from exc

    def describe(self) -> str:
        return f"file {self.path}"


class HttpSource:
    """An endpoint answering a JSON list, ``{"proxies": [...]}``, or text one a line
    (``PROXY_ENDPOINT``): what proxy vendors' APIs return."""

    def __init__(self, url: str, timeout_s: float = 10.0) -> None:
        self.url = url
        self.timeout_s = timeout_s

    def proxies(self) -> list[str]:
        try:
            response = requests.get(self.url, timeout=self.timeout_s)
            response.raise_for_status()
        except requests.RequestException as exc:
            raise ProxySourceError(f"{self.describe()} failed: {type(exc).__name__}") from None
        return self._parse(response.text)

    def _parse(self, text: str) -> list[str]:
        try:
            data = json.loads(text)
        except ValueError:
            return parse_lines(text)
        listed = data.get("proxies") if isinstance(data, dict) else data
        if not isinstance(listed, list) or not all(isinstance(p, str) for p in listed):
            raise ProxySourceError(f"{self.describe()} answered JSON that is not a proxy list")
        return list(dict.fromkeys(p.strip() for p in listed if p.strip()))

    def describe(self) -> str:
        return f"endpoint {redact_url(self.url)}"


class Sources:
    """Several sources as one: their lists joined; one failing source fails the read
    (a partial list would look like proxies that vanished)."""

    def __init__(self, sources: Sequence[ProxySource]) -> None:
        self.sources = list(sources)

    def proxies(self) -> list[str]:
        return list(dict.fromkeys(p for s in self.sources for p in s.proxies()))

    def describe(self) -> str:
        return " + ".join(s.describe() for s in self.sources)
