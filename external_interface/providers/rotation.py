"""A unit's rotation state, carried in its message: rotations spent, waits, exits to avoid.

It travels in the unit dict (``unit["rotation"]``) that a rotation or a wait
republishes, so any worker that takes the unit next knows what this unit already
burnt: a proxy that banned it is never handed back to it. Unit ids come from the
step and params only, so the extra key changes no id.
"""

from __future__ import annotations

from typing import Any

from chains.engine import Unit


def state(unit: Unit) -> dict[str, Any]:
    return dict(unit.get("rotation") or {})


def rotations(unit: Unit) -> int:
    return int(state(unit).get("count", 0))


def waits(unit: Unit) -> int:
    return int(state(unit).get("waits", 0))


def avoided(unit: Unit) -> list[str]:
    """Proxies (``host:port``) that banned this unit."""
    return [str(p) for p in state(unit).get("avoid", [])]


def rotated(unit: Unit, avoid: str | None) -> int:
    """Count one rotation (and the proxy to avoid from now on); returns the count."""
    now = state(unit)
    now["count"] = int(now.get("count", 0)) + 1
    if avoid is not None and avoid not in now.setdefault("avoid", []):
        now["avoid"] = [*now["avoid"], avoid]
    unit["rotation"] = now
    return int(now["count"])


def waited(unit: Unit) -> int:
    """Count one wait for an empty pool; returns the count."""
    now = state(unit)
    now["waits"] = int(now.get("waits", 0)) + 1
    unit["rotation"] = now
    return int(now["waits"])
