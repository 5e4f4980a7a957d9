"""``key=value`` arguments, as the commands take them: values read as JSON when they are."""

from __future__ import annotations

import json
from typing import Any


def parse_value(text: str) -> Any:
    """``3`` -> 3, ``true`` -> True, ``{"a": 1}`` -> a dict; anything else stays a string."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_pairs(pairs: list[str], what: str = "param") -> dict[str, Any]:
    """``["page=2", "base_url=http://h"]`` -> a dict; a pair without ``=`` is refused."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"bad {what} {pair!r}: expected key=value")
        out[key] = parse_value(value)
    return out
