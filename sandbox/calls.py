"""What the sandbox's views see of a request, and what they answer.

The HTTP handler builds a ``Call`` from the socket (the client address is the
exit the site sees); views and defences return an ``Answer``. Tests call
``Site.answer(Call(...))`` directly, without sockets.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

HTML = "text/html; charset=utf-8"
JSON = "application/json"


@dataclass(frozen=True)
class Call:
    """One request: path, query, and what the defences look at. Header names lower-case."""

    path: str
    query: Mapping[str, str] = field(default_factory=dict)
    method: str = "GET"
    client: str = "127.0.0.1"
    headers: Mapping[str, str] = field(default_factory=dict)
    cookies: Mapping[str, str] = field(default_factory=dict)
    form: Mapping[str, str] = field(default_factory=dict)

    def header(self, name: str) -> str:
        return self.headers.get(name.lower(), "")


@dataclass(frozen=True)
class Answer:
    """A reply: status, content type, body and any extra headers (Set-Cookie, Retry-After)."""

    status: int
    content_type: str
    body: bytes
    headers: tuple[tuple[str, str], ...] = ()

    def has_header(self, name: str) -> bool:
        return any(k.lower() == name.lower() for k, _ in self.headers)


def json_answer(status: int, payload: dict[str, Any],
                headers: tuple[tuple[str, str], ...] = ()) -> Answer:
    return Answer(status, JSON, json.dumps(payload).encode(), headers)
