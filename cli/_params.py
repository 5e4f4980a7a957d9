"""``key=value`` arguments, as the commands take them: values read as JSON when they are."""

from __future__ import annotations

import json
from typing import Any


def parse_value(text: str, key: str = "value") -> Any:
    """``3`` -> 3, ``true`` -> True, ``{"a": 1}`` -> a dict; anything else stays a string,
    but for text that opens a JSON list or object and does not parse: it was meant as
    JSON, and a string would fail later, further from the typo."""
    try:
        return json.loads(text)
    except ValueError as exc:
        if text.lstrip()[:1] in ("[", "{"):
            raise SystemExit(f"{key}={text}: not valid JSON ({exc}); quote it whole, e.g. "
                             f"{key}='[1, 2]' or {key}='{{\"a\": 1}}'") from None
        return text


def parse_pairs(pairs: list[str], what: str = "param") -> dict[str, Any]:
    """``["page=2", "base_url=http://h"]`` -> a dict; a pair without ``=`` is refused."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"bad {what} {pair!r}: expected key=value (e.g. page=2)")
        out[key] = parse_value(value, key)
    return out
