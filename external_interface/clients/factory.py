"""The fetch clients settings name, each built on first use.

    clients = Clients.from_settings(settings.fetch)
    clients.get("http")            # built now; the same one on every later call
    clients.get("impersonate")     # curl_cffi is imported here, not before

One SSRF guard serves every client of a process (``FETCH_SSRF_GUARD``,
``FETCH_SSRF_ALLOW``). A worker that never fetches with ``impersonate`` never
imports curl_cffi.
"""

from __future__ import annotations

import threading

from config import BrowserSettings, FetchSettings
from external_interface.clients import FetchClient, known_client
from external_interface.clients.http import HttpClient
from external_interface.url_guard import UrlGuard


def guard_from_settings(settings: FetchSettings) -> UrlGuard | None:
    """The SSRF guard the settings ask for (None: off)."""
    return UrlGuard(settings.ssrf_allow) if settings.ssrf_guard else None


def build_client(name: str, settings: FetchSettings, guard: UrlGuard | None = None,
                 browser: BrowserSettings | None = None) -> FetchClient:
    """The client called ``name``; ``ValueError`` naming the known ones for another."""
    known_client(name, "fetch")
    if name == "browser":
        from external_interface.clients.browser import BrowserClient

        return BrowserClient(settings, browser or BrowserSettings(), guard)
    if name == "impersonate":
        from external_interface.clients.impersonate import ImpersonateClient

        return ImpersonateClient(settings, guard)
    return HttpClient(settings, guard)


class Clients:
    """This process's fetch clients by name, built on first use and kept."""

    def __init__(self, settings: FetchSettings, guard: UrlGuard | None = None,
                 browser: BrowserSettings | None = None) -> None:
        self.settings = settings
        self.guard = guard
        self.browser = browser
        self._built: dict[str, FetchClient] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: FetchSettings,
                      browser: BrowserSettings | None = None) -> Clients:
        return cls(settings, guard_from_settings(settings), browser)

    def get(self, name: str) -> FetchClient:
        """The client called ``name`` (``ValueError`` for an unknown one)."""
        found = self._built.get(name)
        if found is None:
            with self._lock:
                found = self._built.get(name)
                if found is None:
                    found = self._built[name] = build_client(name, self.settings, self.guard,
                                                              self.browser)
        return found

    def close(self) -> None:
        for client in list(self._built.values()):
            client.close()
